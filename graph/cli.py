"""The `parley` command. Commands import what they need when they run: `parley worker` and
`parley seed` load no GraphQL (nor Starlette or uvicorn), and `--help` loads nothing."""

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from parley.lifecycle import logs
from parley.lifecycle.settings import RunSettings

if TYPE_CHECKING:
    from parley.graph.settings import Settings


def checked[S: RunSettings](kind: type[S], overrides: dict[str, Any]) -> S:
    """The settings, or an exit with one line per setting that is wrong: said without its
    value, which may be a URL holding a password."""
    try:
        return kind(**overrides)
    except ValidationError as err:
        lines = [
            f"parley: {'.'.join(str(part) for part in e['loc']) or 'settings'}: {e['msg']}"
            for e in err.errors()
        ]
        sys.exit("\n".join(lines))


def preflight(settings: RunSettings) -> None:
    """Exit with one clear line when the models file is unusable, or the configured Redis is
    unreachable or lacks a module."""
    if settings.models_file is not None:
        from parley.engine.errors import UnknownModelError
        from parley.engine.models import load_models_file

        try:
            load_models_file(settings.models_file)
        except UnknownModelError as err:
            sys.exit(f"parley: {err}")
    if settings.redis_url is None:
        return  # the embedded server is started with both modules
    from redis.exceptions import RedisError

    from parley.storage.connection import RedisCapabilityError, check_capabilities, open_client
    from parley.storage.sentinel import shown_url

    async def check(url: str) -> None:
        client = open_client(url)
        try:
            await check_capabilities(client)
        finally:
            await client.aclose()

    try:
        asyncio.run(check(settings.redis_url))
    except RedisCapabilityError as err:
        sys.exit(f"parley: {err}")
    except (RedisError, OSError) as err:
        reason = str(err).split(" : <", 1)[0]  # not the client's whole description
        sys.exit(f"parley: cannot reach Redis at {shown_url(settings.redis_url)}: {reason}")
    except (ValueError, TypeError):  # redis-py's reading of the URL; its words may quote a password
        sys.exit(
            "parley: the Redis URL is not one redis-py can use: check its scheme, host, port "
            "and options (redis://[[user]:password@]host[:port][/db])"
        )


def serve(settings: "Settings") -> None:
    import uvicorn

    from parley.graph.app import create_app
    from parley.graph.http_timeouts import header_limited

    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        http=header_limited(settings.header_timeout),
        timeout_graceful_shutdown=10,
        ws_per_message_deflate=settings.ws_per_message_deflate,
        log_config=None,  # uvicorn's loggers go through Parley's handler (lifecycle/logs.py)
    )


def export_schema(output: Path | None) -> None:
    from parley.graph.schema import schema

    text = schema.as_str() + "\n"
    if output is None:
        print(text, end="")
    else:
        output.write_text(text, encoding="utf-8")


async def seed(settings: RunSettings) -> dict[str, int]:
    from parley.storage.runtime import redis_storage
    from parley.storage.sample import seed as load_sample

    async with redis_storage(
        settings.redis_url, settings.data_dir, fsync=settings.redis_fsync
    ) as client:
        return await load_sample(client)


async def worker(settings: RunSettings) -> None:
    """Run until SIGINT or SIGTERM; unfinished jobs are then handed back for redelivery."""
    from parley.core import metrics
    from parley.lifecycle.worker import serve_worker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if settings.metrics_port is not None:
        port, host = settings.metrics_port, settings.metrics_host
        try:
            metrics.serve(port, host)
        except OSError as err:
            sys.exit(f"parley worker: cannot serve metrics on {host}:{port}: {err}")
    try:
        await serve_worker(settings, stop)
    finally:
        metrics.process_stopped()


def redis_url(settings: RunSettings) -> str:
    """The URL of the Redis Parley uses: the configured one, or the running embedded one's
    (with its password), checked to answer: the data directory's own, else that of a dump
    opened there (`parley serve --open-dump`)."""
    if settings.redis_url is not None:
        return settings.redis_url
    from redis.exceptions import RedisError

    from parley.storage.connection import open_client
    from parley.storage.dump import opened_dumps
    from parley.storage.embedded import running_url

    async def answers(url: str) -> bool:
        client = open_client(url)
        try:
            return bool(await client.ping())
        except RedisError:
            return False
        finally:
            await client.aclose()

    for home in (settings.data_dir, *opened_dumps(settings.data_dir)):
        url = running_url(home)
        if url is not None and asyncio.run(answers(url)):
            return url
    sys.exit(
        f"parley redis-url: no embedded Redis is running for {settings.data_dir} "
        "(start `parley serve` first)"
    )


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop where it is installed (as uvicorn uses for the API), else asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


