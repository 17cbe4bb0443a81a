"""Every Lua script: loaded from storage/lua/, and naming only values Python declares."""

import importlib
import pkgutil
import re
from pathlib import Path
from typing import Any

import pytest

from parley.storage.scripts import LUA, VOCABULARY, Script, vocabulary_prelude

QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
CALL = re.compile(r"redis\.p?call\(\s*'([^']*)'")
SYNTAX = {"", "$", "[", "]", "[]", "null", "*", "-", "+", ",", ":", "{", "}"}
"""JSON and Redis syntax: the root path, list brackets, a JSON null, XADD's new id, a Stream's
first and last ids (XRANGE's - and +), the joints of an object's JSON."""
REDIS_WORDS = {"MINID", "EX"}
"""Arguments of Redis commands (XADD's trimming, SET's expiry)."""


def lua_files() -> list[Path]:
    root = Path(str(LUA))
    return sorted(root.rglob("*.lua"))


def strays(source: str, commands: set[str]) -> list[str]:
    """The quoted literals of a script that are neither a Redis command it calls nor syntax:
    a status, a path or an outcome written by hand."""
    code = re.sub(r"--[^\n]*", "", source)  # comments are prose
    return [
        literal
        for literal in QUOTED.findall(code)
        if literal not in commands and literal not in SYNTAX | REDIS_WORDS
    ]


def declared_scripts() -> list[Script[Any, Any]]:
    """The scripts every module of storage/ declares."""
    storage = importlib.import_module("parley.storage")
    names = [f"{storage.__name__}.{m.name}" for m in pkgutil.iter_modules(storage.__path__)]
    modules = [importlib.import_module(name) for name in names]
    return [v for m in modules for v in vars(m).values() if isinstance(v, Script)]


def test_every_quoted_literal_is_a_command_or_syntax() -> None:
    for path in lua_files():
        source = path.read_text(encoding="utf-8")
        commands = set(CALL.findall(source))
        assert strays(source, commands) == [], path.name


def test_a_status_written_by_hand_is_caught() -> None:
    source = "if doc.status == 'COMPLETD' then redis.call('JSON.SET', K.episode, '$.sttus', 1) end"
    assert strays(source, set(CALL.findall(source))) == ["COMPLETD", "$.sttus"]


async def test_every_command_a_script_calls_is_one_redis_has(redis_client: Any) -> None:
    called = {c for p in lua_files() for c in CALL.findall(p.read_text(encoding="utf-8"))}
    known = {str(name).upper() for name in await redis_client.command_list()}
    assert called and "NOTACOMMAND" not in known
    assert called <= known, called - known


def test_the_vocabulary_is_the_python_declarations() -> None:
    from parley.storage.models import EpisodeLog, EpisodeStatus

    assert VOCABULARY["STATUS"] == {s.name: s.value for s in EpisodeStatus}
    assert VOCABULARY["EPISODE"]["status"] == "$.status"
    assert set(VOCABULARY["EPISODE"]) == set(EpisodeLog.model_fields)


def test_a_name_not_declared_fails_to_load() -> None:
    assert "COMPLETED" in vocabulary_prelude("return STATUS.COMPLETED")
    with pytest.raises(KeyError, match=r"STATUS\.COMPLETD"):
        vocabulary_prelude("return STATUS.COMPLETD")
    with pytest.raises(KeyError, match=r"EPISODE\.sttus"):
        vocabulary_prelude("return EPISODE.sttus")


def test_every_file_is_a_declared_script_or_a_shared_function() -> None:
    names = {s.name for s in declared_scripts()}
    files = {p.stem for p in lua_files() if p.parent.name != "lib"}
    assert names == files
    for path in lua_files():  # arguments by name only: positions are the prelude's
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"\b(ARGV|KEYS)\[", source), path.name


async def test_runs_of_a_batched_script_asked_at_once_each_get_their_own_answer(
    redis_client: Any,
) -> None:
    """Sent in one pipeline, each run answers its own caller: a refusal, an error of its own,
    and a script Redis no longer holds (loaded again) leave the others' answers alone."""
    import asyncio

    import redis.asyncio as redis

    from bench.support.episodes import queued
    from parley.storage.episode_store import EpisodeStore
    from parley.storage.models import EpisodeStatus

    store = EpisodeStore(redis_client)
    pks = [await queued(redis_client, store) for _ in range(3)]
    for pk in pks:
        await store.transition(pk, EpisodeStatus.RUNNING, fence=0, attempt_mode="restart")
    await redis_client.set(store.episode_keys("not-an-episode").episode, "text")
    for _ in range(2):
        marks = [store.mark(pk, attempt, {"reasoning": pk}) for pk in pks for attempt in (1, 2)]
        broken = store.mark("not-an-episode", 1, {"reasoning": "x"})
        *answers, error = await asyncio.gather(*marks, broken, return_exceptions=True)
        assert answers == [True, False] * 3
        assert isinstance(error, redis.ResponseError)
        await redis_client.script_flush()
    for pk in pks:
        key = store.episode_keys(pk).episode
        reasoning = await redis_client.execute_command("JSON.GET", key, "$.reasoning")
        assert pk in str(reasoning)
