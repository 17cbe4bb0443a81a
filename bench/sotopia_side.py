"""What bench/compare_sotopia.py runs with the Python of Sotopia 0.1.5's own environment.

    <sotopia-venv>/bin/python bench/sotopia_side.py api --port 8800   # Sotopia's FastAPI app
    <sotopia-venv>/bin/python bench/sotopia_side.py worker            # `rq worker default`
    <sotopia-venv>/bin/python bench/sotopia_side.py tokens < bodies.json

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

`tokens` computes `episode_token_figures` with tiktoken's cl100k_base, which litellm (a Sotopia
dependency) installs together with the encoding file, so no download is needed.
"""

import argparse
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
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


def request_text(body: dict[str, Any]) -> str:
    """What a request puts before the model: its output schema, then each message."""
    parts: list[str] = []
    for key in ("tools", "response_format"):
        if body.get(key):
            parts.append(json.dumps(body[key]))
    for message in body.get("messages") or []:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(f"{message.get('role', '')}: {content}")
    return "\n".join(parts)


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def token_figures(
    bodies: list[dict[str, Any]], encode: Callable[[str], list[int]]
) -> tuple[int, int]:
    """Total prompt + schema tokens of one episode's chat requests (in the order they were
    sent), and the tokens a perfect prefix cache would still have to process: for each request,
    all but its longest token prefix shared with any earlier request."""
    seen: list[list[int]] = []
    total = uncached = 0
    for body in bodies:
        tokens = encode(request_text(body))
        cached = max((common_prefix(tokens, s) for s in seen), default=0)
        total += len(tokens)
        uncached += len(tokens) - cached
        seen.append(tokens)
    return total, uncached


def cl100k() -> Callable[[str], list[int]]:
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        spec = importlib.util.find_spec("litellm")
        if spec is not None and spec.submodule_search_locations:
            bundled = Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers"
            os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)
    import tiktoken  # type: ignore[import-not-found,unused-ignore]

    encoding = tiktoken.get_encoding("cl100k_base")
    return lambda text: encoding.encode(text, disallowed_special=())


def episode_token_figures(bodies: list[dict[str, Any]]) -> tuple[int, int]:
    """(total, uncached under an ideal prefix cache) cl100k_base tokens of one episode."""
    return token_figures(bodies, cl100k())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    api = commands.add_parser("api", help="serve Sotopia's FastAPI app")
    api.add_argument("--port", type=int, default=8800)
    commands.add_parser("worker", help="run `rq worker default`")
    commands.add_parser("tokens", help="token figures of the JSON list of bodies on stdin")
    args = parser.parse_args()
    if args.command == "api":
        serve_api(args.port)
    elif args.command == "worker":
        run_worker()
    else:
        print(json.dumps(episode_token_figures(json.load(sys.stdin))))


if __name__ == "__main__":
    main()
