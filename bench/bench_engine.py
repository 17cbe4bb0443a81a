"""The engine's own CPU cost per turn, with an instant in-process fake model (no HTTP).

Run: python -m bench.bench_engine [--episodes N] [--turns T]
"""

from __future__ import annotations

import json
import time

from bench.common import run_main
from bench.support.factories import make_setup
from parley.engine.episode import simulate
from parley.engine.judge import evaluate
from parley.engine.llm import ChatRequest
from parley.engine.models import ModelInfo, custom_model_info
from parley.engine.stats import GenerationStats


class InstantRouter:
    """Answers at once: a speak action, or mid-range scores for the judge's schema."""

    def __init__(self) -> None:
        info = custom_model_info("custom/instant@http://127.0.0.1:9/v1")
        assert info is not None
        self.info = info
        self.lines = 0

    def resolve(self, name: str) -> ModelInfo:
        return self.info

    async def complete(self, model: str, request: ChatRequest, stats: GenerationStats) -> str:
        stats.requests += 1
        schema = request.schema or {}
        if "action_type" in schema.get("properties", {}):
            self.lines += 1  # a new line each time: agents that repeat themselves are re-asked
            line = f"That sounds fair to me ({self.lines})."
            return json.dumps({"action_type": "speak", "argument": line, "to": []})
        scores = {
            name: {
                "reasoning": "ok",
                "score": (
                    prop["properties"]["score"]["minimum"] + prop["properties"]["score"]["maximum"]
                )
                // 2,
            }
            for name, prop in schema.get("properties", {}).items()
        }
        return json.dumps(scores)


async def run(episodes: int = 200, turns: int = 20) -> None:
    router = InstantRouter()
    setup = make_setup("custom/instant@http://127.0.0.1:9/v1", max_turns=turns)
    await simulate(setup, router)  # warm up imports and caches
    cpu0, wall0 = time.process_time(), time.perf_counter()
    total_turns = 0
    for _ in range(episodes):
        transcript = await simulate(setup, router)
        total_turns += transcript.turns
    cpu_sim = time.process_time() - cpu0
    wall_sim = time.perf_counter() - wall0
    transcript = await simulate(setup, router)
    cpu1 = time.process_time()
    for _ in range(episodes):
        await evaluate(setup, transcript, router)
    cpu_judge = time.process_time() - cpu1
    print(f"episodes={episodes} turns/episode={turns} total turns={total_turns}")
    print(
        f"engine CPU per turn: {cpu_sim / total_turns * 1000:.3f} ms "
        f"(wall {wall_sim / total_turns * 1000:.3f} ms)"
    )
    print(f"judge CPU per episode (2 agents x 7 dimensions): {cpu_judge / episodes * 1000:.3f} ms")


if __name__ == "__main__":
    run_main(run, __doc__)
