"""An experiment's design, validated, and its deterministic expansion into episode slots.

The stored world is read once (scenarios, agents, relationships, each sorted by id), and the
expansion is a pure function of the design and those sorted lists: the same design and seed give
the same slots whatever order Redis returns records in. Sampling follows Sotopia's samplers:
`uniform` draws two distinct agents from all of them (with replacement across draws), and
`relationship` draws stored relationships whose kind matches the scenario's. Neither ever draws
two agents of one name (an episode's transcript tells its agents apart by name): `uniform`
draws the second agent again among those named otherwise, `relationship` leaves such
relationships out, and a design that cannot avoid such a pair is refused.
"""

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any

import redis.asyncio as redis
from pydantic import (
    BaseModel,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from parley.core.errors import ErrorCode, UserError, validated
from parley.core.limits import MAX_AGENTS, Name, RecordId, ShortText
from parley.engine.errors import UnknownModelError
from parley.engine.llm import ModelCatalog
from parley.engine.types import TurnOrder
from parley.resolvers.agents import agent_names
from parley.resolvers.fork_fields import GoalFields, InjectionFields, SeatModelFields
from parley.resolvers.names import agent_name, same_names
from parley.resolvers.panels import PanelFields
from parley.resolvers.precision import Precision
from parley.resolvers.search import tag_terms
from parley.storage.models import (
    AgentProfile,
    CustomEvaluationDimensionList,
    EnvironmentProfile,
    ExperimentSlot,
    Record,
    RelationshipProfile,
    RelationshipType,
)
from parley.storage.records import exist, get_many

MAX_SLOTS = 10_000
"""Most episodes one experiment expands into."""
MAX_LIST = 1_000
MAX_ARMS = 10
MAX_BUDGET = 1_000_000.0
"""Most US dollars one design may budget."""
"""Interventions one design declares (besides its control)."""
CONTROL = "control"
"""The arm of a slot's own episode, which every intervention arm is compared with."""
Pair = Annotated[list[RecordId], Field(min_length=2, max_length=2)]
Seats = Annotated[list[ShortText], Field(min_length=2, max_length=2)]


class Sampling(StrEnum):
    UNIFORM = "uniform"
    RELATIONSHIP = "relationship"


class ScenarioSelection(BaseModel, extra="forbid"):
    ids: Annotated[list[RecordId], Field(min_length=1, max_length=MAX_LIST)] | None = None
    tag: ShortText | None = None
    codename: ShortText | None = None

    @model_validator(mode="after")
    def one_way(self) -> "ScenarioSelection":
        by_filter = bool(self.tag) or bool(self.codename)
        if (self.ids is not None) == by_filter:
            raise ValueError("give scenario ids, or a tag and/or codename to select them by")
        return self


class AgentSelection(BaseModel, extra="forbid"):
    pairs: Annotated[list[Pair], Field(min_length=1, max_length=MAX_LIST)] | None = None
    """Explicit pairs, in seat order; each meets in every scenario."""
    sample: Sampling | None = None
    seed: int = 0
    pairs_per_scenario: Annotated[int, Field(ge=1, le=100)] = 1
    tag: ShortText | None = None
    """Draw only among the agents with this tag (by relationship: relationships between two
    of them)."""

    @model_validator(mode="after")
    def one_way(self) -> "AgentSelection":
        if (self.pairs is None) == (self.sample is None):
            raise ValueError("give agent pairs, or a sample method (uniform or relationship)")
        if self.pairs is not None and any(a == b for a, b in self.pairs):
            raise ValueError("the two agents of a pair must be different")
        return self


class ModelSelection(BaseModel, extra="forbid"):
    compare: Annotated[list[ShortText], Field(min_length=1, max_length=20)] | None = None
    """Each model against `partner`, in both seat orders (as Sotopia's benchmark)."""
    partner: ShortText | None = None
    seats: Annotated[list[Seats], Field(min_length=1, max_length=20)] | None = None
    """Explicit models per seat: each entry is one (seat 1, seat 2) assignment."""

    @model_validator(mode="after")
    def one_way(self) -> "ModelSelection":
        against = self.compare is not None or self.partner is not None
        if against == (self.seats is not None):
            raise ValueError("give compare and partner, or seats")
        if against and (self.compare is None or not self.partner):
            raise ValueError("compare needs a partner model, and partner a list to compare")
        return self


class Arm(BaseModel, extra="forbid"):
    """An intervention: each control slot's episode, once COMPLETED, is forked at `at_turn`
    with this change (lifecycle/forks.py), so the two differ only from that turn on."""

    name: Name
    at_turn: Annotated[int, Field(ge=1)]
    """The first turn played with the change (the fork keeps the control's turns before it)."""
    inject: InjectionFields | None = None
    seat_models: Annotated[list[SeatModelFields], Field(max_length=MAX_AGENTS)] = []
    goals: Annotated[list[GoalFields], Field(max_length=MAX_AGENTS)] = []

    @field_validator("name")
    @classmethod
    def not_control(cls, name: str) -> str:
        if name.lower() == CONTROL:
            raise ValueError(f"{CONTROL!r} is the slot's own episode: name the arm otherwise")
        return name

    @model_validator(mode="after")
    def changes(self) -> "Arm":
        if self.inject is None and not self.seat_models and not self.goals:
            raise ValueError("give the arm a change: inject, seatModels or goals")
        return self


class Design(PanelFields, extra="forbid"):
    scenarios: ScenarioSelection
    agents: AgentSelection
    models: ModelSelection
    repeats: Annotated[int, Field(ge=1, le=100)] = 1
    max_turns: Annotated[int, Field(ge=1, le=100)] = 20
    turn_order: TurnOrder = TurnOrder.ROUND_ROBIN
    evaluation_dimension_list_id: RecordId | None = None
    cache: bool = False
    """Answer a request identical to one any ledger holds with its recorded answer, asking no
    model: a study run again pays only for what was not asked yet."""
    arms: Annotated[list[Arm], Field(max_length=MAX_ARMS)] = []
    """Interventions, each forked from every control slot's episode (`expand`)."""
    budget: (
        Annotated[float, Field(gt=0, le=MAX_BUDGET, strict=True, allow_inf_nan=False)] | None
    ) = None
    """US dollars: no episode is queued once what was spent and what is in flight would
    exceed it (lifecycle/pacing.py)."""
    precision: Precision | None = None
    """Queue the repeats one round at a time, and none once every compared model's overall
    score is known this precisely (resolvers/precision.py)."""

    @model_validator(mode="after")
    def paced_without_arms(self) -> "Design":
        if (self.budget is not None or self.precision is not None) and self.arms:
            raise ValueError("a budget or a precision is for a design without arms")
        if self.precision is not None and self.repeats < 2:
            raise ValueError("a precision needs repeats of 2 or more: the rounds it stops after")
        return self

    @property
    def paced(self) -> bool:
        """Its episodes are queued as they fit (a budget) or round by round (a precision)."""
        return self.budget is not None or self.precision is not None

    def arm(self, name: str) -> Arm | None:
        return next((arm for arm in self.arms if arm.name == name), None)


@dataclass(frozen=True)
class World:
    """What a design draws from, each list sorted by id."""

    scenarios: list[EnvironmentProfile]
    agents: list[str]
    relationships: list[RelationshipProfile]
    names: dict[str, str] = field(default_factory=dict)
    """Agent id -> the name it goes by (an agent not in it clashes with none)."""

    @classmethod
    def of(
        cls,
        scenarios: Sequence[EnvironmentProfile],
        agents: Sequence[str],
        relationships: Sequence[RelationshipProfile],
        keep_order: bool = False,
        names: dict[str, str] | None = None,
    ) -> "World":
        """The world with each list sorted by id (scenarios kept in order when named by id)."""
        ordered = list(scenarios) if keep_order else sorted(scenarios, key=lambda s: str(s.pk))
        by_id = sorted(relationships, key=lambda r: str(r.pk))
        return cls(ordered, sorted(agents), by_id, dict(names or {}))

    def same_name(self, agent: str, other: str) -> bool:
        """Whether the two agents go by one name (so cannot meet in an episode)."""
        name = self.names.get(agent)
        return bool(name) and name == self.names.get(other)


def seatings(models: ModelSelection) -> list[tuple[list[str], str, int | None]]:
    """(models per seat, the measured model, its seat) for each model assignment."""
    if models.seats is not None:
        return [(list(seats), "", None) for seats in models.seats]
    assert models.compare is not None and models.partner is not None
    out: list[tuple[list[str], str, int | None]] = []
    for model in models.compare:
        out.append(([model, models.partner], model, 0))
        out.append(([models.partner, model], model, 1))
    return out


def pairs_for(
    design: Design, scenario: EnvironmentProfile, world: World
) -> tuple[list[list[str]], str | None]:
    """The agent pairs of one scenario, or the reason there are none."""
    agents = design.agents
    if agents.pairs is not None:
        return [list(p) for p in agents.pairs], None
    rng = random.Random(f"{agents.seed}:{scenario.pk}")
    n = agents.pairs_per_scenario
    if agents.sample == Sampling.UNIFORM:
        if len(world.agents) < 2:
            return [], "uniform sampling needs at least two agents"
        first = world.agents[0]
        if all(world.same_name(first, other) for other in world.agents[1:]):
            name = world.names[first]
            return [], f"uniform sampling needs two agents with different names: all are {name!r}"
        return [uniform_pair(rng, world) for _ in range(n)], None
    kind = RelationshipType(scenario.relationship)
    of_kind = [r for r in world.relationships if r.relationship == kind]
    matching = [r for r in of_kind if not world.same_name(r.agent_1_id, r.agent_2_id)]
    if not matching:
        why = f"no stored relationship is {kind.name} as scenario {scenario.pk!r} needs"
        if of_kind:
            why = (
                f"every stored relationship that is {kind.name}, as scenario {scenario.pk!r} "
                "needs, joins two agents of the same name"
            )
        return [], why
    drawn = rng.sample(matching, n) if n <= len(matching) else rng.choices(matching, k=n)
    return [[r.agent_1_id, r.agent_2_id] for r in drawn], None


def uniform_pair(rng: random.Random, world: World) -> list[str]:
    """Two distinct agents; when they go by one name, the second is drawn again among the
    agents named otherwise (there are some: the caller checked)."""
    first, second = rng.sample(world.agents, 2)
    if world.same_name(first, second):
        second = rng.choice(
            [a for a in world.agents if a != first and not world.same_name(first, a)]
        )
    return [first, second]


def expand(design: Design, world: World) -> tuple[list[ExperimentSlot], list[UserError]]:
    """Every control slot, scenario by scenario, then pair, seating and repeat; then one block
    of as many slots per arm: slot `B * (i + 1) + n` is arm i of control slot n (B control
    slots). MAX_SLOTS counts them all."""
    slots: list[ExperimentSlot] = []
    errors: list[UserError] = []
    assignments = seatings(design.models)
    blocks = 1 + len(design.arms)
    for scenario in world.scenarios:
        pairs, problem = pairs_for(design, scenario, world)
        if problem:
            errors.append(UserError(["input", "design", "agents"], problem, ErrorCode.INVALID))
            continue
        if (len(slots) + len(pairs) * len(assignments) * design.repeats) * blocks > MAX_SLOTS:
            message = f"the design expands into more than {MAX_SLOTS} episodes"
            return [], [UserError(["input", "design"], message, ErrorCode.INVALID)]
        for pair in pairs:
            for models, measured, seat in assignments:
                for repeat in range(design.repeats):
                    slots.append(
                        ExperimentSlot(
                            scenario_id=str(scenario.pk),
                            agent_ids=pair,
                            agent_models=models,
                            repeat=repeat,
                            model=measured,
                            seat=seat,
                        )
                    )
    if not errors and not slots:
        message = "the design has no episodes"
        errors.append(UserError(["input", "design"], message, ErrorCode.INVALID))
    return ([], errors) if errors else (slots + arm_slots(design, slots), [])


def arm_slots(design: Design, controls: list[ExperimentSlot]) -> list[ExperimentSlot]:
    """The slots of the design's arms, arm by arm, each in the order of the control slots: an
    arm slot seats the models its arm gives from its turn on."""
    out: list[ExperimentSlot] = []
    for arm in design.arms:
        for n, control in enumerate(controls):
            models = list(control.agent_models)
            for change in arm.seat_models:
                models[change.seat] = change.model
            update = {"arm": arm.name, "control_slot": n, "agent_models": models}
            out.append(control.model_copy(update=update))
    return out


def arm_errors(design: Design) -> list[UserError]:
    """Why an arm cannot be forked from the design's episodes (the seats are its two)."""
    errors: list[UserError] = []
    seats = 2
    for i, arm in enumerate(design.arms):
        where = ["input", "design", "arms", str(i)]
        if arm.name.casefold() in [other.name.casefold() for other in design.arms[:i]]:
            # the results index matches arm names as tags: without regard to letter case
            message = f"another arm is named {arm.name!r}: name each arm once (case aside)"
            errors.append(UserError([*where, "name"], message, ErrorCode.INVALID))
        if arm.at_turn >= design.max_turns:
            message = (
                f"an arm forks at turn 1 to {design.max_turns - 1}: the design's episodes play "
                f"at most {design.max_turns} turns (maxTurns)"
            )
            errors.append(UserError([*where, "atTurn"], message, ErrorCode.INVALID))
        for part, changed, what in (
            ("seatModels", [c.seat for c in arm.seat_models], "give a model to"),
            ("goals", [g.seat for g in arm.goals], "give a goal to"),
        ):
            for j, seat in enumerate(changed):
                path = [*where, part, str(j), "seat"]
                if seat >= seats:
                    message = f"seat {seat} does not exist: seats are numbered 0 to {seats - 1}"
                    errors.append(UserError(path, message, ErrorCode.INVALID))
                elif seat in changed[:j]:
                    errors.append(UserError(path, f"{what} seat {seat} once", ErrorCode.INVALID))
    return errors


async def recipient_errors(
    client: redis.Redis, design: Design, slots: list[ExperimentSlot]
) -> list[UserError]:
    """An error on each agent name an arm's injection is sent to that is not an agent of every
    slot (a fork delivers it by name), read in one round trip."""
    named = [(i, j, name) for i, arm in enumerate(design.arms) for j, name in
             enumerate(arm.inject.to if arm.inject else [])]  # fmt: skip
    if not named:
        return []
    pks = sorted({pk for slot in slots for pk in slot.agent_ids})
    names = dict(zip(pks, await agent_names(client, pks), strict=True))
    errors: list[UserError] = []
    for i, j, name in named:
        missing = next(
            (n for n, slot in enumerate(slots) if name not in [names[a] for a in slot.agent_ids]),
            None,
        )
        if missing is not None:
            message = f"{name!r} is not an agent of slot {missing}: send to agents every slot has"
            path = ["input", "design", "arms", str(i), "inject", "to", str(j)]
            errors.append(UserError(path, message, ErrorCode.INVALID))
    return errors


def model_errors(design: Design, models: ModelCatalog) -> list[UserError]:
    named: list[tuple[list[str], str]] = []
    choice = design.models
    for i, name in enumerate(choice.compare or []):
        named.append((["models", "compare", str(i)], name))
    if choice.partner:
        named.append((["models", "partner"], choice.partner))
    for i, seats in enumerate(choice.seats or []):
        named += [(["models", "seats", str(i), str(j)], name) for j, name in enumerate(seats)]
    for i, arm in enumerate(design.arms):
        for j, change in enumerate(arm.seat_models):
            named.append((["arms", str(i), "seatModels", str(j), "model"], change.model))
    errors: list[UserError] = []
    for path, name in named:
        try:
            models.resolve(name)
        except UnknownModelError as err:
            errors.append(UserError(["input", "design", *path], str(err), ErrorCode.INVALID))
    return design.judge_errors(models, ["input", "design"]) + errors


async def read_many[R: Record](client: redis.Redis, model: type[R], pks: list[str]) -> list[R]:
    """The stored records among `pks`, in one round trip."""
    return [record for record in await get_many(client, model, pks) if record is not None]


async def load_world(client: redis.Redis, design: Design) -> tuple[World | None, list[UserError]]:
    """The records the design names or selects; NOT_FOUND for each named one not stored."""
    errors: list[UserError] = []
    chosen = design.scenarios
    if chosen.ids is not None:
        found = await read_many(client, EnvironmentProfile, chosen.ids)
        by_id = {str(s.pk): s for s in found}
        scenarios = []
        for i, pk in enumerate(chosen.ids):
            if pk in by_id:
                scenarios.append(by_id[pk])
            else:
                field = ["input", "design", "scenarios", "ids", str(i)]
                errors.append(UserError(field, f"no scenario with id {pk!r}", ErrorCode.NOT_FOUND))
    else:
        terms = tag_terms(EnvironmentProfile, tag=chosen.tag, codename=chosen.codename)
        scenarios = await EnvironmentProfile.find(*terms).all()
        if not scenarios:
            message = "no scenario matches the design's scenario filter"
            errors.append(UserError(["input", "design", "scenarios"], message, ErrorCode.INVALID))
    agents = design.agents
    agent_ids: list[str] = []
    relationships: list[RelationshipProfile] = []
    names: dict[str, str] = {}
    if agents.pairs is not None:
        errors += await pair_errors(client, agents.pairs)
    else:
        if agents.sample == Sampling.UNIFORM or agents.tag:
            found = await AgentProfile.find(*tag_terms(AgentProfile, tag=agents.tag)).all()
            agent_ids = [str(a.pk) for a in found]
            names = {str(a.pk): agent_name(a) for a in found}
        if agents.sample == Sampling.RELATIONSHIP:
            tagged = set(agent_ids)
            relationships = [
                r
                for r in await RelationshipProfile.find().all()
                if not agents.tag or {r.agent_1_id, r.agent_2_id} <= tagged
            ]
            ends = sorted({pk for r in relationships for pk in (r.agent_1_id, r.agent_2_id)})
            names = {str(a.pk): agent_name(a) for a in await read_many(client, AgentProfile, ends)}
            agent_ids = []
    list_id = design.evaluation_dimension_list_id
    if list_id and await exist(client, [(CustomEvaluationDimensionList, list_id)]) != [True]:
        field = ["input", "design", "evaluationDimensionListId"]
        message = f"no evaluation dimension list with id {list_id!r}"
        errors.append(UserError(field, message, ErrorCode.NOT_FOUND))
    if errors:
        return None, errors
    keep_order = chosen.ids is not None
    return World.of(scenarios, agent_ids, relationships, keep_order, names), []


async def pair_errors(client: redis.Redis, pairs: list[list[str]]) -> list[UserError]:
    """NOT_FOUND for each agent of the explicit pairs that is not stored, INVALID for each pair
    of two agents of one name."""
    wanted = sorted({pk for pair in pairs for pk in pair})
    names = {str(a.pk): agent_name(a) for a in await read_many(client, AgentProfile, wanted)}
    errors: list[UserError] = []
    for i, pair in enumerate(pairs):
        where = ["input", "design", "agents", "pairs", str(i)]
        for j, pk in enumerate(pair):
            if pk not in names:
                message = f"no agent with id {pk!r}"
                errors.append(UserError([*where, str(j)], message, ErrorCode.NOT_FOUND))
        for first, later in same_names([names.get(pk, "") for pk in pair]):
            message = (
                f"agents {pair[first]!r} and {pair[later]!r} are both named "
                f"{names[pair[later]]!r}: pair agents with different names (a transcript tells "
                "agents apart by name)"
            )
            errors.append(UserError([*where, str(later)], message, ErrorCode.INVALID))
    return errors


async def plan(
    client: redis.Redis, fields: dict[str, Any], models: ModelCatalog
) -> tuple[Design | None, list[ExperimentSlot], list[UserError]]:
    """Validate a design against the models and the stored world, and expand it."""
    design, errors = validated(Design, fields, ("input", "design"))
    if design is None:
        return None, [], errors
    errors = model_errors(design, models) + arm_errors(design)
    world, missing = await load_world(client, design)
    if errors or world is None:
        return None, [], errors + missing
    slots, errors = expand(design, world)
    controls = slots[: len(slots) // (1 + len(design.arms))]
    errors = errors or await recipient_errors(client, design, controls)
    return (design, slots, []) if not errors else (None, [], errors)


ARMS = TypeAdapter(list[Arm])


@dataclass(frozen=True)
class Layout:
    """Where the control and arm slots are in an experiment's slot map (see `expand`)."""

    controls: int
    """B: the control slots, 0 to B - 1."""
    arms: list[Arm]

    @classmethod
    def of(cls, design: dict[str, Any], slot_count: int) -> "Layout":
        """The layout of a stored design, from its arms alone: a design stored before arms has
        none, and so has one that does not validate (another writer's record): every read of
        an experiment (its progress in a list) goes through here and must not fail on it."""
        try:
            arms = ARMS.validate_python(design.get("arms") or [])
        except ValidationError:
            arms = []
        return cls(slot_count // (1 + len(arms)), arms)

    def arm_slots(self, control: int) -> list[tuple[int, Arm]]:
        """(slot, arm) of each arm slot of a control slot."""
        return [(self.controls * (i + 1) + control, arm) for i, arm in enumerate(self.arms)]

    def control_of(self, number: int) -> tuple[int, Arm | None]:
        """(control slot, arm) of a slot; the arm is None for a control slot."""
        block, control = divmod(number, self.controls)
        return control, (self.arms[block - 1] if block else None)


def reached(played: int, arm: Arm) -> bool:
    """Whether a control that played `played` turns reached the arm's turn: it played turn
    `at_turn` (turns count from 0), so its arm can differ from it there. One that ended before
    is never forked (at another turn the two would not be comparable)."""
    return played > arm.at_turn
