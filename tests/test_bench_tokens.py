"""The token counting of bench/bench_tokens.py, which other request logs are counted with too."""

from __future__ import annotations

from typing import Any

from bench.bench_tokens import count_tokens, episode_token_figures, request_text

SCHEMA = {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}}


def body(*contents: str, schema: bool = True) -> dict[str, Any]:
    roles = ["user", "assistant"]
    messages = [{"role": roles[k % 2], "content": c} for k, c in enumerate(contents)]
    return {"model": "m", "messages": messages, **({"response_format": SCHEMA} if schema else {})}


def common(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_the_encoding_is_cl100k() -> None:
    hello = {"messages": [{"role": "user", "content": "hello world"}]}
    assert count_tokens(hello) == [882, 25, 24748, 1917, 198]  # "user: hello world\n"


def test_schema_first_then_messages_and_nothing_else() -> None:
    text = request_text({**body("Hi.", "Hello."), "temperature": 0.7, "stop": ["\n"]})
    assert text == (
        '{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object"}}}\n'
        "user: Hi.\nassistant: Hello.\n"
    )


def test_uncached_counts_what_no_earlier_request_began_with() -> None:
    first = body("Scenario: a market stall. You are Ann.")
    grown = body("Scenario: a market stall. You are Ann.", '{"argument":"Hi"}', "Turn #2.")
    other = body("Scenario: a market stall. You are Bob.")
    bare = body("Scenario: a market stall. You are Ann.", schema=False)
    a, b, c, d = (count_tokens(x) for x in (first, grown, other, bare))
    total, uncached = episode_token_figures([first, grown, other, bare])
    assert total == len(a) + len(b) + len(c) + len(d)
    assert uncached == len(a) + (len(b) - len(a)) + (len(c) - common(a, c)) + len(d)
    assert 0 < common(a, c) < len(a)  # the schema and the scenario are shared
    assert episode_token_figures([first, first]) == (2 * len(a), len(a))
