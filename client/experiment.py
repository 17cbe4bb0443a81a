"""`parley experiment run DESIGN.toml` and `parley experiment watch ID`: create or find an
experiment on a local or remote Parley, start (or resume) it and show its progress live;
`parley experiment results ID`: its mean scores with 95% intervals, as a table (exit status 1
when nothing is scored yet); `parley experiment agreement ID`: how far its evaluations agree
(client/agreement.py).

Talks to the server only over GraphQL: HTTP for the mutations, a graphql-transport-ws websocket for
`experimentProgress`. Ctrl-C detaches (the episodes keep running); the exit status is 0 when every
episode completed with scores (every one queued, when the design's precision stopped it), 1 when
the experiment ended otherwise, 2 on an error, 3 when its budget stopped it and 130 when detached.
`--estimate` prints what it will take instead of running it (client/estimate.py).
"""

import argparse
import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parley.client.agreement import add_agreement, show_agreement
from parley.client.command import CommandError, add_server_options, read_toml, run_command
from parley.client.estimate import show_estimate
from parley.client.server_url import TOKEN_HINT, refusal, server_root

if TYPE_CHECKING:
    import aiohttp

COMPLETED, UNFINISHED, BUDGET_REACHED, DETACHED = 0, 1, 3, 130  # ERROR (2): a CommandError
RECONNECTS = 5
FORBIDDEN = 4403
"""The close code of a graphql-transport-ws connection refused for its token."""

CREATE = """
mutation($input: CreateExperimentInput!) {
  createExperiment(input: $input) {
    experiment { id name slotCount }
    userErrors { field message code }
  }
}"""
START = """
mutation($id: ID!) {
  startExperiment(input: {id: $id}) { changed userErrors { field message code } }
}"""
PROGRESS = """
subscription($id: ID!) {
  experimentProgress(id: $id) {
    total pending completed unjudged failed cancelled unfinished finished allCompleted
    notReached armsWaiting held stopped episodesPerMinute secondsLeft counts { status count }
  }
}"""

ARMS = """
query($id: ID!) {
  experiment(id: $id) {
    id
    arms {
      name atTurn pairs notReached unfinished unpaired
      differences { dimension pairs meanDifference confidenceInterval { low high margin } }
    }
  }
}"""
RESULTS = """
query($id: ID!, $filter: EpisodeResultsFilter, $groupBy: [ResultsGroupBy!], $evaluation: ID) {
  experiment(id: $id) { id }
  episodeResults(filter: $filter, groupBy: $groupBy, evaluation: $evaluation) {
    groups {
      model partnerModel seat scenarioId agentId tag experimentId judgeModel
      scored failed cancelled unfinished unscored
      dimensions { dimension count mean sd confidenceInterval { margin } sotopiaMargin }
    }
  }
}"""
STOPS = {
    "BUDGET": "its budget is reached",
    "PRECISION": "its precision is reached",
    "CANCELLED": "it was cancelled (a run again resumes it)",
}
GROUP_KEYS = {
    "model": "model",
    "partner_model": "partnerModel",
    "seat": "seat",
    "scenario": "scenarioId",
    "agent": "agentId",
    "tag": "tag",
    "judge_model": "judgeModel",
}
"""`--by` choices and the ResultGroup field each names."""


def enum_name(value: str) -> str:
    return value.upper().replace("-", "_")


def stored_spelling(value: str) -> str:
    """An enum value as Parley stores it, from either spelling ("ROUND_ROBIN", "round-robin")."""
    return value.lower().replace("_", "-")


