"""What RediSearch reads through a score's JSONPath (storage/results_index.py), checked on the
real server: a dimension name of any character but NUL reads its score back; at a NUL the path
is cut, so the field reads something else. resolvers/dimensions.py refuses names by this."""

import uuid
from typing import Any

import redis.asyncio as redis

from parley.storage.results_index import score_field, score_path

SCORE = 5.0
NAMES = [
    *(f"a{chr(code)}b" for code in range(1, 0x80)),
    *("\\", '"', '\\"', '"]', "']", "[", "$", "..", "*", "@", "x" * 200, "😀" * 200, "é\u2028"),
]


async def means(client: redis.Redis, names: list[str]) -> dict[str, str | None]:
    """Each name's mean score over one document scored SCORE on every name, read through an
    index of its own."""
    found: dict[str, str | None] = {}
    for name in names:
        index, prefix = f"test:paths:{uuid.uuid4().hex}", f"test:paths:{uuid.uuid4().hex}:"
        field = score_field(0, name)
        await client.execute_command(  # type: ignore[no-untyped-call]
            "FT.CREATE", index, "ON", "JSON", "PREFIX", 1, prefix, "SCHEMA",
            score_path(0, name), "AS", field, "NUMERIC", "SORTABLE",
        )  # fmt: skip
        try:
            document: dict[str, Any] = {"rewards": [[7.0, {name: SCORE, "a": 1.0, "b": 2.0}]]}
            await client.json().set(f"{prefix}1", "$", document)
            reply = await client.execute_command(  # type: ignore[no-untyped-call]
                "FT.AGGREGATE", index, "*", "GROUPBY", 0,
                "REDUCE", "AVG", 1, f"@{field}", "AS", "mean",
            )  # fmt: skip
            rows = reply["results"] if isinstance(reply, dict) else reply[1:]
            row = (
                rows[0]["extra_attributes"]
                if isinstance(reply, dict)
                else dict(zip(rows[0][::2], rows[0][1::2], strict=True))
            )
            found[name] = row.get("mean")
        finally:
            await client.execute_command("FT.DROPINDEX", index, "DD")  # type: ignore[no-untyped-call]
    return found


async def test_every_character_but_nul_reads_its_score_back(redis_client: redis.Redis) -> None:
    assert await means(redis_client, NAMES) == {name: str(int(SCORE)) for name in NAMES}


async def test_a_nul_cuts_the_path(redis_client: redis.Redis) -> None:
    assert await means(redis_client, ["a\x00b"]) != {"a\x00b": str(int(SCORE))}
