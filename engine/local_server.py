"""The embedded model's server process: llama.cpp's own HTTP server, hosted by xllamacpp.

`python -m engine.local_server --model M --template T` loads the GGUF, listens on a free loopback
port and prints one JSON line, {"url": "http://127.0.0.1:<port>"}, on stdout once it answers; it
runs until SIGTERM or SIGINT. The server is llama.cpp's (continuous batching, a prompt cache per
slot, JSON-schema constrained output); xllamacpp ships it prebuilt, so nothing is compiled at
install time. It runs in its own process so that inference threads never compete with the API's
event loop for the interpreter, and a crash here costs the API nothing.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m engine.local_server", description=__doc__)
    parser.add_argument("--model", type=Path, required=True, help="GGUF file")
    parser.add_argument("--template", type=Path, required=True, help="Jinja chat template file")
    parser.add_argument("--slots", type=int, default=4, help="requests decoded together")
    parser.add_argument("--context", type=int, default=4096, help="tokens of context per slot")
    parser.add_argument(
        "--threads", type=int, default=0, help="CPU threads (0: half the cores, at least one)"
    )
    parser.add_argument(
        "--poll",
        type=int,
        default=0,
        help="how busily threads wait for work, 0..100 (0: they sleep, leaving the cores free)",
    )
    return parser.parse_args(argv)


def default_threads(cores: int | None) -> int:
    """Half the cores, at least one. llama.cpp's threads meet at a barrier many times per token,
    so when other programs take a core from one of them the others wait: on two busy cores, two
    threads decoded about ten times slower than one (bench/RESULTS.md, "The embedded model on a
    busy machine"). Half leaves the rest of the machine its share."""
    return max(1, (cores or 1) // 2)


def serve(args: argparse.Namespace) -> None:
    import os

    import xllamacpp

    threads = args.threads or default_threads(os.cpu_count())
    params = xllamacpp.CommonParams()
    params.model.path = str(args.model)
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the kernel picks a free port; it is reported below
    params.n_parallel = args.slots
    params.n_ctx = args.context * args.slots
    params.kv_unified = True  # slots share one KV pool: a long conversation may use more
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.cpuparams.poll = args.poll
    params.cpuparams_batch.poll = args.poll
    params.chat_template = args.template.read_text(encoding="utf-8")
    params.use_jinja = True
    params.cache_prompt = True
    params.swa_full = True
    params.warmup = True
    server = xllamacpp.Server(params)
    print(json.dumps({"url": server.listening_address}), flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    del server  # stops the HTTP listener and frees the model before exiting


def main(argv: list[str] | None = None) -> None:
    try:
        serve(arguments(argv))
    except Exception as exc:  # one line the parent shows, not a traceback it cannot use
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
