"""An experiment's arm slots in export lines: they carry their arm and control slot, and an
import refuses a slot line whose control slot is out of range (coded INVALID, nothing stored)."""

import json
import uuid

import redis.asyncio as redis

from parley.resolvers.importer import SlotPart, import_lines, parse_line
from parley.storage import keys

CONTROL: dict[str, object] = {
    "scenario_id": "s1",
    "agent_ids": ["a1", "a2"],
    "agent_models": ["m", "m"],
}


def slot_line(pk: str, slots: list[dict[str, object]], count: int = 2) -> str:
    return json.dumps({"experiment_slots": pk, "first": 0, "slot_count": count, "slots": slots})


def test_arm_slots_keep_their_arm_and_control() -> None:
    arm = {**CONTROL, "arm": "alarm", "control_slot": 0}
    _, part = parse_line(slot_line("e1", [CONTROL, arm]))
    assert isinstance(part, SlotPart)
    assert [(s.arm, s.control_slot) for s, _ in part.slots] == [("", None), ("alarm", 0)]


async def test_a_control_slot_out_of_range_is_refused_and_nothing_stored(
    redis_client: redis.Redis,
) -> None:
    pk = f"hostile-{uuid.uuid4().hex[:8]}"
    lines = [
        slot_line(pk, [CONTROL, {**CONTROL, "arm": "alarm", "control_slot": 7}]),
        slot_line(pk, [CONTROL, {**CONTROL, "arm": "alarm", "control_slot": 1}]),  # itself
        slot_line(pk, [CONTROL, {**CONTROL, "control_slot": 0}]),  # no arm
        json.dumps({"experiment_id": pk, "name": pk, "slot_count": 3, "design": {
            "scenarios": {"ids": ["s1"]}, "agents": {"pairs": [["a1", "a2"]]},
            "models": {"seats": [["m", "m"]]}, "arms": [
                {"name": "alarm", "at_turn": 1, "inject": {"text": "Fire!"}}]}}),
    ]  # fmt: skip
    report = await import_lines(redis_client, lines)
    assert [(p.line, p.code) for p in report.problems] == [
        (1, "INVALID"),
        (2, "INVALID"),
        (3, "INVALID"),
        (4, "INVALID"),
    ]
    reasons = [p.reason for p in report.problems]
    assert "control_slot 7 is out of range" in reasons[0]
    assert "control_slot 1 is out of range" in reasons[1]
    assert "no multiple of 2" in reasons[3]
    assert not await redis_client.exists(keys.experiment_slots(pk), keys.experiment_plan(pk))
