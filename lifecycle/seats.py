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
from pydantic import BaseModel, Field, ValidationError

from parley.core.errors import ErrorCode, UserError, from_validation, not_found
from parley.core.limits import LongText, RecordId, has_utf8_form
from parley.engine.render import action_text
from parley.engine.types import ActionType, AgentAction
from parley.lifecycle import logs
from parley.lifecycle.transitions import STATUS_CHANGE_LUA, EpisodeStore
from parley.resolvers.agents import agent_names
from parley.resolvers.games import game_move
from parley.storage import keys
from parley.storage.models import EpisodeLog, EpisodeStatus, HumanSeat, SeatTimeout
from parley.storage.records import get_or_none, storable

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


def seat_entry(episode_id: str, seat: int) -> str:
    """The value of a seat's `keys.seat_token` key (the creation script writes the same)."""
    return json.dumps([episode_id, seat])


def seat_keys(episode: EpisodeLog) -> list[str]:
    """The `keys.seat_token` keys of an episode's claimed seats."""
    return [keys.seat_token(s.token_hash) for s in episode.human_seats if s.token_hash]


_TURN = """
local function add_turn(K, doc, turn_no, seat, body, triple, now)
  -- store a human seat's action of `turn_no` and publish it; drop the seat from those awaited
  local key = K[1]
  local seq = cjson.decode(redis.call('JSON.NUMINCRBY', key, '$.sequence', 1))[1]
  local turn = '{"sequence":' .. string.format('%d', seq) .. ',"turn":' .. turn_no
    .. ',"at":' .. now .. ',' .. string.sub(body, 2)
  redis.call('JSON.ARRAPPEND', key, '$.turns', turn)
  redis.call('JSON.SET', key, '$.progress', turn_no + 1)
  local stored = redis.call('JSON.ARRLEN', key, '$.messages')[1]
  if stored and turn_no < stored then
    redis.call('JSON.ARRAPPEND', key, '$.messages[' .. turn_no .. ']', triple)
  end
  redis.call('PUBLISH', K[2], '{"type":"turn","episode_id":' .. cjson.encode(doc.pk)
    .. ',"sequence":' .. string.format('%d', seq) .. ',"at":' .. now
    .. ',"attempt":' .. doc.attempt .. ',"turn":' .. turn .. '}')
  return seq
end

local function drop_seat(key, seat)
  local at = redis.call('JSON.ARRINDEX', key, '$.waiting.seats', seat)[1]
  if at and at >= 0 then redis.call('JSON.ARRPOP', key, '$.waiting.seats', at) end
  return redis.call('JSON.ARRLEN', key, '$.waiting.seats')[1]
end
"""

_ACT = (
    STATUS_CHANGE_LUA
    + _TURN
    + """
local key = KEYS[1]
local seat, hash, now, minid = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4]
local body, triple = ARGV[5], ARGV[6]
local doc = episode_doc(key, '$.waiting', '$.human_seats')
if not doc then return {0, 'gone'} end
local holder = nil
for _, s in ipairs(doc.human_seats or {}) do
  if s.seat == seat then holder = s end
end
if not holder then return {0, 'not_human'} end
if holder.token_hash == '' or holder.token_hash ~= hash then return {0, 'token'} end
if doc.status ~= 'WAITING' then return {0, 'status:' .. doc.status} end
local waiting = doc.waiting
local awaited = false
for _, s in ipairs(waiting.seats) do
  if s == seat then awaited = true end
end
if not awaited then return {0, 'not_awaited'} end
local seq = add_turn(KEYS, doc, waiting.turn, seat, body, triple, now)
if drop_seat(key, seat) == 0 then
  change_status(KEYS, doc, 'QUEUED', doc.attempt, now, '', nil, '', true, minid)
end
return {1, seq}
"""
)
"""A person's action for their seat: refused unless the token is the seat's and the episode
waits for that seat; the last seat of a turn queues the episode again."""

