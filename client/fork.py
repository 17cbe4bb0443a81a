"""`parley fork`: fork a finished episode at a turn on a Parley server (forkEpisode), print the
new episode's id and, with --follow, show its turns until it ends."""

import argparse
from typing import Any

from parley.client.command import CommandError, add_server_options, run_command
from parley.client.experiment import COMPLETED, DETACHED, UNFINISHED, Remote, user_errors

FORK = """
mutation($input: ForkEpisodeInput!) {
  forkEpisode(input: $input) {
    episode { id status forkedAtTurn progress { turn maxTurns } }
    userErrors { field message code }
  }
}"""
EVENTS = """
subscription($id: ID!) {
  episodeEvents(id: $id) { kind status turn { turn } episode { progress { turn maxTurns } } }
}"""


def seat_value(text: str, what: str) -> dict[str, Any]:
    """`SEAT=VALUE` as {"seat": SEAT, what: VALUE}."""
    seat, sep, value = text.partition("=")
    if not sep or not seat.strip().isdigit() or not value:
        raise argparse.ArgumentTypeError(f"expected SEAT={what.upper()}, got {text!r}")
    return {"seat": int(seat), what: value}


def seat_model(text: str) -> dict[str, Any]:
    return seat_value(text, "model")


def seat_goal(text: str) -> dict[str, Any]:
    return seat_value(text, "goal")


def fork_input(args: argparse.Namespace) -> dict[str, Any]:
    """forkEpisode's input from the command line."""
    request: dict[str, Any] = {
        "episodeId": args.episode_id,
        "atTurn": args.at_turn,
        "seatModels": args.seat_model,
        "goals": args.goal,
    }
    if args.inject is not None:
        request["injectMessage"] = {"text": args.inject, "to": args.inject_to}
    elif args.inject_to:
        raise CommandError("--inject-to needs --inject")
    if args.tag is not None:
        request["tag"] = args.tag
    return request


async def follow(remote: Remote, episode_id: str) -> str:
    """Show the episode's turns and status until it ends; its last status."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    status = "QUEUED"
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
    ) as bar:
        task = bar.add_task(episode_id, total=None, status=status)
        async for data in remote.subscribe(EVENTS, {"id": episode_id}):
            event = data["episodeEvents"]
            status = event["status"]
            progress = (event.get("episode") or {}).get("progress") or {}
            bar.update(
                task,
                total=progress.get("maxTurns") or None,
                completed=progress.get("turn", 0),
                status=status.lower(),
            )
    return status


async def run(args: argparse.Namespace) -> int:
    import aiohttp

    request = fork_input(args)
    timeout = aiohttp.ClientTimeout(total=None, connect=30)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        remote = Remote(http, args.url, args.token)
        answer = (await remote.execute(FORK, {"input": request}))["forkEpisode"]
        if answer["userErrors"]:
            raise user_errors(answer["userErrors"])
        episode = answer["episode"]
        print(episode["id"], flush=True)
        if not args.follow:
            return COMPLETED
        args.forked = episode["id"]  # named when Ctrl-C detaches
        status = await follow(remote, episode["id"])
    print(f"episode {episode['id']}: {status.lower()}", flush=True)
    return COMPLETED if status == "COMPLETED" else UNFINISHED


def main(args: argparse.Namespace) -> int:
    try:
        return run_command(run(args))
    except KeyboardInterrupt:
        print(f"detached; episode {getattr(args, 'forked', '')} keeps running", flush=True)
        return DETACHED


def add_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    command = commands.add_parser(
        "fork",
        help="fork a finished episode at a turn, with other models or a message",
        description="Start a new episode on a Parley server that keeps the first K turns of a "
        "finished one (completed, failed or cancelled) and plays on from turn K with a change: "
        "other models in some seats, an environment message, other goals. Prints the new "
        "episode's id.",
        epilog="Exit status: 0 when queued (with --follow: when it completed), 1 when it "
        "ended otherwise, 2 on an error, 130 after Ctrl-C (the episode keeps running).",
    )
    command.add_argument("episode_id", metavar="EPISODE_ID", help="the episode to fork")
    command.add_argument(
        "--at-turn",
        type=int,
        required=True,
        metavar="K",
        help="how many of its turns the fork keeps (0 to the turns it played)",
    )
    command.add_argument(
        "--seat-model",
        type=seat_model,
        action="append",
        default=[],
        metavar="SEAT=MODEL",
        help="play seat SEAT (0-based) with MODEL from turn K; repeat for more seats",
    )
    command.add_argument(
        "--inject", metavar="TEXT", help="an environment message the agents see from turn K"
    )
    command.add_argument(
        "--inject-to",
        action="append",
        default=[],
        metavar="NAME",
        help="the agent the message is for (repeat for more; default: everyone)",
    )
    command.add_argument(
        "--goal",
        type=seat_goal,
        action="append",
        default=[],
        metavar="SEAT=GOAL",
        help="give seat SEAT's agent another goal; repeat for more seats",
    )
    command.add_argument("--tag", help="the fork's tag (default: its parent's)")
    command.add_argument(
        "--follow", action="store_true", help="show its turns until it ends, then its status"
    )
    add_server_options(command)
