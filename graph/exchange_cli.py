"""`parley export`, `parley import` and `parley serve --open-dump`: records in Sotopia's JSONL
layout, against the local database, or a remote Parley (`--url`: client/exchange.py)."""

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from parley.client.exchange import ExchangeError, remote_export, remote_import
from parley.core.import_report import ImportReport
from parley.lifecycle.settings import RunSettings

if TYPE_CHECKING:
    from parley.graph.settings import Settings

TOKEN_VARIABLE = "PARLEY_TOKEN"


def add_commands(commands: Any) -> None:
    out = commands.add_parser(
        "export",
        help="write records to a file: JSON lines in Sotopia's layout, or episodes as CSV",
        description="Write stored records as JSON lines in Sotopia's layout: agents, scenarios, "
        "relationships, dimension lists, finished episodes, experiments and people's ratings "
        "of the episodes (a file another "
        "Parley imports whole), or episodes as CSV. Episodes not finished yet are left out "
        "unless --status asks for them.",
    )
    out.add_argument(
        "--kind",
        help="what to write: all (the default; episodes with --format csv), or a "
        "comma-separated list of agents, scenarios, relationships, dimension_lists, episodes, "
        "experiments, annotations (people's ratings of the episodes exported), model_calls "
        "(their ledgers of model calls)",
    )
    out.add_argument(
        "--format",
        choices=["jsonl", "csv"],
        default="jsonl",
        help="jsonl (the default) or csv (episodes only)",
    )
    out.add_argument("--tag", help="only episodes and experiments with this tag")
    out.add_argument("--experiment", metavar="ID", help="only this experiment and its episodes")
    out.add_argument(
        "--status",
        help="only episodes in this status, e.g. COMPLETED or FAILED (default: every finished one)",
    )
    out.add_argument("--agent", metavar="ID", help="only episodes this agent took part in")
    out.add_argument("--scenario", metavar="ID", help="only episodes of this scenario")
    out.add_argument(
        "--output", "-o", type=Path, metavar="FILE", help="write to this file (default: the screen)"
    )
    _remote(out, "export from")

    into = commands.add_parser(
        "import",
        help="read records from a JSON lines file (records already stored are skipped)",
        description="Read records from a JSON lines file written by `parley export` or by "
        "Sotopia. Each line is checked whole before it is stored; a record whose id is stored "
        "already is skipped. Lines that cannot be imported are listed, and the exit status is "
        "then 1.",
    )
    into.add_argument("file", help="the file, or - to read it from standard input")
    _remote(into, "import into")


def _remote(command: argparse.ArgumentParser, verb: str) -> None:
    command.add_argument(
        "--url",
        help=f"a running Parley server to {verb}: its address (http://host:8000) or its "
        "/graphql address (default: this machine's Parley data, with no server)",
    )
    command.add_argument(
        "--token", help=f"the server's access token, if it needs one (default ${TOKEN_VARIABLE})"
    )
    command.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help="where Parley keeps its data (default ~/.parley)",
    )


def run(args: argparse.Namespace, settings: RunSettings) -> None:
    try:
        _run(args, settings)
    except (ExchangeError, OSError) as err:
        sys.exit(f"parley {args.command}: {err}")


def _run(args: argparse.Namespace, settings: RunSettings) -> None:
    token = args.token or os.environ.get(TOKEN_VARIABLE)
    if args.command == "export":
        params = export_params(args)
        with output(args.output) as sink:
            if args.url:
                asyncio.run(remote_export(args.url, token, params, sink))
            else:
                asyncio.run(local_export(settings, params, sink))
        return
    with contextlib.ExitStack() as stack:
        source: IO[bytes] = (
            sys.stdin.buffer if args.file == "-" else stack.enter_context(open(args.file, "rb"))
        )
        if args.url:
            report = asyncio.run(remote_import(args.url, token, source))
        else:
            report = asyncio.run(local_import(settings, source))
    print_report(report)
    if report.invalid:
        sys.exit(1)


def export_params(args: argparse.Namespace) -> dict[str, str]:
    given = {
        "kind": args.kind,
        "format": args.format,
        "tag": args.tag,
        "experiment": args.experiment,
        "status": args.status,
        "agent": args.agent,
        "scenario": args.scenario,
    }
    return {k: v for k, v in given.items() if v}


@contextlib.contextmanager
def output(path: Path | None) -> Iterator[IO[bytes]]:
    """stdout, or a file that appears only complete: written beside it, renamed at the end."""
    if path is None:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("wb") as sink:
            yield sink
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


async def local_export(settings: RunSettings, params: dict[str, str], sink: IO[bytes]) -> None:
    from parley.core.errors import BadArgument
    from parley.resolvers.exporter import export_text, request
    from parley.storage.runtime import redis_storage

    try:
        kinds, episodes, form = request(params)
    except BadArgument as err:
        sys.exit(f"parley export: {err}")
    async with redis_storage(
        settings.redis_url, settings.data_dir, fsync=settings.redis_fsync
    ) as client:
        async for text in export_text(client, kinds, episodes, form):
            sink.write(text.encode())


async def local_import(settings: RunSettings, source: IO[bytes]) -> ImportReport:
    from parley.resolvers.importer import import_lines
    from parley.storage.runtime import redis_storage

    async with redis_storage(
        settings.redis_url, settings.data_dir, fsync=settings.redis_fsync
    ) as client:
        return await import_lines(client, source)


def print_report(report: ImportReport) -> None:
    def counts(values: dict[str, int]) -> str:
        return ", ".join(f"{n} {kind}" for kind, n in sorted(values.items())) or "nothing"

    print(f"created: {counts(report.created)}")
    print(f"skipped (already stored): {counts(report.skipped)}")
    print(f"invalid lines: {report.invalid}")
    for problem in report.problems:
        print(f"  line {problem.line}: {problem.reason} ({problem.code})")
    if report.invalid > len(report.problems):
        print(f"  ... and {report.invalid - len(report.problems)} more")


def serve_dump(settings: "Settings", dump: Path, serve: Callable[["Settings"], None]) -> None:
    """Start the embedded Redis on a copy of `dump`, index what it holds, then `serve` it."""
    from parley.storage.dump import DumpError, working_copy
    from parley.storage.embedded import EmbeddedRedis

    if settings.redis_url is not None:
        sys.exit("parley serve: --open-dump starts its own Redis; unset REDIS_URL")
    try:
        home = working_copy(dump, settings.data_dir)
    except DumpError as err:
        sys.exit(f"parley serve: {err}")
    server = EmbeddedRedis(home, fsync=settings.redis_fsync)
    # uvicorn re-raises the SIGTERM it stopped on once it is done: as an exception here, so
    # that the Redis started for the dump is stopped too.
    signal.signal(signal.SIGTERM, _stopped)
    try:
        url = asyncio.run(open_dump(server))
        serve(settings.model_copy(update={"redis_url": url, "seed": False}))
    finally:
        asyncio.run(server.stop())


def _stopped(signum: int, frame: Any) -> None:
    raise SystemExit(0)


async def open_dump(server: Any) -> str:
    """Start `server` (an EmbeddedRedis on a dump's copy) and adopt the episodes it holds."""
    import logging

    from parley.storage.connection import open_client
    from parley.storage.dump import LOAD_TIMEOUT, adopt_episodes

    url: str = await server.start(timeout=LOAD_TIMEOUT)
    client = open_client(url)
    try:  # the indexes come after, once, when the service prepares its storage
        adopted = await adopt_episodes(client)
    finally:
        await client.aclose()
    logging.getLogger(__name__).info("opened dump", extra={"episodes_adopted": adopted})
    return url