_EXPIRE = (
    STATUS_CHANGE_LUA
    + _TURN
    + """
local key = KEYS[1]
local turn_no, now, minid, reason = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4]
local doc = episode_doc(key, '$.waiting', '$.on_seat_timeout')
if not doc or doc.status ~= 'WAITING' then
  redis.call('ZREM', KEYS[5], ARGV[5])
  return 0
end
local waiting = doc.waiting
if waiting.turn ~= turn_no or waiting.deadline > tonumber(now) then return 0 end
if doc.on_seat_timeout == 'FAIL' then
  redis.call('JSON.SET', key, '$.error', cjson.encode(reason))
  redis.call('JSON.SET', key, '$.finished_at', now)
  change_status(KEYS, doc, 'FAILED', doc.attempt, now, reason, nil, '', false, minid)
  return 1
end
for i = 6, #ARGV, 3 do
  local seat = tonumber(ARGV[i])
  if doc.on_seat_timeout == 'STAND_IN' then
    redis.call('JSON.ARRAPPEND', key, '$.stand_ins', '[' .. seat .. ',' .. turn_no .. ']')
  else
    add_turn(KEYS, doc, turn_no, seat, ARGV[i + 1], ARGV[i + 2], now)
  end
  drop_seat(key, seat)
end
change_status(KEYS, doc, 'QUEUED', doc.attempt, now, reason, nil, '', true, minid)
return 1
"""
)
"""A waiting turn past its deadline: the episode fails, or each seat left leaves (a `leave`
turn) or is played by the stand-in model, and the episode is queued again."""

_CLAIM = """
local raw = redis.call('JSON.GET', KEYS[1], '$.human_seats')
if not raw then return -1 end
local seats = cjson.decode(raw)[1] or {}
for i, s in ipairs(seats) do
  if s.seat == tonumber(ARGV[1]) then
    if s.token_hash ~= '' then return 0 end
    redis.call('JSON.SET', KEYS[1], '$.human_seats[' .. (i - 1) .. '].token_hash',
               cjson.encode(ARGV[2]))
    redis.call('SET', KEYS[2], ARGV[3])
    return 1
  end
end
return -2
"""
"""Give an open seat its token (and the key its credential is found by): the first claim wins."""


MAX_TOKEN_LENGTH = 200
"""A seat token is 32 characters (`new_token`); a longer one is refused unread."""


class ActionRequest(BaseModel, extra="forbid"):
    episode_id: RecordId
    seat: Annotated[int, Field(ge=0)]
    action_type: ActionType
    argument: LongText = ""
    to: Annotated[list[str], Field(max_length=10)] = []
    seat_token: Annotated[str, Field(max_length=MAX_TOKEN_LENGTH)] = ""


def _body(seat: int, name: str, action: AgentAction, phase: str | None = None) -> str:
    """A turn's JSON without its sequence, number and time (the script adds them)."""
    data: dict[str, Any] = {
        "action_type": str(action.action_type),
        "argument": action.argument,
        "to": action.to,
        "agent_index": seat,
        "agent_name": name,
    }
    if phase is not None:
        data["phase"] = phase
    return json.dumps(data)


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
    "token": ("seatToken", "wrong or missing seat token for this seat", ErrorCode.FORBIDDEN),
    "not_human": ("seat", "this seat is not a human seat", ErrorCode.INVALID),
    "not_awaited": ("seat", "it is not this seat's turn", ErrorCode.CONFLICT),
}


