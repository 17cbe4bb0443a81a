"""graph/cli.py: `parley redis-url --data-dir D` prints the URL of the embedded Redis a
`parley serve` of that data directory runs, as the README says every `parley` command finds it
by itself ("Sotopia's own code reads the same records": `REDIS_OM_URL=$(parley redis-url)`).

With `parley serve --open-dump dump.rdb --data-dir D`, the Redis runs on a copy under
`D/dumps/<name>/redis`, with its password and URL file there; `parley redis-url --data-dir D`
looks only in `D/redis` and says "no embedded Redis is running for D" (exit 1) while one runs.
"""

from pathlib import Path

import pytest
import redis.asyncio as redis

from bench.support.processes import ApiProcess, embedded_env, parley_env, run
from parley.storage.embedded import EmbeddedRedis


async def a_dump(tmp_path: Path) -> Path:
    """dump.rdb of a throwaway embedded Redis holding one key."""
    home = tmp_path / "made"
    server = EmbeddedRedis(home)
    client = redis.Redis.from_url(await server.start(), decode_responses=True)
    try:
        await client.set("from-the-dump", "yes")
        await client.save()
    finally:
        await client.aclose()
        await server.stop()
    dump = tmp_path / "published.rdb"
    dump.write_bytes((home / "redis" / "dump.rdb").read_bytes())
    return dump


async def test_redis_url_finds_the_redis_of_an_opened_dump(tmp_path: Path) -> None:
    dump = await a_dump(tmp_path)
    data = tmp_path / "data"
    env = embedded_env(data, worker="false")
    api = ApiProcess(env, tmp_path / "api.log", "--open-dump", str(dump), "--no-worker")
    try:
        found = await run("redis-url", "--data-dir", str(data), env=env, timeout=60)
        assert found.returncode == 0, found.stderr
        client = redis.Redis.from_url(found.stdout.strip(), decode_responses=True)
        try:
            assert await client.get("from-the-dump") == "yes"
        finally:
            await client.aclose()
    finally:
        api.stop()


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("redis+sentinel://:hunter2@host:99999/mymaster", "has no port from 1 to 65535"),
        ("redis+sentinel://u:hunter2@host@127.0.0.1:1/svc", "has one @"),
        ("redis://:hunter2@127.0.0.1:1/0", "cannot reach Redis at redis://127.0.0.1:1/0"),
        ("redis+sentinel://:hunter2@127.0.0.1:1/svc", "Sentinel service 'svc' at 127.0.0.1:1"),
        # the host left out: the password reads as a port
        ("redis://:hunter2", "not one redis-py can use"),
        ("redis://default:hunter2/0", "not one redis-py can use"),
        ("redis+sentinel://default:hunter2/svc", "Sentinel 'default' has no port"),
        ("redis://:pw@127.0.0.1:hunter2/0", "not one redis-py can use"),
        ("redis://127.0.0.1:6379/0?ssl_cert_reqs=hunter2", "not one redis-py can use"),
        ("redis://127.0.0.1:6379/0?db=hunter2", "not one redis-py can use"),
    ],
)
async def test_a_bad_or_unreachable_redis_is_said_in_a_line_without_its_password(
    tmp_path: Path, url: str, said: str
) -> None:
    env = {**parley_env(url, tmp_path / "data"), "PARLEY_SENTINELS": ""}
    done = await run("worker", env=env, timeout=60)
    assert done.returncode != 0
    assert said in done.stderr, done.stderr
    assert "hunter2" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "om_url",
    [
        "redis+sentinel://:hunter2@127.0.0.1:26379/mymaster",
        "redis://:hunter2",
        "redis://127.0.0.1:6379/0?db=hunter2",
    ],
)
@pytest.mark.parametrize("command", ["worker", "seed", "export-schema"])
async def test_a_redis_om_url_redis_om_cannot_read_is_said_in_a_line(
    redis_url: str, tmp_path: Path, om_url: str, command: str
) -> None:
    # redis-om reads REDIS_OM_URL when Parley's models load, before any of Parley's settings
    env = {**parley_env(redis_url, tmp_path / "data"), "REDIS_OM_URL": om_url}
    done = await run(command, env=env, timeout=60)
    assert done.returncode != 0
    assert "REDIS_OM_URL is not a URL redis-om can use" in done.stderr, done.stderr
    assert "hunter2" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