DESCRIPTION = (
    "Parley runs social simulations: agents with goals talk in a scenario, and a judge scores "
    "them (as in Sotopia). `parley serve` starts it; open http://127.0.0.1:8000/ for the web "
    "app, or /graphql for the API."
)
DATA_DIR = "where Parley keeps the data of its own Redis and the embedded model (default ~/.parley)"


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="parley",
        description=DESCRIPTION,
        epilog="`parley COMMAND --help` describes a command.",
    )
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "serve",
        help="run Parley: the web app, the GraphQL API and a worker for episodes",
        description="Run the web app (at /) and the GraphQL API (at /graphql), with a worker "
        "that runs episodes. Without REDIS_URL, Parley starts a Redis of its own in the data "
        "directory, and loads the sample data into an empty database.",
    )
    run.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    run.add_argument("--port", type=int, help="port to listen on (default 8000)")
    run.add_argument("--data-dir", type=Path, metavar="DIR", help=DATA_DIR)
    run.add_argument("--no-seed", action="store_true", help="start without the sample data")
    run.add_argument(
        "--no-worker",
        action="store_true",
        help="run no episodes here (start `parley worker` for them)",
    )
    run.add_argument(
        "--concurrency", type=int, help="most episodes the worker runs at once (default 512)"
    )
    run.add_argument(
        "--open-dump",
        type=Path,
        metavar="DUMP",
        help="serve the records of a Redis dump file (such as Sotopia's datasets), from a copy",
    )

    work = commands.add_parser(
        "worker",
        help="run episodes from the queue, without the API",
        description="Run episodes from the queue, without the API: start as many as you like, "
        "on any machine that reaches the same Redis.",
    )
    work.add_argument("--concurrency", type=int, help="most episodes run at once (default 512)")
    work.add_argument("--data-dir", type=Path, metavar="DIR", help=DATA_DIR)
    work.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve this worker's Prometheus metrics at /metrics on this port",
    )
    work.add_argument(
        "--metrics-host",
        metavar="HOST",
        help="address the metrics port binds to (default 127.0.0.1)",
    )

    export = commands.add_parser("export-schema", help="print the GraphQL schema, in its text form")
    export.add_argument("--output", "-o", type=Path, metavar="FILE", help="write it to this file")

    load = commands.add_parser(
        "seed", help="load the sample data (records already stored are left as they are)"
    )
    load.add_argument("--data-dir", type=Path, metavar="DIR", help=DATA_DIR)

    where = commands.add_parser(
        "redis-url",
        help="print the address, with its password, of the Redis Parley uses",
        description="Print the address, with its password, of the Redis Parley uses: give it "
        "to Sotopia's own code as REDIS_OM_URL.",
    )
    where.add_argument("--data-dir", type=Path, metavar="DIR", help=DATA_DIR)
    from parley.client import experiment, fork, replay, study
    from parley.graph import exchange_cli

    exchange_cli.add_commands(commands)
    experiment.add_commands(commands)
    replay.add_commands(commands)
    fork.add_commands(commands)
    study.add_commands(commands)
    return root


def check_redis_om_url() -> None:
    """redis-om reads REDIS_OM_URL itself, with redis-py's reader, as Parley's models load: a
    URL it cannot read (a Sentinel's, a password where the port goes) would end there in a
    traceback that may quote the password."""
    url = os.environ.get("REDIS_OM_URL")
    if not url:
        return
    from redis.asyncio.connection import parse_url

    try:
        parse_url(url)
    except (ValueError, TypeError):
        sys.exit(
            "parley: REDIS_OM_URL is not a URL redis-om can use (redis://, rediss:// or "
            "unix://); a Sentinel URL goes in REDIS_URL or PARLEY_REDIS_URL, with REDIS_OM_URL "
            "unset"
        )


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    check_redis_om_url()
    if args.command == "experiment":
        from parley.client import experiment

        sys.exit(experiment.main(args))
    if args.command == "replay":
        from parley.client import replay

        sys.exit(replay.main(args))
    if args.command == "study":
        from parley.client import study

        sys.exit(study.main(args))
    if args.command == "fork":
        from parley.client import fork

        sys.exit(fork.main(args))
    overrides: dict[str, Any] = {
        key: value
        for key, value in {
            "host": getattr(args, "host", None),
            "port": getattr(args, "port", None),
            "data_dir": getattr(args, "data_dir", None),
            "concurrency": getattr(args, "concurrency", None),
            "metrics_port": getattr(args, "metrics_port", None),
            "metrics_host": getattr(args, "metrics_host", None),
        }.items()
        if value is not None
    }
    if getattr(args, "no_seed", False):
        overrides["seed"] = False
    if getattr(args, "no_worker", False):
        overrides["worker"] = False
    logs.configure(checked(RunSettings, overrides).log_format)
    if args.command in ("serve", "worker"):
        from parley.core import tracing

        tracing.configure(args.command)
    from parley.graph import exchange_cli

    if args.command == "export-schema":
        export_schema(args.output)
    elif args.command == "serve":
        from parley.graph.settings import Settings

        api_settings = checked(Settings, overrides)
        if args.open_dump is not None:
            exchange_cli.serve_dump(api_settings, args.open_dump, serve)
            return
        preflight(api_settings)
        serve(api_settings)
    elif args.command == "redis-url":
        print(redis_url(checked(RunSettings, overrides)))
    elif args.command in ("export", "import"):
        settings = checked(RunSettings, overrides)
        if not args.url:
            preflight(settings)
        exchange_cli.run(args, settings)
    else:
        settings = checked(RunSettings, overrides)
        preflight(settings)
        if args.command == "seed":
            print(asyncio.run(seed(settings)))
        else:
            asyncio.run(worker(settings), loop_factory=event_loop_factory())


if __name__ == "__main__":
    main()
