"""Import of Sotopia-layout JSONL (resolvers/sotopia_format.py): idempotent, line by line.

Each line is parsed and validated whole before anything of it is written, so an invalid line
writes nothing; a record whose id is already stored is skipped, never overwritten. Writes go in
pipelined batches, in file order (a relationship line first writes what came before it, so
the agents it names may come earlier in the same file).
"""

import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any

import redis.asyncio as redis
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from parley.core.errors import ErrorCode
from parley.core.import_report import ImportReport
from parley.core.limits import PATTERNS, Name, RecordId, ShortText
from parley.core.wording import summary
from parley.resolvers import annotation_exchange as ratings
from parley.resolvers import call_exchange as calls
from parley.resolvers import client_json
from parley.resolvers import sotopia_format as fmt
from parley.resolvers.agents import AGENT, NewAgent
from parley.resolvers.dimensions import NewDimensionList, create_dimension_list
from parley.resolvers.experiment_design import MAX_SLOTS, Design, Layout, arm_errors
from parley.resolvers.games import game_errors
from parley.resolvers.relationships import RELATIONSHIP, NewRelationship, write_relationship
from parley.resolvers.scenarios import SCENARIO, NewScenario
from parley.storage.dump import ulid_time
from parley.storage.evaluations import add_imported, list_imported_rejudgings
from parley.storage.experiments import ExperimentStore
from parley.storage.models import (
    TERMINAL,
    AgentProfile,
    CustomEvaluationDimensionList,
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStatus,
    Experiment,
    ExperimentSlot,
    RatingStudy,
    Record,
    RelationshipProfile,
)
from parley.storage.records import exist, insert_new
from parley.storage.results_index import ResultsIndex

BATCH = 500
_ID: TypeAdapter[str] = TypeAdapter(RecordId)
LONE_SURROGATE = (
    "a string holds a lone surrogate (an escape from \\ud800 to \\udfff without its pair), "
    "which has no UTF-8 form to store"
)


def _reasons(error: ValidationError) -> str:
    return summary(error, PATTERNS)


def _record_id(pk: Any, name: str) -> str:
    try:
        valid: str = _ID.validate_python(pk)
    except ValidationError:
        raise fmt.LineError(
            f"{name} {pk!r} is not an id (1..100 letters, digits, '_', '-', '.')"
        ) from None
    return valid


