"""The `parley` command."""

import argparse
import asyncio
import logging
from pathlib import Path

import uvicorn

from graph.settings import Settings


def serve(settings: Settings) -> None:
    from graph.app import create_app

    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        timeout_graceful_shutdown=10,
        log_level="info",
    )


def export_schema(output: Path | None) -> None:
    from graph.schema import schema

    text = schema.as_str() + "\n"
    if output is None:
        print(text, end="")
    else:
        output.write_text(text, encoding="utf-8")


async def seed(settings: Settings) -> dict[str, int]:
    from storage.runtime import redis_storage
    from storage.sample import seed as load_sample

    async with redis_storage(settings.redis_url, settings.data_dir):
        return await load_sample()


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="parley", description=__doc__)
    commands = root.add_subparsers(dest="command", required=True)

    run = commands.add_parser("serve", help="run the GraphQL API (embedded Redis when unset)")
    run.add_argument("--host", help="bind address (default 127.0.0.1)")
    run.add_argument("--port", type=int, help="port (default 8000)")
    run.add_argument("--data-dir", type=Path, help="where embedded data lives (default ~/.parley)")
    run.add_argument("--no-seed", action="store_true", help="do not load sample data")

    export = commands.add_parser("export-schema", help="print the GraphQL SDL")
    export.add_argument("--output", "-o", type=Path, help="write to this file instead")

    load = commands.add_parser("seed", help="load the sample data (idempotent)")
    load.add_argument("--data-dir", type=Path, help="where embedded data lives")
    return root


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    overrides = {
        key: value
        for key, value in {
            "host": getattr(args, "host", None),
            "port": getattr(args, "port", None),
            "data_dir": getattr(args, "data_dir", None),
        }.items()
        if value is not None
    }
    if getattr(args, "no_seed", False):
        overrides["seed"] = False
    settings = Settings(**overrides)
    if args.command == "serve":
        serve(settings)
    elif args.command == "export-schema":
        export_schema(args.output)
    elif args.command == "seed":
        print(asyncio.run(seed(settings)))


if __name__ == "__main__":
    main()
