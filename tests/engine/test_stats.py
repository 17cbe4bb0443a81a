"""Generation counters add up, their usage by model too, and usage stays out of the dump."""

from parley.engine.stats import GenerationStats
from parley.engine.usage import TokenCount


def test_merge_sums_every_counter_and_the_usage_by_model() -> None:
    one = GenerationStats(requests=2, retries=1, llm_seconds=0.5, usage={"a": TokenCount(10, 2)})
    two = GenerationStats(
        requests=3, failures=1, llm_seconds=0.25, usage={"a": TokenCount(1, 1), "b": TokenCount(5)}
    )
    total = one.merge(two)
    assert (total.requests, total.retries, total.failures, total.llm_seconds) == (5, 1, 1, 0.75)
    assert total.usage == {"a": TokenCount(11, 3), "b": TokenCount(5)}
    assert one.requests == 2 and one.usage == {"a": TokenCount(10, 2)}


def test_usage_is_kept_out_of_the_stored_counters() -> None:
    dumped = GenerationStats(requests=1, usage={"a": TokenCount(1)}).model_dump()
    assert "usage" not in dumped and dumped["requests"] == 1
