"""Every Lua script Parley runs: loaded from storage/lua/, declared and registered here.

A script is a `.lua` file declared once by a `Script`: the names of its KEYS and of its ARGV, as
two NamedTuples whose fields are the order they are sent in (so a caller names every argument
and mypy checks it), and the shared functions it uses (storage/lua/lib/). What runs is a
generated prelude, then those functions, then the file. The prelude binds `K.<name>` and
`A.<name>` to KEYS and ARGV, collects what follows them in `MORE_KEYS` and `MORE_ARGS`, and
defines the vocabulary a script names (`STATUS.WAITING`, `EPISODE.status` for `$.status`, ...)
from its Python declarations: a script writes no status, JSON path, event kind or outcome of its
own, and one that names something undeclared fails to load.
"""

from __future__ import annotations

import asyncio
import json
import re
import weakref
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from typing import Any, NamedTuple, get_args

import redis.asyncio as redis
from pydantic import BaseModel
from redis.asyncio.client import Pipeline
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

from parley.storage.durability import acks_of, run_acknowledged
from parley.storage.events import EpisodeEvent, EventKind
from parley.storage.events_log import ENTRY_FIELD
from parley.storage.models import (
    EpisodeLog,
    EpisodeStatus,
    Evaluation,
    EvaluationStatus,
    HumanSeat,
    RatingStudy,
    SeatTimeout,
    StoredInjection,
    StoredTurn,
    StudyRater,
    Waiting,
)
from parley.storage.vocabulary import (
    ActRefusal,
    AttemptMode,
    ImportOutcome,
    LimitField,
    PauseMode,
    RatingRefusal,
    RelationshipRefusal,
)

Arg = str | int | float


def _paths(model: type[BaseModel], root: str = "$") -> dict[str, str]:
    """The JSONPath of each field of a record (or, with root "", its suffix in a larger one)."""
    return {name: f"{root}.{name}" for name in model.model_fields}


def _values(enum: type[StrEnum]) -> dict[str, str]:
    return {member.name: member.value for member in enum}


def _literal(alias: Any) -> dict[str, str]:
    return {value: value for value in get_args(alias)}


VOCABULARY: dict[str, dict[str, str]] = {
    "STATUS": _values(EpisodeStatus),
    "EVALUATION_STATUS": _values(EvaluationStatus),
    "SEAT_TIMEOUT": _values(SeatTimeout),
    "EVENT": {member.name: member.value for member in EventKind},
    "EVENT_FIELD": {name: name for name in EpisodeEvent.model_fields},
    "ATTEMPT_MODE": _literal(AttemptMode),
    "PAUSE_MODE": _literal(PauseMode),
    "EPISODE": _paths(EpisodeLog),
    "SEAT": _paths(HumanSeat, ""),
    "WAITING": _paths(Waiting, ""),
    "INJECTION": _paths(StoredInjection, ""),
    "TURN": _paths(StoredTurn, ""),
    "LOG_ENTRY": {"event": ENTRY_FIELD},
    "EVALUATION": {**_paths(Evaluation), "starts": "$.starts"},
    "ACT_REFUSAL": _values(ActRefusal),
    "IMPORT_OUTCOME": _values(ImportOutcome),
    "RELATIONSHIP_REFUSAL": _values(RelationshipRefusal),
    "STUDY": _paths(RatingStudy),
    "RATER": _paths(StudyRater, ""),
    "RATING_REFUSAL": _values(RatingRefusal),
    "LIMIT": _values(LimitField),
}
"""Every name a script may use for a value Python declares: the statuses, the record fields'
JSON paths (`EPISODE.status` is `$.status`; `SEAT.token_hash` is `.token_hash`, to follow a path
into a list of seats), the event kinds, the modes and the outcomes a script returns."""

_NAMED = re.compile(r"\b([A-Z][A-Z_]*)\.([A-Za-z_][A-Za-z0-9_]*)")
LUA = resources.files("parley.storage") / "lua"


def lua_source(name: str) -> str:
    return (LUA / f"{name}.lua").read_text(encoding="utf-8")


def _lua_string(value: str) -> str:
    return json.dumps(value)  # a double-quoted JSON string is a Lua string too (ASCII here)


def vocabulary_prelude(body: str) -> str:
    """`local STATUS = {WAITING = "WAITING"}` and the like, for the names `body` uses. KeyError
    for a name not declared."""
    used: dict[str, set[str]] = {}
    for space, name in _NAMED.findall(body):
        if space in VOCABULARY:
            if name not in VOCABULARY[space]:
                raise KeyError(f"{space}.{name} is not declared (storage/scripts.py VOCABULARY)")
            used.setdefault(space, set()).add(name)
    return "".join(
        f"local {space} = {{"
        + ", ".join(f"{n} = {_lua_string(VOCABULARY[space][n])}" for n in sorted(names))
        + "}\n"
        for space, names in sorted(used.items())
    )


def _bind(table: str, source: str, names: Sequence[str]) -> str:
    fields = ", ".join(f"{name} = {source}[{i}]" for i, name in enumerate(names, 1))
    return f"local {table} = {{{fields}}}\n"


