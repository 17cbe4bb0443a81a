"""Storage owns every Redis write: no package but storage/ writes to Redis or carries Lua.

The scan reads each module's syntax tree. A write is a call of a Redis writing command (by
redis-py's method name), of `execute_command` naming one, of a redis-om model's `save`, or of
a name that is also Python's (`set`, `delete`, `expire`, ...) on what holds a Redis client, a
pipeline, a JSON handle or a model class. Reads may be anywhere.
"""

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import repo_root

WRITING_NAMES = """
hset hsetnx hmset hdel hincrby hincrbyfloat mset msetnx setex psetex setnx setrange getset getdel
getex incr incrby incrbyfloat decr decrby pexpire expireat pexpireat persist renamenx lpush rpush
lpushx rpushx lpop rpop lset lrem ltrim linsert lmove blmove rpoplpush blpop brpop sadd srem spop
smove sinterstore sunionstore sdiffstore zadd zrem zincrby zpopmin zpopmax bzpopmin bzpopmax
zremrangebyscore zremrangebyrank zremrangebylex zunionstore zinterstore zdiffstore zrangestore
xadd xdel xtrim xack xclaim xautoclaim xreadgroup xgroup_create xgroup_destroy xgroup_setid
xgroup_delconsumer pfadd pfmerge geoadd setbit bitop flushdb flushall eval evalsha fcall
register_script script_load function_load save arrappend arrinsert arrpop arrtrim numincrby
strappend
"""
WRITING = frozenset(WRITING_NAMES.split())
"""Redis commands that write, by redis-py's (and its JSON handle's) method names."""

SHARED = frozenset({"set", "delete", "expire", "unlink", "rename", "update", "add", "merge"})
"""Writing names Python's own types use too: a write only on a Redis receiver."""

REDIS_RECEIVERS = ("client", "pipe", "pipeline", "redis", "connection", "conn")
"""How the code names what holds a Redis client or pipeline (`client`, `self.client`, ...)."""

WRITING_COMMANDS = frozenset(
    {"SET", "DEL", "UNLINK", "EXPIRE", "HSET", "XADD", "ZADD", "ZREM", "EVAL", "EVALSHA"}
    | {"FCALL", "FT.CREATE", "FT.DROPINDEX", "FT.ALTER"}
    | {f"JSON.{c}" for c in ("SET", "MSET", "DEL", "FORGET", "ARRAPPEND", "ARRINSERT")}
    | {f"JSON.{c}" for c in ("ARRPOP", "ARRTRIM", "NUMINCRBY", "STRAPPEND", "TOGGLE", "MERGE")}
)
"""Commands `execute_command` may name that write."""


def model_classes(tree: ast.Module) -> set[str]:
    """The names a module imports from storage's models or from redis-om."""
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module
        and (node.module.endswith("storage.models") or node.module.startswith("aredis_om"))
        for alias in node.names
    }


def redis_receiver(node: ast.expr, models: set[str]) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("json", "pipeline", "ft")  # client.json().set(...)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id == "type"  # type(record).delete(...)
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name in models or name.lower().endswith(REDIS_RECEIVERS)


def writes(source: str, path: str = "<source>") -> Iterator[str]:
    """Each Redis write and each use of Lua in a module's source, as `path:line: what`."""
    tree = ast.parse(source, path)
    models = model_classes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if "redis.call" in text or text.endswith(".lua"):
                yield f"{path}:{node.lineno}: Lua {text[:40]!r}"
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, receiver = node.func.attr, node.func.value
        command = node.args[0] if node.args else None
        if (
            name in WRITING
            or (name in SHARED and redis_receiver(receiver, models))
            or (
                name == "execute_command"
                and isinstance(command, ast.Constant)
                and str(command.value).upper() in WRITING_COMMANDS
            )
        ):
            yield f"{path}:{node.lineno}: {ast.unparse(node.func)}"


def source_files() -> Iterator[Path]:
    """Every module of every installed package but storage."""
    project = tomllib.loads((repo_root() / "pyproject.toml").read_text(encoding="utf-8"))
    for package, folder in project["tool"]["setuptools"]["package-dir"].items():
        if package != "parley.storage":
            yield from sorted((repo_root() / folder).rglob("*.py"))


def test_no_package_but_storage_writes_to_redis() -> None:
    found = [
        line
        for path in source_files()
        for line in writes(path.read_text(encoding="utf-8"), str(path.relative_to(repo_root())))
    ]
    assert found == []


def test_the_scan_reads_every_package_but_storage() -> None:
    folders = {path.relative_to(repo_root()).parts[0] for path in source_files()}
    assert {"graph", "lifecycle", "resolvers", "engine", "core"} <= folders
    assert "storage" not in folders


@pytest.mark.parametrize(
    "planted",
    [
        "await client.hset(key, mapping={'a': 1})",
        "await self.client.set(key, 1)",
        "await services.client.delete(key)",
        "pipe.zrem(key, member)",
        "pipe.json().set(key, '$', {})",
        "pipe.execute_command('JSON.SET', key, '$', '{}', 'NX')",
        "await EpisodeLog.delete(pk)",
        "await type(record).delete(pk)",
        "await record.save()",
        "client.register_script(text)",
        "client.eval(\"return redis.call('GET', KEYS[1])\", 1, key)",
        "path = 'claim_seat.lua'",
    ],
)
def test_the_scan_finds_a_planted_write(planted: str) -> None:
    source = f"from parley.storage.models import EpisodeLog\n\nasync def f():\n    {planted}\n"
    assert {line.split(": ", 1)[0] for line in writes(source)} == {"<source>:4"}


@pytest.mark.parametrize(
    "read",
    [
        "await client.get(key)",
        "await pipe.json().get(key, '$.status')",
        "pipe.execute_command('FT.SEARCH', index, '*')",
        "found.update({'a': 1})",
        "stopping.set()",
        "seen.add(key)",
        "await simulations.delete(services, pk)",
    ],
)
def test_the_scan_leaves_reads_and_python_alone(read: str) -> None:
    source = f"async def f():\n    {read}\n"
    assert list(writes(source)) == []
