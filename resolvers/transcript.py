"""An episode's turns, read from Sotopia's `messages` when Parley's own turn records are absent.

Sotopia writes only the transcript: per turn, (sender, receiver, text) triples, the
Environment's observations to each agent and then each agent's action in its natural-language
form (`said: "…"`, `[non-verbal communication] …`, `[action] …`, `left the conversation`,
`did nothing`, optionally after `[private to ['Name']] `). Older data has no space before the
form, newer data one; both are read.
"""

import ast
import re
from collections.abc import Sequence

from parley.engine.types import ActionType
from parley.storage.models import EpisodeLog, StoredTurn

ENVIRONMENT = "Environment"
_PRIVATE = re.compile(r"^\[private to (\[.*?\])\]\s*")
_SAID = re.compile(r'^said:\s*"(.*)"$', re.DOTALL)
_FORMS = (
    ("[non-verbal communication]", ActionType.NON_VERBAL_COMMUNICATION),
    ("[action]", ActionType.ACTION),
)


def episode_turns(episode: EpisodeLog) -> list[StoredTurn]:
    """The stored turns, or those derived from `messages` when none are stored."""
    if episode.turns:
        return list(episode.turns)
    return turns_from_messages(episode.messages)


def parse_action(text: str) -> tuple[ActionType, str, list[str]] | None:
    """(action type, argument, private recipients) of one rendered action; None if the text
    is none of Sotopia's forms."""
    body = text.strip()
    to: list[str] = []
    private = _PRIVATE.match(body)
    if private:
        try:
            names = ast.literal_eval(private.group(1))
        except (ValueError, SyntaxError):
            return None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return None
        to = names
        body = body[private.end() :]
    if body == "did nothing":
        return ActionType.NONE, "", to
    if body == "left the conversation":
        return ActionType.LEAVE, "", to
    said = _SAID.match(body)
    if said:
        return ActionType.SPEAK, said.group(1), to
    for prefix, kind in _FORMS:
        if body.startswith(prefix):
            return kind, body[len(prefix) :].strip(), to
    return None


def seat_names(messages: Sequence[Sequence[Sequence[str]]]) -> list[str]:
    """The agents in seat order: the receivers of the Environment's first observations."""
    if not messages:
        return []
    return [m[1] for m in messages[0] if m[0] == ENVIRONMENT]


def turns_from_messages(messages: Sequence[Sequence[Sequence[str]]]) -> list[StoredTurn]:
    """Every action of the transcript as a turn, in order.

    An agent that `did nothing` out of its turn is no turn. When the transcript is consistent
    with round-robin order (every other action at turn t comes from seat t mod n, as Sotopia's
    round-robin runs play) the seat whose turn it was is kept even when it did nothing, as
    Parley records such turns; otherwise only actions that did something are turns.
    """
    names = seat_names(messages)
    seats = {name: i for i, name in enumerate(names)}
    parsed: list[tuple[int, int, str, ActionType, str, list[str]]] = []
    for turn, triples in enumerate(messages):
        for sender, receiver, text in (tuple(t) for t in triples):
            if sender == ENVIRONMENT or receiver != ENVIRONMENT:
                continue
            action = parse_action(text)
            if action is None:
                continue
            seat = seats.setdefault(sender, len(seats))
            parsed.append((turn, seat, sender, *action))
    n = len(seats)
    round_robin = n > 0 and all(
        seat == turn % n for turn, seat, _, kind, _, _ in parsed if kind != ActionType.NONE
    )
    turns: list[StoredTurn] = []
    for turn, seat, name, kind, argument, to in parsed:
        if kind == ActionType.NONE and not (round_robin and seat == turn % n):
            continue
        turns.append(
            StoredTurn(
                turn=turn,
                agent_index=seat,
                agent_name=name,
                action_type=kind,
                argument=argument,
                to=to,
                sequence=len(turns) + 1,
            )
        )
    return turns