class Seats:
    """A person's side of an episode: acting, claiming a seat, finding the seat a token opens,
    and the deadline sweep."""

    def __init__(self, client: redis.Redis, store: EpisodeStore) -> None:
        self.client = client
        self.store = store
        self._act = client.register_script(_ACT)
        self._expire = client.register_script(_EXPIRE)
        self._claim = client.register_script(_CLAIM)

    def _keys(self, episode_id: str) -> list[str]:
        return [
            EpisodeLog.make_primary_key(episode_id),
            keys.episode_channel(episode_id),
            keys.EPISODES_CHANNEL,
            keys.EVENTS_LOG,
            keys.DEADLINES,
            self.store.jobs,
        ]

    async def act(self, fields: dict[str, Any]) -> tuple[int | None, list[UserError]]:
        """Play a person's turn; the turn event's sequence, or why it was refused (then
        nothing changed). The token is checked first: a wrong one is refused alike whether the
        episode and the seat exist or not, before anything else about them is said."""
        try:
            request = ActionRequest(**fields)
        except ValidationError as err:
            return None, from_validation(err)
        episode = await get_or_none(EpisodeLog, request.episode_id)
        if episode is None or not holds_seat(episode, request.seat, request.seat_token):
            return None, [_refusal("token", request.episode_id)]
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
        code, detail = await self._act(
            keys=self._keys(request.episode_id),
            args=[
                request.seat,
                token_hash(request.seat_token),
                repr(time.time()),
                self.store.log_floor(),
                _body(request.seat, name, action, phase),
                _triple(name, action),
            ],
        )
        if code == 1:
            with logs.about(episode=request.episode_id):
                log.info("seat %d acted", request.seat)
            return int(detail), []
        return None, [_refusal(str(detail), request.episode_id)]

    async def claim(self, episode_id: str, seat: int) -> tuple[str | None, list[UserError]]:
        """A token for an open seat; the seat is then closed to other claims."""
        if not storable(episode_id):
            return None, [not_found("episode", episode_id)]
        token = new_token()
        digest = token_hash(token)
        done = await self._claim(
            keys=[EpisodeLog.make_primary_key(episode_id), keys.seat_token(digest)],
            args=[seat, digest, seat_entry(episode_id, seat)],
        )
        match int(done):
            case 1:
                return token, []
            case 0:
                message = "this seat was claimed already"
                return None, [UserError(["input", "seat"], message, ErrorCode.CONFLICT)]
            case -1:
                return None, [not_found("episode", episode_id)]
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

    async def index_tokens(self, batch: int = 1000) -> int:
        """Key the claimed seats of episodes stored before seat credentials were found by key
        (once per database, `keys.SEAT_TOKENS_INDEXED`); how many seats were keyed."""
        if await self.client.exists(keys.SEAT_TOKENS_INDEXED):
            return 0
        indexed = 0
        pending: list[str] = []

        async def flush() -> int:
            async with self.client.pipeline(transaction=False) as pipe:
                for key in pending:
                    pipe.json().get(key, "$.human_seats")
                found = await pipe.execute(raise_on_error=False)
            entries: dict[str, str] = {}
            for key, seats in zip(pending, found, strict=True):
                for seat in seats[0] if isinstance(seats, list) and seats else []:
                    if seat.get("token_hash"):
                        pk = key.removeprefix(EpisodeLog.make_primary_key(""))
                        entries[keys.seat_token(seat["token_hash"])] = seat_entry(pk, seat["seat"])
            if entries:
                await self.client.mset(entries)
            pending.clear()
            return len(entries)

        pattern = EpisodeLog.make_primary_key("*")
        async for key in self.client.scan_iter(match=pattern, count=batch, _type="ReJSON-RL"):
            pending.append(key)
            if len(pending) >= batch:
                indexed += await flush()
        if pending:
            indexed += await flush()
        await self.client.set(keys.SEAT_TOKENS_INDEXED, 1)
        return indexed

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
            await self.client.zrem(keys.DEADLINES, episode_id)
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
        args: list[str | int | float] = [waiting.turn, repr(now), self.store.log_floor(), reason]
        args.append(episode_id)
        for seat in waiting.seats:
            args += [seat, _body(seat, names[seat], leave), _triple(names[seat], leave)]
        done = await self._expire(keys=self._keys(episode_id), args=args)
        if done:
            with logs.about(episode=episode_id):
                log.info("seat deadline passed: %s", reason)
        return int(done)


def _refusal(detail: str, episode_id: str) -> UserError:
    if detail == "gone":
        return not_found("episode", episode_id)
    if detail.startswith("status:"):
        status = detail.partition(":")[2]
        message = f"the episode is {status}, not waiting for this seat"
        return UserError(["input", "seat"], message, ErrorCode.CONFLICT)
    field, message, code = _REFUSALS[detail]
    return UserError(["input", field], message, code)