DESIGN_KEYS = frozenset({"name", "tag", "design"})
ENUMS = {"sample": enum_name, "turn_order": enum_name}
"""Design values given as Parley's stored spelling ("uniform", "round-robin") that GraphQL
takes as enum names."""


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def graphql_design(value: Any, key: str = "") -> Any:
    """A design as TOML holds it (snake_case) as the GraphQL input (camelCase, enum names)."""
    if isinstance(value, dict):
        return {camel(k): graphql_design(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [graphql_design(v) for v in value]
    if key in ENUMS and isinstance(value, str):
        return ENUMS[key](value)
    return value


def read_design(path: Path) -> dict[str, Any]:
    """The createExperiment input a design file describes."""
    data = read_toml(path, DESIGN_KEYS, "unknown top-level keys")
    if not isinstance(data.get("name"), str) or not isinstance(data.get("design"), dict):
        raise CommandError(f"{path} needs a name and a [design] table")
    problems = design_problems(data["design"])
    if problems:
        raise CommandError("\n".join(f"{path}: {problem}" for problem in problems))
    return {
        "name": data["name"],
        "tag": data.get("tag", ""),
        "design": graphql_design(data["design"]),
    }


def design_problems(design: dict[str, Any]) -> list[str]:
    """What the server would refuse in a [design] table's shape (unknown keys, wrong types or
    values), checked with its own model and said in the file's words: `design.max_turns: must
    be a whole number, not 'two'`. What needs the stored world is the server's to check."""
    from pydantic import ValidationError

    from parley.core.wording import plain, where
    from parley.resolvers.experiment_design import Design

    try:
        Design.model_validate(stored_spellings(design))
    except ValidationError as err:
        found = []
        for error in err.errors():
            given = error.get("input")
            typed = error["type"] not in ("extra_forbidden", "missing") and isinstance(
                given, str | int | float
            )
            said = f"{where(('design', *error['loc']))}: {plain(error)}"
            found.append(said + (f", not {given!r}" if typed else ""))
        return found
    return []


def stored_spellings(value: Any, key: str = "") -> Any:
    """A design as the file holds it, with its enum values spelt as Parley stores them."""
    if isinstance(value, dict):
        return {k: stored_spellings(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [stored_spellings(v) for v in value]
    if key in ENUMS and isinstance(value, str):
        return stored_spelling(value)
    return value


class Remote:
    """A Parley server reached over HTTP and websockets."""

    def __init__(self, session: "aiohttp.ClientSession", url: str, token: str | None) -> None:
        self.session = session
        self.url = server_root(url) + "/graphql"
        self.token = token

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"} if self.token else {}

    async def execute(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        import aiohttp

        body = {"query": query, "variables": variables}
        try:
            async with self.session.post(self.url, json=body, headers=self.headers()) as response:
                text = await response.text()
                if response.status != 200:
                    raise CommandError(refusal(self.url, response.status, text))
        except aiohttp.ClientError as err:
            raise CommandError(f"cannot reach {self.url}: {err}") from None
        answer: dict[str, Any] = json.loads(text)
        if answer.get("errors"):
            raise CommandError("; ".join(map(coded, answer["errors"])))
        data: dict[str, Any] = answer["data"]
        return data

    async def subscribe(self, query: str, variables: dict[str, Any]) -> AsyncIterator[Any]:
        """Each `next` payload's data; returns when the server completes the subscription."""
        import aiohttp

        ws_url = self.url.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
        init = {"authorization": f"Bearer {self.token}"} if self.token else {}
        async with self.session.ws_connect(ws_url, protocols=("graphql-transport-ws",)) as ws:
            await ws.send_json({"type": "connection_init", "payload": init})
            payload = {"query": query, "variables": variables}
            subscribed = False
            async for message in ws:
                if message.type != aiohttp.WSMsgType.TEXT:
                    break
                item = json.loads(message.data)
                kind = item.get("type")
                if kind == "connection_ack" and not subscribed:
                    await ws.send_json({"type": "subscribe", "id": "1", "payload": payload})
                    subscribed = True
                elif kind == "ping":
                    await ws.send_json({"type": "pong"})
                elif kind == "next":
                    if item["payload"].get("errors"):
                        messages = [e["message"] for e in item["payload"]["errors"]]
                        raise CommandError("; ".join(messages))
                    yield item["payload"]["data"]
                elif kind == "error":
                    raise CommandError("; ".join(e["message"] for e in item["payload"]))
                elif kind == "complete":
                    return
            if ws.close_code == FORBIDDEN:
                raise CommandError(
                    f"{self.url} closed the websocket ({FORBIDDEN}): it needs a valid access "
                    f"token; {TOKEN_HINT}"
                )
            raise ConnectionError(f"the websocket closed ({ws.close_code})")


def coded(error: dict[str, Any]) -> str:
    """A GraphQL error's message, with its `extensions.code` when it has one."""
    code = (error.get("extensions") or {}).get("code")
    return f"{error['message']} ({code})" if code else str(error["message"])


def user_errors(errors: list[dict[str, Any]]) -> CommandError:
    lines = [f"{'.'.join(e['field'])}: {e['message']} ({e['code']})" for e in errors]
    return CommandError("\n".join(lines))


async def create(remote: Remote, path: Path) -> dict[str, Any]:
    """Create the experiment the design file describes, or find it by its name and tag."""
    request = read_design(path)
    created = (await remote.execute(CREATE, {"input": request}))["createExperiment"]
    if created["userErrors"]:
        raise user_errors(created["userErrors"])
    experiment: dict[str, Any] = created["experiment"]
    return experiment


async def create_and_start(remote: Remote, path: Path) -> str:
    experiment = await create(remote, path)
    started = (await remote.execute(START, {"id": experiment["id"]}))["startExperiment"]
    if started["userErrors"]:
        raise user_errors(started["userErrors"])
    print(
        f"experiment {experiment['id']} ({experiment['name']}): {experiment['slotCount']} "
        f"episodes, {started['changed']} queued now",
        flush=True,
    )
    return str(experiment["id"])


def describe(progress: dict[str, Any]) -> dict[str, str]:
    counts = {c["status"]: c["count"] for c in progress["counts"]}
    parts = [f"{s.lower()} {n}" for s, n in counts.items() if n]
    if progress["pending"]:
        parts.insert(0, f"not queued {progress['pending']}")
    if progress["unjudged"]:
        parts.append(f"of them not judged {progress['unjudged']}")
    if progress["notReached"]:
        parts.append(f"arm not reached {progress['notReached']}")
    if progress["armsWaiting"]:
        parts.append(f"arms waiting on a retry {progress['armsWaiting']}")
    if progress["stopped"]:
        parts.append(f"held {progress['held']} ({STOPS[progress['stopped']]})")
    left = progress["secondsLeft"]
    rate = progress["episodesPerMinute"]
    return {
        "counts": ", ".join(parts) or "nothing yet",
        "rate": f"{rate:.1f} completed/min"
        if rate
        else "none completed" + ("" if progress["finished"] else " yet"),
        "left": "?" if left is None else f"{int(left) // 60}:{int(left) % 60:02d}",
    }


async def follow(remote: Remote, experiment_id: str) -> dict[str, Any]:
    """Show the progress until every episode has ended; the last progress."""
    import aiohttp
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[counts]}"),
        TextColumn("{task.fields[rate]}"),
        TextColumn("left {task.fields[left]}"),
    )
    last: dict[str, Any] | None = None
    with Progress(*columns) as bar:
        task = bar.add_task(experiment_id, total=None, counts="", rate="", left="?")
        for attempt in range(RECONNECTS + 1):
            try:
                async for data in remote.subscribe(PROGRESS, {"id": experiment_id}):
                    last = data["experimentProgress"]
                    ended = last["total"] - last["unfinished"]
                    shown = describe(last)
                    bar.update(
                        task,
                        total=last["total"],
                        completed=ended,
                        counts=shown["counts"],
                        rate=shown["rate"],
                        left=shown["left"],
                    )
                break
            except (aiohttp.ClientError, ConnectionError) as err:
                if last is None:
                    raise CommandError(f"cannot reach {remote.url}: {err}") from None
                if attempt == RECONNECTS:
                    raise CommandError(f"lost the connection to {remote.url}: {err}") from None
                await asyncio.sleep(min(2**attempt * 0.5, 5))
    if last is None:
        raise CommandError("the server sent no progress")
    return last


def summary(progress: dict[str, Any]) -> str:
    unjudged = progress["unjudged"]
    not_judged = (
        f" ({unjudged} not judged: their judge failed; re-judging them with the design's "
        "judge scores them)"
        if unjudged
        else ""
    )
    reached = (
        f", arm slots not reached {progress['notReached']} (their control ended before the "
        "arm's turn)"
        if progress["notReached"]
        else ""
    )
    waiting = (
        f", arm slots waiting {progress['armsWaiting']} (their control failed or was cancelled: "
        "run again to retry it)"
        if progress["armsWaiting"]
        else ""
    )
    stopped = (
        f"; stopped: {STOPS[progress['stopped']]}, {progress['held']} episodes never queued"
        if progress["stopped"]
        else ""
    )
    return (
        f"completed {progress['completed']}/{progress['total']}{not_judged}, "
        f"failed {progress['failed']}, cancelled {progress['cancelled']}{reached}{waiting}"
        f"{stopped}"
    )


def exit_status(final: dict[str, Any]) -> int:
    """COMPLETED when every episode it queued completed with scores (all of them, unless its
    precision stopped it), BUDGET_REACHED when its budget stopped it, else UNFINISHED."""
    if final["stopped"] == "BUDGET":
        return BUDGET_REACHED
    if final["stopped"] == "CANCELLED":
        return UNFINISHED
    played = final["total"] - final["held"] - final["notReached"]
    if final["completed"] == played and not final["unjudged"]:
        return COMPLETED
    return UNFINISHED


def results_table(groups: list[dict[str, Any]], by: list[str], margin: str) -> Any:
    """Each group's mean ± 95% margin per dimension, with what the means leave out."""
    from rich.table import Table

    kind = "Sotopia's benchmark margin" if margin == "sotopia" else "t interval, n - 1"
    table = Table(title=f"Mean ± 95% margin ({kind})")
    for key in by:
        table.add_column(key.replace("_", " "))
    dimensions = [d["dimension"] for d in groups[0]["dimensions"]] if groups else []
    for dimension in dimensions:
        table.add_column(dimension.replace("_", " "), justify="right")
    table.add_column("seat scores", justify="right")
    table.add_column("not in the means")
    for group in groups:
        cells = {d["dimension"]: d for d in group["dimensions"]}
        row = [str(group[GROUP_KEYS[key]]) for key in by]
        for dimension in dimensions:
            found = cells.get(dimension)
            if found is None:
                row.append("-")
                continue
            interval = found["confidenceInterval"]
            half = interval and interval["margin"]
            if margin == "sotopia":
                half = found["sotopiaMargin"]
            row.append(f"{found['mean']:.2f}" + ("" if half is None else f" ± {half:.2f}"))
        row += [str(group["scored"]), apart(group)]
        table.add_row(*row)
    return table


def arms_table(arms: list[dict[str, Any]]) -> Any:
    """Each arm against the control: pairs, and per dimension (overall first) the mean of arm
    - control with its 95% interval; `*` marks an interval that leaves out 0."""
    from rich.table import Table

    table = Table(title="Arms: arm - control, paired by slot and seat (mean, 95% interval)")
    for column in ("arm", "at turn", "pairs"):
        table.add_column(column, justify="left" if column == "arm" else "right")
    dimensions = list(dict.fromkeys(d["dimension"] for arm in arms for d in arm["differences"]))
    for dimension in dimensions:
        table.add_column(dimension.replace("_", " "), justify="right")
    table.add_column("not paired")
    for arm in arms:
        cells = {d["dimension"]: d for d in arm["differences"]}
        row = [arm["name"], str(arm["atTurn"]), str(arm["pairs"])]
        for dimension in dimensions:
            found = cells.get(dimension)
            row.append("-" if found is None else difference(found))
        left = [(arm[k], w) for k, w in (("notReached", "not reached"), ("unfinished",
                "unfinished"), ("unpaired", "unpaired")) if arm[k]]  # fmt: skip
        row.append(", ".join(f"{n} {why}" for n, why in left))
        table.add_row(*row)
    return table


def difference(found: dict[str, Any]) -> str:
    """`+0.50 [0.10, 0.90] *`: the mean difference, its interval, and `*` when it leaves out 0."""
    interval = found["confidenceInterval"]
    text = f"{found['meanDifference']:+.2f}"
    if interval is None:
        return text
    flag = " *" if interval["low"] > 0 or interval["high"] < 0 else ""
    return text + f" [{interval['low']:+.2f}, {interval['high']:+.2f}]{flag}"


def apart(group: dict[str, Any]) -> str:
    """The group's episodes left out of the means, by why: `12 episodes: 11 failed, 1 unscored`
    (episodes, each once, whichever of its seats are in the group)."""
    counts = [(group[k], k) for k in ("failed", "cancelled", "unscored", "unfinished") if group[k]]
    total = sum(n for n, _ in counts)
    if not total:
        return ""
    noun = "episode" if total == 1 else "episodes"
    return f"{total} {noun}: " + ", ".join(f"{n} {why}" for n, why in counts)


async def show_results(remote: Remote, args: argparse.Namespace) -> int:
    from rich.console import Console

    by = [key.strip() for key in args.by.split(",") if key.strip()]
    unknown = [key for key in by if key not in GROUP_KEYS]
    if unknown or not by:
        raise CommandError(f"--by takes a comma-separated list of {', '.join(GROUP_KEYS)}")
    found = (await remote.execute(ARMS, {"id": args.id}))["experiment"]
    arms = found["arms"] if found else []
    only = {"arm": "control"} if arms else {}  # the model tables are of the control arm
    variables = {
        "id": args.id,
        "filter": {"experimentId": args.id, **only},
        "groupBy": [key.upper() for key in by],
        "evaluation": args.evaluation,
    }
    answer = await remote.execute(RESULTS, variables)
    groups = answer["episodeResults"]["groups"]
    if answer["experiment"] is None and not groups:  # episodes may outlive their experiment
        raise CommandError(f"no experiment with id {args.id!r}")
    if args.json:
        print(
            json.dumps({"groups": groups, "arms": arms} if arms else groups, indent=2), flush=True
        )
    else:
        # Wide enough not to fold the table when the output is a file or a pipe.
        console = Console(width=None if os.isatty(1) else 240)
        table = results_table(groups, by, args.margin)
        if arms:
            table.title = f"Control arm: {table.title}"
        console.print(table)
        if arms:
            console.print(arms_table(arms))
    return COMPLETED if any(group["scored"] for group in groups) else UNFINISHED


async def run(args: argparse.Namespace) -> int:
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, connect=30)) as http:
        remote = Remote(http, args.url, args.token)
        if args.experiment_command == "results":
            return await show_results(remote, args)
        if args.experiment_command == "agreement":
            return await show_agreement(remote, args)
        if args.experiment_command == "run" and args.estimate:
            return await show_estimate(remote, (await create(remote, args.design))["id"])
        if args.experiment_command == "run":
            experiment_id = await create_and_start(remote, args.design)
            args.id = experiment_id  # named when Ctrl-C detaches
        else:
            experiment_id = args.id
        final = await follow(remote, experiment_id)
    print(summary(final), flush=True)
    return exit_status(final)


def main(args: argparse.Namespace) -> int:
    try:
        return run_command(run(args))
    except KeyboardInterrupt:
        target = getattr(args, "id", None) or "ID"
        print(
            f"detached; the episodes keep running (`parley experiment watch {target}` reattaches)",
            flush=True,
        )
        return DETACHED


FOLLOWING = (
    "Ctrl-C stops showing the progress and leaves the episodes running. Exit status: 0 when "
    "every episode completed (every one queued, when its precision stopped it), 1 when the "
    "experiment ended otherwise, 2 on an error, 3 when its budget stopped it, 130 after Ctrl-C."
)


def add_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    experiment = commands.add_parser(
        "experiment", help="run experiments on a Parley server and read their results"
    )
    actions = experiment.add_subparsers(dest="experiment_command", required=True, metavar="ACTION")
    run = actions.add_parser(
        "run",
        help="run the experiment a design file describes, and show its progress",
        description="Create the experiment a design file describes (or find it, by its name "
        "and tag), start it, or resume it where it stopped, and show its progress.",
        epilog=FOLLOWING,
    )
    run.add_argument(
        "design",
        type=Path,
        metavar="DESIGN.toml",
        help="the design file (examples/experiments/design.toml is one)",
    )
    run.add_argument(
        "--estimate",
        action="store_true",
        help="do not run it: print the model calls, tokens and dollars it will take, from "
        "comparable recorded episodes (a calibration run of two episodes per kind first, when "
        "some have none); exit status 0 when every slot is covered",
    )
    watch = actions.add_parser(
        "watch",
        help="show an experiment's progress until every episode has ended",
        epilog=FOLLOWING,
    )
    watch.add_argument("id", metavar="ID", help="the experiment's id")
    results = actions.add_parser(
        "results",
        help="print an experiment's mean scores with 95%% margins",
        description="Print an experiment's mean scores with 95% margins, one row per model, "
        "with its seat scores and the episodes left out of the means; for an experiment with "
        "arms, those of its control arm, then each arm's paired difference from the control "
        "(the episodes' own scores). Exit status: 0, or 1 when nothing is scored yet, 2 on an "
        "error.",
    )
    results.add_argument("id", metavar="ID", help="the experiment's id")
    results.add_argument(
        "--by",
        default="model",
        help=f"rows by these, comma-separated: {', '.join(GROUP_KEYS)} (default model)",
    )
    results.add_argument(
        "--margin",
        choices=("t", "sotopia"),
        default="t",
        help="t: the t interval, mean ± t(0.975, n-1)·sd/√n (the default); sotopia: the "
        "margin `sotopia benchmark` prints",
    )
    results.add_argument(
        "--evaluation",
        metavar="ID",
        help="a re-judging's scores, or a rating study's (its raters' means); default: the "
        "episodes' own",
    )
    results.add_argument(
        "--json", action="store_true", help="print the rows as JSON instead of a table"
    )
    for command in (run, watch, results, add_agreement(actions)):
        add_server_options(command)
