"""The ledger of model calls: each episode's calls in a Stream, the bodies they send stored once.

A call's entry (`StoredCall`) names its messages and its response format by the SHA-256 of their
canonical JSON (engine/ledger.py); each body is stored once at `keys.call_body(hash)` and counted
once per episode that refers to it (`keys.CALL_BODY_REFS`), so the system prompt every turn of
every episode repeats is one string, and deleting the last episode that sends it frees it.
Appending is one script per call (`append_call.lua`); deleting, by the episode's deletion or the
retention sweep, is one (`delete_calls.lua`).

The request of a call is kept exactly as sent: its messages are the bodies in order, its
response format the schema's body, and every other key of the JSON body is `params`; together
they give back the body whose hash is `request` (how a replay finds the recorded answer).
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, NamedTuple

import redis.asyncio as redis
from pydantic import BaseModel, ConfigDict, Field

from parley.engine.ledger import (
    CallPurpose,
    ModelCall,
    Served,
    canonical,
    canonical_request,
    text_hash,
)
from parley.storage import keys
from parley.storage.scripts import Script
from parley.storage.vocabulary import ImportOutcome

log = logging.getLogger("parley.ledger")

CALL_FIELD = "call"
"""The field of a ledger entry that holds its call's JSON."""
DAY = 86400.0
SWEEP_BATCH = 100


class StoredCall(BaseModel):
    """One model call as its ledger entry holds it."""

    model_config = ConfigDict(extra="forbid")

    attempt: int = Field(ge=0)
    """The episode's attempt that made the call."""
    purpose: CallPurpose
    seat: int | None = Field(default=None, ge=0)
    turn: int | None = Field(default=None, ge=0)
    judge: str | None = None
    model: str
    params: dict[str, Any]
    """The request body's keys besides `messages` and `response_format` (model, sampling)."""
    messages: list[str]
    """The hash of each message sent, in order."""
    schema_hash: str | None = None
    """The hash of the `response_format` sent, if one was."""
    request: str
    """The hash of the whole request body."""
    answer: str | None = None
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    estimated_tokens: int = Field(default=0, ge=0)
    latency_ms: float = Field(ge=0)
    attempts: int = Field(ge=0)
    error_code: str | None = None
    error_message: str | None = None
    served: Served | None = None
    """Set for a call that asked no model: answered from a replayed ledger or the cache."""
    served_from: str | None = None
    """The episode whose ledger gave the answer."""
    at: float
    """When the call ended (epoch seconds)."""

    @property
    def answered(self) -> bool:
        """A model's own answer (not a failure, nor one served from a ledger): what the cache
        may give again."""
        failed = self.error_code is not None or self.error_message is not None
        return self.answer is not None and not failed and self.served is None

    def hashes(self) -> list[str]:
        return [*self.messages, *([self.schema_hash] if self.schema_hash else [])]

    def body(self, bodies: dict[str, Any]) -> dict[str, Any]:
        """The request body as sent, from its bodies by hash (KeyError for one missing)."""
        request: dict[str, Any] = dict(self.params)
        if self.schema_hash:
            request["response_format"] = bodies[self.schema_hash]
        request["messages"] = [bodies[h] for h in self.messages]
        return request


ENCODED_MESSAGES = 4096
"""How many messages' canonical JSON and hash `stored_call` keeps (then it starts over)."""
_encoded: dict[tuple[tuple[str, Any], ...], tuple[str, str]] = {}
"""Each message's canonical JSON and its hash, by its keys and values: every call of a
conversation sends its earlier messages again."""


def _encode(value: Any) -> tuple[str, str]:
    """A body's canonical JSON and its hash; a message of text fields is encoded once."""
    key = tuple(value.items()) if isinstance(value, dict) else None
    if key is not None and all(isinstance(v, str) for _, v in key):
        found = _encoded.get(key)
        if found is None:
            if len(_encoded) >= ENCODED_MESSAGES:
                _encoded.clear()
            text = canonical(value)
            found = _encoded[key] = (text, text_hash(text))
        return found
    text = canonical(value)
    return text, text_hash(text)


