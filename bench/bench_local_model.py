"""The embedded model (llama.cpp + Gemma 3 270M) on this machine: tokens/s, seconds per episode.

Run: python -m bench.bench_local_model [--episodes N] [--turns T] [--data-dir DIR]
Starts the llama.cpp server (first start assembles the GGUF under DIR/models).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from bench.support.factories import make_setup
from parley.engine.episode import simulate
from parley.engine.judge import evaluate
from parley.engine.llm import ChatRequest, ModelRegistry
from parley.engine.models import LOCAL_MODEL
from parley.engine.stats import GenerationStats


async def run(episodes: int, turns: int, data_dir: Path) -> None:
    registry = ModelRegistry(None, data_dir)
    try:
        t0 = time.perf_counter()
        await registry.local.ensure_started()
        print(f"server start (incl. GGUF assembly/sha check): {time.perf_counter() - t0:.1f} s")
        # raw generation speed: one fixed prompt, 64 tokens
        stats = GenerationStats()
        request = ChatRequest(
            messages=[
                {"role": "user", "content": "Tell a short story about a chef and a teacher."}
            ],
            max_tokens=64,
            temperature=0.7,
        )
        t0 = time.perf_counter()
        await registry.complete(LOCAL_MODEL, request, stats)
        seconds = time.perf_counter() - t0
        print(
            f"single request: {stats.completion_tokens} tokens in {seconds:.2f} s "
            f"({stats.completion_tokens / seconds:.1f} completion tokens/s, "
            f"prompt {stats.prompt_tokens} tokens)"
        )
        for k in range(episodes):
            setup = make_setup(LOCAL_MODEL, max_turns=turns, seed=k)
            t0 = time.perf_counter()
            transcript = await simulate(setup, registry)
            t1 = time.perf_counter()
            evaluation = await evaluate(setup, transcript, registry)
            t2 = time.perf_counter()
            st = transcript.stats.merge(evaluation.stats)
            overall = [round(a.overall, 2) for a in evaluation.agents]
            print(
                f"episode {k}: {transcript.turns} turns in {t1 - t0:.1f} s, judge {t2 - t1:.1f} s, "
                f"total {t2 - t0:.1f} s; requests {st.requests}, tokens {st.prompt_tokens} prompt "
                f"+ {st.completion_tokens} completion, repairs {st.repairs}, "
                f"fallbacks {st.fallbacks}; overall {overall}"
            )
            for record in transcript.actions:
                action = record
                print(f"   {record.agent_name}: {action.action_type} {action.argument!r}")
    finally:
        await registry.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="parley-bench-"))
    asyncio.run(run(args.episodes, args.turns, data_dir))


if __name__ == "__main__":
    main()
