"""Human seats: their tokens, a person's action, and a seat that does not act in time.

A seat a person plays is parked, not run: when it is that seat's turn the worker stores the
episode WAITING (with the seats awaited and a deadline) and lets its job go. `act` stores the
person's action and, once no seat of that turn is left, queues the episode again; the sweep in
`expire_due` applies the episode's timeout policy to a seat whose deadline passed. Each is one
Lua script that checks the episode is still waiting for that seat, so two people racing for one
seat, or a person racing the deadline, make exactly one turn.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Annotated, Any

import redis.asyncio as redis
from pydantic import BaseModel, Field

from parley.core.errors import ErrorCode, UserError, not_found, validated
from parley.core.limits import LongText, RecordId, has_utf8_form
from parley.engine.render import action_text
from parley.engine.types import ActionType, AgentAction
from parley.lifecycle import logs
from parley.resolvers.agents import agent_names
from parley.resolvers.games import game_move
from parley.storage import keys
from parley.storage import seats as seat_writes
from parley.storage.episode_store import EpisodeStore, numbered
from parley.storage.models import EpisodeLog, EpisodeStatus, HumanSeat, SeatTimeout
from parley.storage.records import get_or_none, storable
from parley.storage.times import stored_time
from parley.storage.vocabulary import ActRefusal

log = logging.getLogger(__name__)
ENV = "Environment"
SPOKEN = frozenset({ActionType.SPEAK, ActionType.NON_VERBAL_COMMUNICATION, ActionType.ACTION})
"""Action types that need an argument."""


def new_token() -> str:
    return secrets.token_urlsafe(24)


def token_hash(token: str) -> str:
    """What is stored of a seat token (the token itself is shown once)."""
    return hashlib.sha256(token.encode()).hexdigest()


def holds_seat(episode: EpisodeLog, seat: int, token: str) -> bool:
    """Whether `token` is the token of human seat `seat` of `episode` (never one without a
    UTF-8 form: no token given out lacks one, and it has no hash)."""
    return has_utf8_form(token) and _holds(episode.human_seats, seat, token_hash(token))


def _holds(human_seats: list[HumanSeat], seat: int, digest: str) -> bool:
    return any(
        s.seat == seat and s.token_hash and hmac.compare_digest(s.token_hash, digest)
        for s in human_seats
    )


@dataclass(frozen=True)
class SeatHolder:
    """What a seat token is the token of: one human seat of one episode."""

    episode_id: str
    seat: int


MAX_TOKEN_LENGTH = 200
"""A seat token is 32 characters (`new_token`); a longer one is refused unread."""


class ActionRequest(BaseModel, extra="forbid"):
    episode_id: RecordId
    seat: Annotated[int, Field(ge=0)]
    action_type: ActionType
    argument: LongText = ""
    to: Annotated[list[str], Field(max_length=10)] = []
    seat_token: Annotated[str, Field(max_length=MAX_TOKEN_LENGTH)] = ""


def _body(
    turn: int, now: float, seat: int, name: str, action: AgentAction, phase: str | None = None
) -> str:
    """A person's turn's JSON, numbered 0 (the script gives it its sequence)."""
    data: dict[str, Any] = {
        "turn": turn,
        "at": stored_time(now),
        "action_type": str(action.action_type),
        "argument": action.argument,
        "to": action.to,
        "agent_index": seat,
        "agent_name": name,
    }
    if phase is not None:
        data["phase"] = phase
    return numbered(data)


def _triple(name: str, action: AgentAction) -> str:
    return json.dumps([name, ENV, action_text(action)])


def action_errors(
    request: ActionRequest, names: list[str], human_seats: set[int]
) -> list[UserError]:
    """What makes an action impossible whatever the turn: a seat that is not a person's, an
    argument missing, a recipient who is not in the episode."""
    if request.seat >= len(names) or request.seat not in human_seats:
        return [
            UserError(
                ["input", "seat"], f"seat {request.seat} is not a human seat", ErrorCode.INVALID
            )
        ]
    errors: list[UserError] = []
    if request.action_type in SPOKEN and not request.argument.strip():
        message = f"a {request.action_type.value} action needs an argument"
        errors.append(UserError(["input", "argument"], message, ErrorCode.INVALID))
    own = names[request.seat]
    for i, recipient in enumerate(request.to):
        if recipient not in names or recipient == own:
            message = f"{recipient!r} is not another agent of this episode"
            errors.append(UserError(["input", "to", str(i)], message, ErrorCode.INVALID))
    return errors


_REFUSALS = {
    ActRefusal.TOKEN: (
        "seatToken",
        "wrong or missing seat token for this seat",
        ErrorCode.FORBIDDEN,
    ),
    ActRefusal.NOT_HUMAN: ("seat", "this seat is not a human seat", ErrorCode.INVALID),
    ActRefusal.NOT_AWAITED: ("seat", "it is not this seat's turn", ErrorCode.CONFLICT),
}


class Seats:
    """A person's side of an episode: acting, claiming a seat, finding the seat a token opens,
    and the deadline sweep."""

    def __init__(self, client: redis.Redis, store: EpisodeStore) -> None:
        self.client = client
        self.store = store

    async def act(self, fields: dict[str, Any]) -> tuple[int | None, list[UserError]]:
        """Play a person's turn; the turn event's sequence, or why it was refused (then
        nothing changed). The token is checked first: a wrong one is refused alike whether the
        episode and the seat exist or not, before anything else about them is said."""
        request, errors = validated(ActionRequest, fields)
        if request is None:
            return None, errors
        episode = await get_or_none(EpisodeLog, request.episode_id)
        if episode is None or not holds_seat(episode, request.seat, request.seat_token):
            return None, [_refusal(ActRefusal.TOKEN, request.episode_id)]
        names = await agent_names(self.client, episode.agents)
        errors = action_errors(request, names, {s.seat for s in episode.human_seats})
        if errors:
            return None, errors
        action = AgentAction(
            action_type=request.action_type, argument=request.argument, to=request.to
        )
        action, phase, refused = await game_move(episode, names, request.seat, action)
        if refused:
            return None, refused
        name = names[request.seat]
        turn = episode.waiting.turn if episode.waiting else -1
        now = time.time()
        sequence, refusal, status = await seat_writes.act(
            self.store,
            request.episode_id,
            request.seat,
            turn,
            token_hash(request.seat_token),
            now,
            _body(turn, now, request.seat, name, action, phase),
            _triple(name, action),
        )
        if sequence is not None:
            with logs.about(episode=request.episode_id):
                log.info("seat %d acted", request.seat)
            return sequence, []
        assert refusal is not None
        return None, [_refusal(refusal, request.episode_id, status)]

    async def claim(self, episode_id: str, seat: int) -> tuple[str | None, list[UserError]]:
        """A token for an open seat; the seat is then closed to other claims."""
        if not storable(episode_id):
            return None, [not_found("episode", episode_id, "episodeId")]
        token = new_token()
        digest = token_hash(token)
        done = await seat_writes.claim(self.client, episode_id, seat, digest)
        match done:
            case 1:
                return token, []
            case 0:
                message = "this seat was claimed already"
                return None, [UserError(["input", "seat"], message, ErrorCode.CONFLICT)]
            case -1:
                return None, [not_found("episode", episode_id, "episodeId")]
            case _:
                message = f"seat {seat} is not a human seat of this episode"
                return None, [UserError(["input", "seat"], message, ErrorCode.INVALID)]

    async def holder(self, token: str) -> SeatHolder | None:
        """The seat `token` is the token of, or None. Found by the token's hash, so the lookup
        takes no time that depends on how much of a guess is right, and checked against the
        episode's stored seats (a key left by an episode that is gone counts for nothing)."""
        if not token or len(token) > MAX_TOKEN_LENGTH or not has_utf8_form(token):
            return None
        digest = token_hash(token)
        entry = await self.client.get(keys.seat_token(digest))
        try:
            episode_id, seat = json.loads(entry) if entry else (None, None)
        except (ValueError, TypeError):  # not a pair: no key of ours
            return None
        if not isinstance(episode_id, str) or not isinstance(seat, int):
            return None
        found: Any = await self.client.json().get(
            EpisodeLog.make_primary_key(episode_id), "$.human_seats"
        )
        stored = [HumanSeat.model_validate(s) for s in (found[0] if found else [])]
        return SeatHolder(episode_id, seat) if _holds(stored, seat, digest) else None

    async def expire_due(self, now: float | None = None, batch: int = 100) -> int:
        """Apply the timeout policy to waiting turns whose deadline passed; how many."""
        now = time.time() if now is None else now
        due: Any = await self.client.zrangebyscore(keys.DEADLINES, "-inf", now, start=0, num=batch)
        handled = 0
        for episode_id in due:
            handled += await self._expire_one(str(episode_id), now)
        return handled

    async def _expire_one(self, episode_id: str, now: float) -> int:
        episode = await get_or_none(EpisodeLog, episode_id)
        if episode is None or episode.status != EpisodeStatus.WAITING or episode.waiting is None:
            await seat_writes.forget_deadline(self.client, episode_id)
            return 0
        waiting = episode.waiting
        names = await agent_names(self.client, episode.agents)
        late = [names[s] or f"seat {s}" for s in waiting.seats]
        policy = episode.on_seat_timeout
        outcome = {
            SeatTimeout.FAIL: "the episode failed",
            SeatTimeout.LEAVE: "left",
            SeatTimeout.STAND_IN: f"{episode.stand_in_model} acts instead",
        }[policy]
        reason = (
            f"{', '.join(late)} did not act before the deadline of turn {waiting.turn}: {outcome}"
        )
        leave = AgentAction(action_type=ActionType.LEAVE)
        left = [
            (s, _body(waiting.turn, now, s, names[s], leave), _triple(names[s], leave))
            for s in waiting.seats
        ]
        done = await seat_writes.expire(self.store, episode_id, waiting.turn, now, reason, left)
        if done:
            with logs.about(episode=episode_id):
                log.info("seat deadline passed: %s", reason)
        return int(done)


def _refusal(refusal: ActRefusal, episode_id: str, status: str = "") -> UserError:
    if refusal == ActRefusal.GONE:
        return not_found("episode", episode_id, "episodeId")
    if refusal == ActRefusal.STATUS:
        message = f"the episode is {status}, not waiting for this seat"
        return UserError(["input", "seat"], message, ErrorCode.CONFLICT)
    field, message, code = _REFUSALS[refusal]
    return UserError(["input", field], message, code)
