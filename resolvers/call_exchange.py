"""Episodes' ledgers of model calls in an export (kind `model_calls`), and back.

A line is one call (`model_call_of`: its episode, `call_id`: its ledger entry id, then its
stored fields) with the bodies it refers to that no earlier line of the export gave (`bodies`,
by hash), so a system prompt every call repeats travels once. An import checks each body
against its hash, puts the call back at its entry id (cursors stay valid), skips a call already
there, and refuses one whose episode is not stored, whose body is neither given nor stored,
whose `request` is not the hash of the body it names (a replay and the cache find answers by
that hash), or whose entry id comes before its ledger's last without being stored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any

import redis.asyncio as redis
from pydantic import Field, field_validator, model_validator

from parley.core.import_report import ImportReport
from parley.core.limits import RecordId
from parley.engine.ledger import canonical, content_hash
from parley.resolvers import sotopia_format as fmt
from parley.storage import keys
from parley.storage.events_log import log_position
from parley.storage.ledger import CALL_FIELD, StoredCall, read_bodies, restore
from parley.storage.models import EpisodeLog
from parley.storage.vocabulary import ImportOutcome

CALL_OF = fmt.CALL_OF
BATCH = 500
HASH = re.compile(r"[0-9a-f]{64}")


def _is_hash(value: str) -> str:
    if not HASH.fullmatch(value):
        raise ValueError(f"{value[:80]!r} is not a SHA-256 in hex")
    return value


class CallLine(StoredCall):
    """A model call's line, checked whole before anything of it is written."""

    model_call_of: RecordId
    call_id: Annotated[str, Field(max_length=60)]
    bodies: dict[str, Any] = {}

    @field_validator("call_id")
    @classmethod
    def _entry_id(cls, value: str) -> str:
        ms, seq = log_position(value)  # ValueError for anything but a stream id
        return f"{ms}-{seq}"  # as Redis writes it back

    @field_validator("messages")
    @classmethod
    def _hashes(cls, value: list[str]) -> list[str]:
        return [_is_hash(h) for h in value]

    @field_validator("schema_hash", "request")
    @classmethod
    def _hash(cls, value: str | None) -> str | None:
        return None if value is None else _is_hash(value)

    @model_validator(mode="after")
    def _bodies_match(self) -> CallLine:
        named = set(self.hashes())
        for digest, body in self.bodies.items():
            if digest not in named:
                raise ValueError(f"body {digest[:80]!r} is not one the call refers to")
            if content_hash(body) != digest:
                raise ValueError(f"body {digest[:16]}… does not match its hash")
        return self

    def stored(self) -> StoredCall:
        return StoredCall.model_validate(
            self.model_dump(exclude={"model_call_of", "call_id", "bodies"})
        )


async def lines(
    client: redis.Redis, episode_ids: Sequence[str], sent: set[str]
) -> list[dict[str, Any]]:
    """The lines of the calls of `episode_ids`, each body not in `sent` given once (and added
    to it)."""
    out: list[dict[str, Any]] = []
    for episode_id in episode_ids:
        start = "-"
        while True:
            raw: Any = await client.xrange(keys.model_calls(episode_id), min=start, count=BATCH)
            calls = [(str(i), StoredCall.model_validate_json(f[CALL_FIELD])) for i, f in raw]
            wanted = [h for _, call in calls for h in call.hashes() if h not in sent]
            bodies = await read_bodies(client, wanted)
            for entry_id, call in calls:
                given = {h: bodies[h] for h in call.hashes() if h not in sent and h in bodies}
                sent.update(given)
                line = {CALL_OF: episode_id, "call_id": entry_id, **call.model_dump(mode="json")}
                out.append({**line, "bodies": given})
            if len(calls) < BATCH:
                break
            start = f"({calls[-1][0]}"
    return out


def parse(line: dict[str, Any]) -> CallLine:
    return CallLine.model_validate(line)


async def sends_another_request(client: redis.Redis, line: CallLine) -> bool:
    """Whether the body the line names (its bodies, given or stored) hashes to another request
    than its `request`; False while a body is missing (the import refuses that line anyway)."""
    bodies = dict(line.bodies)
    bodies.update(await read_bodies(client, [h for h in line.hashes() if h not in bodies]))
    try:
        body = line.body(bodies)
    except KeyError:
        return False
    return content_hash(body) != line.request


async def add(client: redis.Redis, report: ImportReport, number: int, line: CallLine) -> None:
    """Write one call's line (its episode's line came before it)."""
    kind = fmt.Kind.MODEL_CALLS.value
    episode_id = str(line.model_call_of)
    if await sends_another_request(client, line):
        report.refuse(
            number,
            f"model call's request {line.request[:16]}… is not the hash of the body its "
            "messages, response format and params make (the line was changed after export)",
        )
        return
    given: dict[str, str | None] = {h: None for h in line.hashes()}
    given.update({h: canonical(body) for h, body in line.bodies.items()})
    outcome, detail = await restore(
        client,
        EpisodeLog.make_primary_key(episode_id),
        episode_id,
        line.call_id,
        line.stored(),
        given,
    )
    match outcome:
        case ImportOutcome.CREATED:
            report.created[kind] += 1
        case ImportOutcome.SKIPPED:
            report.skipped[kind] += 1
        case ImportOutcome.MISSING:
            report.refuse(number, f"model call of episode {episode_id!r}, which is not stored")
        case ImportOutcome.UNORDERED:
            report.refuse(
                number,
                f"model call {line.call_id} of episode {episode_id!r} comes before the last one "
                "its ledger holds, and is not stored (an export lists each ledger in order)",
            )
        case _:
            report.refuse(
                number,
                f"model call refers to body {detail[:16]}…, which neither this line nor an "
                "earlier one gives and is not stored (export the episode's calls again)",
            )