def stored_call(call: ModelCall, at: float) -> tuple[StoredCall, dict[str, str]]:
    """A call's entry and the canonical JSON of each body it refers to, by hash."""
    sent = call.request
    bodies: dict[str, str] = {}
    texts: list[str] = []

    def named(value: Any) -> str:
        text, digest = _encode(value)
        texts.append(text)
        bodies[digest] = text
        return digest

    schema = sent.get("response_format")
    messages = [named(m) for m in sent.get("messages", [])]
    parts = {"messages": "[" + ",".join(texts) + "]"} if "messages" in sent else {}
    schema_hash = None if schema is None else named(schema)
    if schema is not None:
        parts["response_format"] = texts[-1]
    scope = call.scope
    entry = StoredCall(
        attempt=scope.attempt,
        purpose=scope.purpose,
        seat=scope.seat,
        turn=scope.turn,
        judge=scope.judge,
        model=call.model,
        params={k: v for k, v in sent.items() if k not in ("messages", "response_format")},
        messages=messages,
        schema_hash=schema_hash,
        request=text_hash(canonical_request(sent, parts)),
        answer=call.answer,
        prompt_tokens=call.tokens.prompt_tokens,
        completion_tokens=call.tokens.completion_tokens,
        estimated_tokens=call.tokens.estimated_tokens,
        latency_ms=round(call.latency_ms, 3),
        attempts=call.attempts,
        error_code=call.error_code,
        error_message=call.error_message,
        served=call.served,
        served_from=call.served_from,
        at=at,
    )
    return entry, bodies


class AppendKeys(NamedTuple):
    calls: str
    bodies: str
    refs: str
    ledgers: str
    answers: str


class AppendArgs(NamedTuple):
    field: str
    entry: str
    now: float
    episode: str
    request: str
    """The request's hash for the cache to answer it with this call; "": not cached."""


class DeleteArgs(NamedTuple):
    body_prefix: str
    episode: str
    before: float | str
    """Delete only a ledger whose last call ended before this (epoch seconds); "": any."""


class ImportKeys(NamedTuple):
    calls: str
    bodies: str
    refs: str
    ledgers: str
    answers: str
    episode: str


class ImportArgs(NamedTuple):
    id: str
    field: str
    entry: str
    now: float
    episode: str
    request: str


APPEND = Script("append_call", AppendKeys, AppendArgs, batched=True)
IMPORT = Script("import_call", ImportKeys, ImportArgs)
DELETE = Script("delete_calls", AppendKeys, DeleteArgs)


def _keys(episode_id: str) -> AppendKeys:
    return AppendKeys(
        keys.model_calls(episode_id),
        keys.model_call_bodies(episode_id),
        keys.CALL_BODY_REFS,
        keys.CALL_LEDGERS,
        keys.CALL_ANSWERS,
    )


async def append(
    client: redis.Redis, episode_id: str, entry: StoredCall, bodies: dict[str, str]
) -> str:
    """Append one call to the episode's ledger with the bodies it refers to; its entry id."""
    hashes = list(bodies)
    texts = [part for h in hashes for part in (h, bodies[h])]
    request = entry.request if entry.answered else ""
    args = AppendArgs(CALL_FIELD, entry.model_dump_json(), entry.at, episode_id, request)
    entry_id = await APPEND(
        client, _keys(episode_id), args, [keys.call_body(h) for h in hashes], texts
    )
    return str(entry_id)


