"""What bench/compare_sotopia.py runs with the Python of Sotopia 0.1.5's own environment.

    <sotopia-venv>/bin/python bench/sotopia_side.py api --port 8800   # Sotopia's FastAPI app
    <sotopia-venv>/bin/python bench/sotopia_side.py worker            # `rq worker default`

`api` and `worker` read REDIS_OM_URL (Sotopia connects to Redis when `sotopia.database` is
imported). This file imports nothing of Parley, so it runs in that environment.

One workaround is applied before Sotopia serves anything, and nothing else is changed:
in Redis mode, Sotopia 0.1.5 cannot construct an `EpisodeLog` or a `NonStreamingSimulationStatus`
without an explicit `pk` (the inherited default resolves to redis-om's class-level expression
proxy and fails validation: "pk Input should be a valid string"), so `POST /simulate`,
`GET /episodes` on an empty database and the save at the end of every episode fail.
`patch_episode_pk` wraps the `__init__` of those two classes: when no `pk` (or an empty one) is
given, it passes a fresh ULID, which is what redis-om does for every other model and what
Sotopia's own `__init__` on the profile classes intends. A record given a pk, and every stored
document, is untouched.

The worker also imports `sotopia.api.fastapi_server` (and so litellm) before it starts, so each
job's forked work horse inherits it instead of importing it again: Sotopia's best case.

"""

import argparse
import os
import sys
from typing import Any


def patch_episode_pk() -> None:
    from sotopia.database.logs import (  # type: ignore[import-not-found,unused-ignore]
        EpisodeLog,
        NonStreamingSimulationStatus,
    )
    from ulid import ULID

    for model in (EpisodeLog, NonStreamingSimulationStatus):
        original = model.__init__

        def __init__(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> None:
            if not kwargs.get("pk"):
                kwargs["pk"] = str(ULID())
            _original(self, *args, **kwargs)

        model.__init__ = __init__


def serve_api(port: int) -> None:
    import uvicorn

    patch_episode_pk()
    uvicorn.run("sotopia.api.fastapi_server:app", host="127.0.0.1", port=port, log_level="warning")


def run_worker() -> None:
    patch_episode_pk()
    import sotopia.api.fastapi_server  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    from rq.cli import main  # type: ignore[import-not-found,unused-ignore]

    sys.argv = ["rq", "worker", "default", "--url", os.environ["REDIS_OM_URL"]]
    main()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    api = commands.add_parser("api", help="serve Sotopia's FastAPI app")
    api.add_argument("--port", type=int, default=8800)
    commands.add_parser("worker", help="run `rq worker default`")
    args = parser.parse_args()
    if args.command == "api":
        serve_api(args.port)
    else:
        run_worker()


if __name__ == "__main__":
    main()
