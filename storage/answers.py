"""Answers from ledgers instead of models (engine/ledger.py `AnswerSource`): a replay of one
episode's ledger, and the cache of every ledger's answered requests (`keys.CALL_ANSWERS`)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import redis.asyncio as redis

from parley.engine.ledger import CallPurpose, CallScope, Recorded, Served
from parley.storage import keys
from parley.storage.ledger import CALL_FIELD, StoredCall

type Place = tuple[CallPurpose, int | None, int | None, str | None]
"""Where in an episode a call was made: purpose, seat, turn, judge."""


def _place_of_scope(scope: CallScope) -> Place:
    return (scope.purpose, scope.seat, scope.turn, scope.judge)


def _place(call: StoredCall) -> Place:
    return (call.purpose, call.seat, call.turn, call.judge)


class ReplaySource:
    """The answers of one episode's ledger, each given once, in ledger order among identical
    requests (preferring one made at the same purpose, seat, turn and judge).

    Where an attempt made a call again (a new attempt after a lost worker, a re-judging), only
    the last attempt's calls at that place are kept: those made what the episode stored."""

    served = Served.REPLAY

    def __init__(self, episode_id: str, calls: list[StoredCall]) -> None:
        self.episode_id = episode_id
        last: dict[Place, int] = {}
        for call in calls:
            last[_place(call)] = max(last.get(_place(call), 0), call.attempt)
        self._by_request: dict[str, list[StoredCall]] = defaultdict(list)
        for call in calls:
            if call.attempt == last[_place(call)]:
                self._by_request[call.request].append(call)

    async def find(self, scope: CallScope, request: str) -> Recorded | None:
        waiting = self._by_request.get(request)
        if not waiting:
            return None
        place = _place_of_scope(scope)
        index = next((i for i, c in enumerate(waiting) if _place(c) == place), 0)
        call = waiting.pop(index)
        return Recorded(self.episode_id, call.answer, call.error_code, call.error_message)


async def ledger_calls(client: redis.Redis, episode_id: str) -> list[StoredCall]:
    """Every call of the episode's ledger, in the order they ended."""
    found: Any = await client.xrange(keys.model_calls(episode_id))
    return [StoredCall.model_validate_json(fields[CALL_FIELD]) for _, fields in found]


async def replay_source(client: redis.Redis, episode_id: str) -> ReplaySource:
    return ReplaySource(episode_id, await ledger_calls(client, episode_id))


class CacheSource:
    """The answer any ledger recorded for an identical request (the latest indexed); a request
    none holds goes to the model."""

    served = Served.CACHE

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    async def find(self, scope: CallScope, request: str) -> Recorded | None:
        named: Any = await self.client.hget(keys.CALL_ANSWERS, request)
        if named is None:
            return None
        episode_id, entry_id = json.loads(named)
        found: Any = await self.client.xrange(keys.model_calls(episode_id), entry_id, entry_id)
        if not found:  # deleted since it was looked up
            return None
        call = StoredCall.model_validate_json(found[0][1][CALL_FIELD])
        if call.request != request or not call.answered:
            return None
        return Recorded(episode_id, call.answer)
