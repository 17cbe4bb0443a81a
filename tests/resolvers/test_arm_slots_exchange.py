"""An experiment's arm slots in export lines: they carry their arm and control slot, and an
import refuses a slot line whose control slot is out of range, and an experiment whose slots are
not where its design lays them out (coded INVALID, no experiment stored)."""

import json
import uuid

import redis.asyncio as redis

from parley.resolvers.importer import SlotPart, import_lines, parse_line
from parley.storage import keys
from parley.storage.experiments import ExperimentStore

CONTROL: dict[str, object] = {
    "scenario_id": "s1",
    "agent_ids": ["a1", "a2"],
    "agent_models": ["m", "m"],
}


def slot_line(pk: str, slots: list[dict[str, object]], count: int = 2) -> str:
    return json.dumps({"experiment_slots": pk, "first": 0, "slot_count": count, "slots": slots})


DESIGN = {
    "scenarios": {"ids": ["s1"]},
    "agents": {"pairs": [["a1", "a2"]]},
    "models": {"seats": [["m", "m"]]},
    "arms": [{"name": "alarm", "at_turn": 1, "inject": {"text": "Fire!"}}],
}


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


async def test_slots_placed_against_the_designs_layout_are_refused(
    redis_client: redis.Redis,
) -> None:
    def arm(control: int) -> dict[str, object]:
        return {**CONTROL, "arm": "alarm", "control_slot": control}

    placed = {  # 2 control slots then the arm's 2: slot 2 forks slot 0, slot 3 slot 1
        "crossed": [CONTROL, CONTROL, arm(1), arm(0)],
        "arm first": [CONTROL, arm(0), CONTROL, arm(1)],
        "right": [CONTROL, CONTROL, arm(0), arm(1)],
    }
    refused, stored = {}, {}
    for name, slots in placed.items():
        pk = f"placed-{uuid.uuid4().hex[:8]}"
        lines = [
            slot_line(pk, slots, count=4),
            json.dumps({"experiment_id": pk, "name": pk, "slot_count": 4, "design": DESIGN}),
        ]
        report = await import_lines(redis_client, lines)
        refused[name] = [(p.line, p.code, p.reason) for p in report.problems]
        stored[name] = await ExperimentStore(redis_client).get(pk) is not None
    assert refused["right"] == [] and stored["right"]
    for name in ("crossed", "arm first"):
        ((line, code, reason),) = refused[name]
        assert (line, code) == (2, "INVALID"), refused[name]
        assert "in the design's layout" in reason and not stored[name]
    assert "slot 2 is arm 'alarm' forking slot 0" in refused["crossed"][0][2]
    assert "slot 1 is a control slot" in refused["arm first"][0][2]