def _split(extra: dict[str, Any], exposed: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    checked = {k: v for k, v in extra.items() if k in exposed}
    return checked, {k: v for k, v in extra.items() if k not in exposed}


def agent_record(line: dict[str, Any]) -> AgentProfile:
    pk, fields, extra = fmt.agent_fields(line)
    checked, kept = _split(extra, set(AGENT.limits))
    valid = NewAgent(pk=_record_id(pk, "agent_id"), **fields, **checked)
    return AgentProfile(**valid.model_dump(), **kept)


def scenario_record(line: dict[str, Any]) -> EnvironmentProfile:
    pk, fields, extra = fmt.scenario_fields(line)
    constraint = fields.pop("agent_constraint", None)
    checked, kept = _split(extra, set(SCENARIO.limits))
    valid = NewScenario(pk=_record_id(pk, "env_id"), **fields, **checked)
    game = valid.model_dump(include={"game_metadata", "agent_goals"})
    problems = game_errors(game["game_metadata"], len(game["agent_goals"]))
    if problems:
        raise fmt.LineError("; ".join(f"{'.'.join(e.field[1:])}: {e.message}" for e in problems))
    return EnvironmentProfile(**valid.model_dump(), agent_constraint=constraint, **kept)


def relationship_record(line: dict[str, Any]) -> RelationshipProfile:
    pk, fields, extra = fmt.relationship_fields(line)
    checked, kept = _split(extra, set(RELATIONSHIP.limits))
    valid = NewRelationship(pk=_record_id(pk, "relationship_id"), **fields, **checked)
    values = valid.model_dump(exclude={"agent_id", "other_agent_id"})
    return RelationshipProfile(
        agent_1_id=valid.agent_id, agent_2_id=valid.other_agent_id, **values, **kept
    )


def episode_record(line: dict[str, Any]) -> EpisodeLog:
    doc = fmt.episode_document(line)
    doc["pk"] = _record_id(doc["pk"], "episode_id")
    _record_id(doc["environment"], "environment_id")
    if not isinstance(doc["agents"], list):
        raise fmt.LineError("agent_ids must be a list of ids")
    for agent in doc["agents"]:
        _record_id(agent, "agent id")
    record = EpisodeLog.model_validate(doc)
    if record.status not in TERMINAL:
        raise fmt.LineError(
            f"the episode is {record.status.value}: only finished episodes (COMPLETED, "
            "FAILED, CANCELLED) can be imported"
        )
    if record.status == EpisodeStatus.COMPLETED and len(record.rewards) != len(record.agents):
        raise fmt.LineError(
            f"raw_rewards has {len(record.rewards)} entries for {len(record.agents)} agents"
        )
    if not record.created_at:
        record.created_at = ulid_time(str(record.pk)) or time.time()
    for seat in record.human_seats:  # a token stays with the server that gave it: claimed anew
        seat.token_hash = ""
    return record


@dataclass(frozen=True)
class SlotPart:
    """A line of an experiment's slots: from slot `first` of `count`, each with the episode
    filling it ("" for none)."""

    experiment_id: str
    count: int
    first: int
    slots: list[tuple[ExperimentSlot, str]]


class SlotLine(ExperimentSlot, extra="forbid"):
    episode_id: RecordId | None = None


class SlotPartLine(BaseModel, extra="forbid"):
    experiment_slots: RecordId
    first: Annotated[int, Field(ge=0)]
    slot_count: Annotated[int, Field(ge=1, le=MAX_SLOTS)]
    slots: Annotated[list[SlotLine], Field(min_length=1, max_length=fmt.SLOTS_PER_LINE)]


class ExperimentLine(BaseModel, extra="forbid"):
    experiment_id: RecordId
    name: Name
    tag: ShortText = ""
    design: dict[str, Any]
    slot_count: Annotated[int, Field(ge=0, le=MAX_SLOTS)]
    created_at: float | None = None
    started_at: float | None = None
    rejudgings: Annotated[list[RecordId], Field(max_length=fmt.REJUDGINGS_PER_EXPERIMENT)] = []


@dataclass(frozen=True)
class ImportedExperiment:
    """An experiment line's record, and the re-judgings made of it (their ids)."""

    record: Experiment
    rejudgings: list[str]


def arm_slot_problem(number: int, slot: SlotLine) -> None:
    """An arm slot names an earlier slot as its control (control slots come first); a control
    slot names none."""
    if bool(slot.arm) != (slot.control_slot is not None):
        message = f"slot {number}: give an arm slot both arm and control_slot, a control none"
        raise fmt.LineError(message)
    if slot.control_slot is not None and not 0 <= slot.control_slot < number:
        raise fmt.LineError(
            f"slot {number}: control_slot {slot.control_slot} is out of range: an arm slot's "
            f"control is an earlier slot (0 to {number - 1})"
        )


def experiment_part(line: dict[str, Any]) -> SlotPart | ImportedExperiment:
    """An experiment line's record, or a slot line's part (see `fmt.Kind.EXPERIMENTS`)."""
    if fmt.SLOTS_FIELD in line:
        part = SlotPartLine.model_validate(line)
        if part.first + len(part.slots) > part.slot_count:
            last = part.first + len(part.slots) - 1
            raise fmt.LineError(
                f"slot {last} is past the experiment's {part.slot_count} slots (0 to "
                f"{part.slot_count - 1})"
            )
        for number, slot in enumerate(part.slots, part.first):
            arm_slot_problem(number, slot)
        slots = [
            (ExperimentSlot(**s.model_dump(exclude={"episode_id"})), s.episode_id or "")
            for s in part.slots
        ]
        return SlotPart(part.experiment_slots, part.slot_count, part.first, slots)
    valid = ExperimentLine.model_validate(line)
    design = Design.model_validate(valid.design)  # a design as createExperiment stores it
    problems = arm_errors(design)
    if problems:
        raise fmt.LineError("; ".join(f"{'.'.join(e.field[1:])}: {e.message}" for e in problems))
    blocks = 1 + len(design.arms)
    if valid.slot_count % blocks:
        raise fmt.LineError(
            f"slot_count {valid.slot_count} is no multiple of {blocks}: a design with "
            f"{blocks - 1} arms has as many slots per arm as control slots"
        )
    record = Experiment(
        pk=valid.experiment_id,
        name=valid.name,
        tag=valid.tag,
        design=valid.design,
        slot_count=valid.slot_count,
        created_at=valid.created_at or ulid_time(valid.experiment_id) or time.time(),
        started_at=valid.started_at,
    )
    return ImportedExperiment(record, valid.rejudgings)


def misplaced_slot(experiment: Experiment, plan: list[ExperimentSlot]) -> str | None:
    """Why the slots given for an experiment with arms are not where its design lays them out
    (a control block, then one block per arm, each arm slot forking the control slot at its
    place in the block), if they are not: its arms would compare the wrong episodes."""
    layout = Layout.of(experiment.design, experiment.slot_count)
    if not layout.arms or len(plan) != experiment.slot_count:
        return None  # no arms; or slots missing, which storing the record refuses
    for number, slot in enumerate(plan):
        control, arm = layout.control_of(number)
        wanted = (arm.name, control) if arm else ("", None)
        if (slot.arm, slot.control_slot) != wanted:
            place = f"arm {arm.name!r} forking slot {control}" if arm else "a control slot"
            return (
                f"slot {number} is {place} in the design's layout, but its line gives arm "
                f"{slot.arm!r} and control_slot {slot.control_slot} (export it again)"
            )
    return None


def dimension_list(line: dict[str, Any]) -> NewDimensionList:
    pk = _record_id(line.get("dimension_list_id"), "dimension_list_id")
    return NewDimensionList(pk=pk, name=line.get("name"), dimensions=line.get("dimensions"))


Parsed = Record | NewDimensionList | SlotPart | ImportedExperiment | ratings.Line | calls.CallLine
BUILDERS: dict[fmt.Kind, Callable[[dict[str, Any]], Parsed]] = {
    fmt.Kind.AGENTS: agent_record,
    fmt.Kind.SCENARIOS: scenario_record,
    fmt.Kind.RELATIONSHIPS: relationship_record,
    fmt.Kind.DIMENSION_LISTS: dimension_list,
    fmt.Kind.EPISODES: episode_record,
    fmt.Kind.EXPERIMENTS: experiment_part,
    fmt.Kind.ANNOTATIONS: ratings.parse,
    fmt.Kind.MODEL_CALLS: calls.parse,
}


def parse_line(text: str | bytes) -> tuple[fmt.Kind, Parsed]:
    """The record a line holds; raises LineError saying what is wrong."""
    try:
        line = client_json.loads(text)
    except client_json.TooDeep as err:
        raise fmt.LineError(str(err)) from None
    except ValueError as err:  # not JSON, not UTF-8, or an integer Python will not convert
        raise fmt.LineError(f"not valid JSON ({err})") from None
    if not isinstance(line, dict):
        raise fmt.LineError("not a JSON object")
    if client_json.has_lone_surrogate(text, line):
        raise fmt.LineError(LONE_SURROGATE)
    kind = fmt.kind_of(line)
    if kind is None:
        if "combo_id" in line:
            raise fmt.LineError("agent-scenario combinations (combo_id) are not imported")
        shown = ", ".join(sorted(line)[:8]) or "none"
        raise fmt.LineError(
            "unknown kind of record: expected episode_id, agent_id, env_id, relationship_id, "
            f"dimension_list_id, experiment_id or experiment_slots (fields: {shown})"
        )
    try:
        return kind, BUILDERS[kind](line)
    except ValidationError as err:
        raise fmt.LineError(f"{kind.value[:-1]} {_reasons(err)}") from None


class Importer:
    """Writes parsed records in order: profiles and episodes in pipelined batches,
    relationships one by one (each needs its pair reserved and its agents present)."""

    def __init__(self, client: redis.Redis, report: ImportReport) -> None:
        self.client = client
        self.report = report
        self.pending: list[tuple[int, fmt.Kind, Record]] = []
        self.indexed: set[str] = set()
        """Dimension names this import has given results already."""
        self.ratings = ratings.RatingImporter(client, report)

    async def add(self, number: int, kind: fmt.Kind, record: Parsed) -> None:
        if isinstance(record, ratings.LINES):  # written in batches of their own, in file order
            await self.flush()
            await self.ratings.add(number, record)
            return
        await self.ratings.flush()
        if isinstance(record, calls.CallLine):  # after its episode, which must be stored
            await self.flush()
            await calls.add(self.client, self.report, number, record)
            return
        if isinstance(record, NewDimensionList):
            await self.flush()
            await self._dimension_list(number, record)
            return
        if isinstance(record, SlotPart | ImportedExperiment):
            await self.flush()
            await self._experiment(number, record)
            return
        if isinstance(record, RelationshipProfile):
            await self.flush()
            await self._relationship(number, record)
            return
        if isinstance(record, EpisodeLog) and not (
            await self._rejudged(number, record) and await self._index_scores(number, record)
        ):
            return
        self.pending.append((number, kind, record))
        if len(self.pending) >= BATCH:
            await self.flush()

    async def flush(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        results = await insert_new(self.client, [record for _, _, record in batch])
        for (_, kind, _), result in zip(batch, results, strict=True):
            (self.report.created if result else self.report.skipped)[kind.value] += 1
        created = [
            record
            for (_, _, record), result in zip(batch, results, strict=True)
            if result and isinstance(record, EpisodeLog) and record.evaluations
        ]
        if created:
            await add_imported(self.client, created)

    async def _rejudged(self, number: int, episode: EpisodeLog) -> bool:
        """Whether each of the episode's evaluations can be a re-judging's here; False, with the
        line refused, when one is named by a stored rating study's id (its results would count
        the episode's scores among its raters' means)."""
        named = [evaluation.id for evaluation in episode.evaluations]
        if not named:
            return True
        studies = await exist(self.client, [(RatingStudy, pk) for pk in named])
        taken = [pk for pk, study in zip(named, studies, strict=True) if study]
        if taken:
            self.report.refuse(
                number,
                f"evaluation {taken[0]!r} is named by a rating study's id here: its results are "
                "the study's raters' means",
                ErrorCode.CONFLICT.value,
            )
            return False
        return True

    async def _index_scores(self, number: int, episode: EpisodeLog) -> bool:
        """Give the dimensions the episode is scored on results before it is written (as
        creating a dimension list does); False, with the line refused, when that would pass
        the cap on indexed names."""
        names = {
            name
            for rewards in (episode.rewards, *(e.rewards for e in episode.evaluations))
            for reward in rewards
            if not isinstance(reward, float)
            for name in reward[1]
        } - self.indexed
        if not names:
            return True
        refused = await ResultsIndex(self.client).add_dimensions(sorted(names))
        if refused is not None:
            self.report.refuse(number, f"the dimensions it is scored on: {refused}")
            return False
        self.indexed |= names
        return True

    async def _dimension_list(self, number: int, valid: NewDimensionList) -> None:
        kind = fmt.Kind.DIMENSION_LISTS.value
        if (await exist(self.client, [(CustomEvaluationDimensionList, str(valid.pk))]))[0]:
            self.report.skipped[kind] += 1
            return
        _, errors = await create_dimension_list(self.client, valid.model_dump())
        if errors:
            self.report.refuse(number, "; ".join(e.message for e in errors))
            return
        self.report.created[kind] += 1

    async def _experiment(self, number: int, part: SlotPart | ImportedExperiment) -> None:
        """An experiment's slots go in place first (nothing is counted for them); its record,
        after them, is stored once every slot is in, with the re-judgings of it (stored from
        its episodes' evaluations) listed under it."""
        store = ExperimentStore(self.client)
        if isinstance(part, SlotPart):
            await store.import_slots(part.experiment_id, part.count, part.first, part.slots)
            return
        kind = fmt.Kind.EXPERIMENTS.value
        experiment = part.record
        if misplaced := misplaced_slot(experiment, await store.plan(str(experiment.pk))):
            self.report.refuse(number, misplaced)
            return
        match await store.import_record(experiment):
            case "created":
                await list_imported_rejudgings(self.client, str(experiment.pk), part.rejudgings)
                self.report.created[kind] += 1
            case "skipped":
                self.report.skipped[kind] += 1
            case "named":
                taken = await store.find(experiment.name, experiment.tag)
                self.report.refuse(
                    number,
                    f"an experiment named {experiment.name!r} with tag {experiment.tag!r} is "
                    "stored already "
                    f"({taken.pk if taken else 'another id'})",
                )
            case _:
                self.report.refuse(
                    number,
                    "the experiment's slots are not all in the lines before it (export it again)",
                )

    async def _relationship(self, number: int, record: RelationshipProfile) -> None:
        kind = fmt.Kind.RELATIONSHIPS.value
        if (await exist(self.client, [(RelationshipProfile, str(record.pk))]))[0]:
            self.report.skipped[kind] += 1
            return
        refs: list[tuple[type[Record], str]] = [
            (AgentProfile, record.agent_1_id),
            (AgentProfile, record.agent_2_id),
        ]
        missing = [
            pk for (_, pk), ok in zip(refs, await exist(self.client, refs), strict=True) if not ok
        ]
        if missing:
            self.report.refuse(
                number,
                f"relationship names agents that are not stored: {', '.join(missing)} "
                "(import the agents first)",
            )
            return
        refused = await write_relationship(self.client, record)  # agents deleted meanwhile too
        if refused is None:
            self.report.created[kind] += 1
        elif refused.reason == "agent":
            self.report.refuse(
                number,
                f"relationship names agents that are not stored: {refused.detail} "
                "(import the agents first)",
            )
        elif refused.reason == "pair" and refused.detail != record.pk:
            self.report.refuse(
                number, f"these agents already have another relationship ({refused.detail})"
            )
        else:  # its pair reserved for it, or its id taken, already
            self.report.skipped[kind] += 1


async def import_lines(
    client: redis.Redis, lines: Iterable[str | bytes] | AsyncIterable[str | bytes]
) -> ImportReport:
    """Import every line (numbered from 1); blank lines are passed over."""
    report = ImportReport()
    importer = Importer(client, report)
    number = 0
    async for text in _each(lines):
        number += 1
        if not text.strip():
            continue
        try:
            kind, record = parse_line(text)
        except fmt.LineError as err:
            report.refuse(number, str(err))
            continue
        await importer.add(number, kind, record)
    await importer.flush()
    await importer.ratings.flush()
    return report


async def _each(
    lines: Iterable[str | bytes] | AsyncIterable[str | bytes],
) -> AsyncIterator[str | bytes]:
    if isinstance(lines, AsyncIterable):
        async for line in lines:
            yield line
    else:
        for line in lines:
            yield line