async def restore(
    client: redis.Redis,
    episode_key: str,
    episode_id: str,
    entry_id: str,
    entry: StoredCall,
    bodies: dict[str, str | None],
) -> tuple[ImportOutcome, str]:
    """Put an exported call back at its entry id in the ledger of the stored episode (at
    `episode_key`), with the bodies it refers to (None: given by an earlier call, so stored
    already): CREATED; SKIPPED when the ledger holds that id; UNORDERED when it holds a later
    one but not that one; MISSING without the episode; INCOMPLETE (with the hash) for a body
    neither given nor stored."""
    hashes = list(bodies)
    texts = [part for h in hashes for part in (h, bodies[h] or "")]
    outcome, detail = await IMPORT(
        client,
        ImportKeys(*_keys(episode_id), episode_key),
        ImportArgs(
            entry_id,
            CALL_FIELD,
            entry.model_dump_json(),
            entry.at,
            episode_id,
            entry.request if entry.answered else "",
        ),
        [keys.call_body(h) for h in hashes],
        texts,
    )
    return ImportOutcome(outcome), str(detail)


async def delete(client: redis.Redis, episode_id: str, before: float | None = None) -> int:
    """Delete the episode's ledger (with `before`, only if its last call ended before that);
    how many bodies no other ledger referred to were freed, or -1 when it was kept."""
    args = DeleteArgs(keys.CALL_BODY_PREFIX, episode_id, "" if before is None else before)
    freed = await DELETE(client, _keys(episode_id), args)
    return int(freed)


async def sweep(client: redis.Redis, older_than: float, limit: int = SWEEP_BATCH) -> int:
    """Delete the ledgers whose last call ended before `older_than` (epoch seconds), up to
    `limit` of them; how many were deleted."""
    stale: Any = await client.zrangebyscore(
        keys.CALL_LEDGERS, "-inf", f"({older_than}", start=0, num=limit
    )
    deleted = 0
    for episode_id in stale:
        deleted += await delete(client, episode_id, older_than) >= 0
    return deleted


KNOWN_EPISODES = 4096
"""Episodes whose stored bodies a Ledger remembers (the most recently written)."""


class Ledger:
    """Keeps the model calls of episodes for `retention_days` (engine/ledger.py's CallLedger).

    Writing a call never fails the call: a Redis error is logged and counted in `failures`.
    A body this ledger has stored for an episode is not sent again with the episode's later
    calls (each sends every message of its conversation so far): the script would store
    nothing for it. Only an episode deleted while its calls are still being made can be left
    with calls whose earlier bodies are gone, in a ledger nobody reads."""

    def __init__(self, client: redis.Redis, retention_days: float) -> None:
        self.client = client
        self.retention_days = retention_days
        self.failures = 0
        self._stored: OrderedDict[str, set[str]] = OrderedDict()
        """The hashes of the bodies stored for each episode, as far as this ledger knows."""

    async def record(self, call: ModelCall) -> None:
        episode_id = call.scope.episode_id
        episode = {"episode": episode_id}
        try:
            entry, bodies = stored_call(call, time.time())
            known = self._stored.get(episode_id, set())
            new = {digest: text for digest, text in bodies.items() if digest not in known}
            await append(self.client, episode_id, entry, new)
            self._stored[episode_id] = self._stored.get(episode_id, set()) | new.keys()
            self._stored.move_to_end(episode_id)
            if len(self._stored) > KNOWN_EPISODES:
                self._stored.popitem(last=False)
        except (redis.RedisError, OSError) as err:
            self.failures += 1
            log.warning("model call not recorded: %s", err, extra=episode)
        except Exception:  # a bug here must not fail the episode whose call it was
            self.failures += 1
            log.exception("model call not recorded", extra=episode)

    async def sweep(self, now: float | None = None) -> int:
        """Delete every ledger past the retention window, a batch at a time (a batch that
        comes back short is the last); how many were deleted."""
        cutoff = (time.time() if now is None else now) - self.retention_days * DAY
        total = 0
        while (deleted := await sweep(self.client, cutoff)) == SWEEP_BATCH:
            total += deleted
        return total + deleted


async def read_bodies(client: redis.Redis, hashes: Sequence[str]) -> dict[str, Any]:
    """The bodies stored under `hashes` (decoded), by hash; a missing one is left out."""
    unique = list(dict.fromkeys(hashes))
    if not unique:
        return {}
    texts: Any = await client.mget([keys.call_body(h) for h in unique])
    return {h: json.loads(t) for h, t in zip(unique, texts, strict=True) if t is not None}