def _more(table: str, source: str, after: int) -> str:
    return (
        f"local {table} = {{}}\n"
        f"for i = {after + 1}, #{source} do {table}[#{table} + 1] = {source}[i] end\n"
    )


@dataclass
class _Run:
    script: AsyncScript
    keys: list[Any]
    args: list[Any]
    done: asyncio.Future[Any]


_waiting: weakref.WeakKeyDictionary[redis.Redis, list[_Run]] = weakref.WeakKeyDictionary()
"""Per client, the runs of batched scripts asked for in this turn of the event loop."""
_sending: set[asyncio.Task[None]] = set()


def _ask(client: redis.Redis, run: _Run) -> None:
    runs = _waiting.get(client)
    if runs is None:
        runs = _waiting[client] = []
        asyncio.get_running_loop().call_soon(_send, client)
    runs.append(run)


def _send(client: redis.Redis) -> None:
    runs = _waiting.pop(client, [])
    task = asyncio.ensure_future(_pipelined(client, runs))
    _sending.add(task)
    task.add_done_callback(_sending.discard)


async def _pipelined(client: redis.Redis, runs: list[_Run]) -> None:
    """Send the runs in one pipeline (EVALSHA each; one its script is not loaded for, as Redis
    restarted, is run again on its own, which loads it), each caller given its own answer."""
    if len(runs) == 1:
        (run,) = runs
        await _settle(run, run.script(keys=run.keys, args=run.args))
        return
    try:
        async with client.pipeline(transaction=False) as pipe:
            for run in runs:
                pipe.evalsha(run.script.sha, len(run.keys), *run.keys, *run.args)
            replies: list[Any] = await pipe.execute(raise_on_error=False)
    except Exception as err:  # the connection failed: so did every run of it
        replies = [err] * len(runs)
    for run, reply in zip(runs, replies, strict=True):
        if isinstance(reply, NoScriptError):
            await _settle(run, run.script(keys=run.keys, args=run.args))
        elif not run.done.done():
            if isinstance(reply, Exception):
                run.done.set_exception(reply)
            else:
                run.done.set_result(reply)


async def _settle(run: _Run, answer: Awaitable[Any]) -> None:
    try:
        found = await answer
    except Exception as err:
        if not run.done.done():
            run.done.set_exception(err)
        return
    if not run.done.done():
        run.done.set_result(found)


class Script[K: tuple[Any, ...], A: tuple[Any, ...]]:
    """One `.lua` file, with the names of its KEYS (`keys`) and ARGV (`args`) in order.

    A `batched` script's runs asked for in one turn of the event loop (by the many episodes of a
    worker) go to Redis in one pipeline, each still its own atomic script, each caller awaiting
    its own answer: a round trip of its own cost a busy worker more CPU than the rest of what it
    did for a model call (bench/RESULTS.md, issue 27). A run asked for is then sent even if its
    caller is cancelled meanwhile, as a command already written would be."""

    def __init__(
        self,
        name: str,
        keys: type[K],
        args: type[A],
        uses: tuple[str, ...] = (),
        *,
        acknowledged: bool = False,
        batched: bool = False,
    ) -> None:
        self.name = name
        self.acknowledged = acknowledged
        """A write a client or a worker is told has happened: with replicas to acknowledge
        it (storage/durability.py), it is done once they have it."""
        self.batched = batched
        key_names: tuple[str, ...] = getattr(keys, "_fields")  # noqa: B009 (a NamedTuple)
        arg_names: tuple[str, ...] = getattr(args, "_fields")  # noqa: B009
        self.key_count, self.arg_count = len(key_names), len(arg_names)
        body = "".join(lua_source(f"lib/{lib}") for lib in uses) + lua_source(name)
        prelude = _bind("K", "KEYS", key_names) + _bind("A", "ARGV", arg_names)
        if "MORE_KEYS" in body:
            prelude += _more("MORE_KEYS", "KEYS", len(key_names))
        if "MORE_ARGS" in body:
            prelude += _more("MORE_ARGS", "ARGV", len(arg_names))
        self.source = prelude + vocabulary_prelude(body) + body
        self._registered: weakref.WeakKeyDictionary[redis.Redis, AsyncScript] = (
            weakref.WeakKeyDictionary()
        )

    async def __call__(
        self,
        client: redis.Redis,
        keys: K,
        args: A,
        more_keys: Sequence[str] = (),
        more_args: Sequence[Arg] = (),
    ) -> Any:
        """Run the script with `keys` and `args` (then `more_keys` and `more_args`)."""
        script = self._registered.get(client)
        if script is None:
            script = self._registered[client] = client.register_script(self.source)
        acks = acks_of(client) if self.acknowledged else None
        if acks is not None:
            return await run_acknowledged(
                client, acks, script, [*keys, *more_keys], [*args, *more_args]
            )
        if not self.batched or isinstance(client, Pipeline):
            return await script(keys=[*keys, *more_keys], args=[*args, *more_args])
        done = asyncio.get_running_loop().create_future()
        run = _Run(script, [*keys, *more_keys], [*args, *more_args], done)
        _ask(client, run)
        return await run.done


class NoKeys(NamedTuple):
    """A script whose keys are all in MORE_KEYS."""


class NoArgs(NamedTuple):
    """A script whose arguments are all in MORE_ARGS."""
