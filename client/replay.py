"""`parley replay ID`: replay an episode or a whole experiment from its ledger of model calls on a
local or remote Parley, with no model asked, show its progress, and say whether it matched.

Exit status: 0 when the replay matched its source (transcript and scores, turn by turn), 1 when it
did not (the first divergence is printed), 2 on an error, 130 after Ctrl-C (the replay keeps
running on the server).
"""

import argparse
import asyncio
from typing import Any

from parley.client.command import CommandError, add_server_options, run_command
from parley.client.experiment import DETACHED, Remote, follow, user_errors

MATCHED, DIVERGED = 0, 1
POLL_SECONDS = 0.5

IS_EXPERIMENT = "query($id: ID!) { experiment(id: $id) { id } }"
REPLAY_EXPERIMENT = """
mutation($id: ID!) {
  replayExperiment(input: {id: $id}) {
    experiment { id name slotCount }
    changed
    userErrors { field message code }
  }
}"""
REPLAY_EPISODE = """
mutation($id: ID!) {
  replayEpisode(input: {id: $id}) {
    episode { id }
    userErrors { field message code }
  }
}"""
EXPERIMENT_CHECK = """
query($id: ID!) {
  experiment(id: $id) { replay { matched checked mismatched firstDivergence } }
}"""
EPISODE_STATE = """
query($id: ID!) {
  episode(id: $id) {
    status progress { turn maxTurns }
    replay { matched code turnsMatched divergence }
  }
}"""
ENDED = {"COMPLETED", "FAILED", "CANCELLED"}


async def replay_experiment(remote: Remote, source: str) -> int:
    made = (await remote.execute(REPLAY_EXPERIMENT, {"id": source}))["replayExperiment"]
    if made["userErrors"]:
        raise user_errors(made["userErrors"])
    experiment = made["experiment"]
    print(
        f"replay {experiment['id']} of experiment {source}: {experiment['slotCount']} episodes, "
        f"{made['changed']} queued now",
        flush=True,
    )
    await follow(remote, experiment["id"])
    check = (await remote.execute(EXPERIMENT_CHECK, {"id": experiment["id"]}))["experiment"]
    found = check["replay"]
    if found["matched"]:
        print(f"matched: {found['checked']} episodes identical to the source's", flush=True)
        return MATCHED
    print(
        f"did not match: {found['mismatched']} of {found['checked']} episodes differ; first: "
        f"{found['firstDivergence']}",
        flush=True,
    )
    return DIVERGED


async def replay_episode(remote: Remote, source: str) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    made = (await remote.execute(REPLAY_EPISODE, {"id": source}))["replayEpisode"]
    if made["userErrors"]:
        raise user_errors(made["userErrors"])
    replay = made["episode"]["id"]
    print(f"replay {replay} of episode {source}", flush=True)
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("turns, {task.fields[status]}"),
    )
    state: dict[str, Any] = {}
    with Progress(*columns) as bar:
        task = bar.add_task(replay, total=None, status="queued")
        while not state or state["status"] not in ENDED:
            state = (await remote.execute(EPISODE_STATE, {"id": replay}))["episode"]
            progress = state["progress"]
            bar.update(
                task,
                total=progress["maxTurns"],
                completed=progress["turn"],
                status=state["status"].lower(),
            )
            if state["status"] not in ENDED:
                await asyncio.sleep(POLL_SECONDS)
    check = state["replay"]
    if check is None:
        raise CommandError(f"replay {replay} ended {state['status']} without a check")
    if check["matched"]:
        print(f"matched: {check['turnsMatched']} turns and the scores identical", flush=True)
        return MATCHED
    print(
        f"did not match ({check['code']}) after {check['turnsMatched']} identical turns: "
        f"{check['divergence']}",
        flush=True,
    )
    return DIVERGED


async def run(args: argparse.Namespace) -> int:
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, connect=30)) as http:
        remote = Remote(http, args.url, args.token)
        found = await remote.execute(IS_EXPERIMENT, {"id": args.id})
        if found["experiment"] is not None:
            return await replay_experiment(remote, args.id)
        return await replay_episode(remote, args.id)


def main(args: argparse.Namespace) -> int:
    try:
        return run_command(run(args))
    except KeyboardInterrupt:
        print("detached; the replay keeps running on the server", flush=True)
        return DETACHED


def add_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    replay = commands.add_parser(
        "replay",
        help="replay an episode or an experiment from its ledger, asking no model",
        description="Replay a finished episode, or every episode of a finished experiment, "
        "from its ledger of model calls (no model is asked), show its progress and compare "
        "the replay with its source turn by turn, then by scores and outcome.",
        epilog="Exit status: 0 when the replay matched, 1 when it did not (the first "
        "divergence is printed), 2 on an error, 130 after Ctrl-C.",
    )
    replay.add_argument("id", metavar="ID", help="the episode's or the experiment's id")
    add_server_options(replay)
