"""Grouped results over stored episodes, computed by RediSearch (FT.AGGREGATE), never by
loading episodes.

Every score is one seat's: an episode gives one per seat (seats 0 and 1). Per seat, one
aggregation groups the scored episodes by the asked keys, the scenario and the dimension list,
and reduces each dimension to a count, a sum and a standard deviation; seats and rows are then
merged exactly (resolvers/statistics.py). Failed and cancelled episodes, unfinished ones and
finished ones whose judge gave no scores (Sotopia's bare `0.0`) are counted apart and never
enter a mean. Those counts are of episodes, not seats: one more aggregation reads them with
the fields of both seats, so that an episode whose two seats fall in one group (a model against
itself) counts once there.
"""

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import redis.asyncio as redis

from parley.core.errors import BadArgument, searchable_tag
from parley.resolvers.dimensions import dimensions_of, get_dimension_list
from parley.resolvers.statistics import Moments, Paired, Summary, paired, summarize
from parley.storage import keys
from parley.storage.connection import TAG_SPECIALS
from parley.storage.models import EpisodeStatus
from parley.storage.results_index import OVERALL, SEATS, STANDARD, score_field

MAX_ROWS = 1_000_000
WHOLE: list[Any] = ["TIMEOUT", 0, "DIALECT", 2]
"""Options of every aggregation: no time limit, since RediSearch's default (500 ms, then
`ON_TIMEOUT return`) would hand back partial counts as if they were all."""
APART = tuple(s.value for s in EpisodeStatus if s != EpisodeStatus.COMPLETED)
"""Statuses whose episodes (or evaluations) have no scores to average: counted apart."""


class GroupBy(StrEnum):
    MODEL = "MODEL"
    """The model in the seat the score is for."""
    PARTNER_MODEL = "PARTNER_MODEL"
    """The model in the other seat."""
    AGENT = "AGENT"
    SEAT = "SEAT"
    SCENARIO = "SCENARIO"
    TAG = "TAG"
    EXPERIMENT = "EXPERIMENT"
    JUDGE_MODEL = "JUDGE_MODEL"


@dataclass(frozen=True)
class ResultsFilter:
    experiment_id: str | None = None
    tag: str | None = None
    model: Sequence[str] = ()
    """The model in the seat the score is for (any of these)."""
    partner_model: str | None = None
    scenario_id: str | None = None
    agent_id: str | None = None
    """The agent in the seat the score is for."""
    judge_model: str | None = None
    seat: int | None = None
    arm: str | None = None
    """Episodes of this arm of an experiment with arms ("control": its slots' own)."""


@dataclass
class Group:
    key: dict[GroupBy, str | int | None]
    per_cell: bool = True
    cells: dict[str, dict[tuple[str, int], Moments]] = field(default_factory=dict)
    """dimension -> (scenario, seat) -> moments of its scores."""
    failed: int = 0
    """Episodes (or re-judgements) with a seat in the group, by why they have no scores."""
    cancelled: int = 0
    unfinished: int = 0
    unscored: int = 0

    def summaries(self) -> list[tuple[str, Summary]]:
        order = [OVERALL, *STANDARD]
        names = sorted(self.cells, key=lambda d: (order.index(d) if d in order else 99, d))
        cells = self.cells
        return [(name, summarize(cells[name].values(), self.per_cell)) for name in names]

    @property
    def scored(self) -> int:
        """Seat scores in the means: an episode with both seats in the group gives two."""
        return sum(m.n for m in self.cells.get(OVERALL, {}).values())


def _escape(value: str) -> str:
    return TAG_SPECIALS.sub(lambda m: "\\" + m.group(0), value)


def tag_query(name: str, *values: str) -> str:
    """A RediSearch query matching any of `values` exactly in the TAG field `name`."""
    return "@" + name + ":{" + "|".join(_escape(v) for v in values) + "}"


async def aggregate_rows(client: redis.Redis, args: list[Any]) -> list[dict[str, Any]]:
    reply = await client.execute_command(*args)  # type: ignore[no-untyped-call]
    return _rows(reply)


def _seat_field(key: GroupBy, seat: int) -> str | None:
    match key:
        case GroupBy.MODEL:
            return f"model_{seat}"
        case GroupBy.PARTNER_MODEL:
            return f"model_{1 - seat}"
        case GroupBy.AGENT:
            return f"agent_{seat}"
        case GroupBy.SCENARIO:
            return "scenario"
        case GroupBy.TAG:
            return "tag"
        case GroupBy.EXPERIMENT:
            return "experiment"
        case GroupBy.JUDGE_MODEL:
            return "judge"
        case GroupBy.SEAT:
            return None


def _filters(f: ResultsFilter, seat: int, evaluation: str | None) -> list[str]:
    return _common_filters(f, evaluation) + _seat_filters(f, seat)


def _common_filters(f: ResultsFilter, evaluation: str | None) -> list[str]:
    """The terms of the filter that are the same for both seats."""
    terms = []
    for name, value in (
        ("experiment", f.experiment_id),
        ("tag", f.tag),
        ("scenario", f.scenario_id),
        ("judge", f.judge_model),
        ("arm", f.arm),
        ("evaluation", evaluation),
    ):
        if value:
            terms.append(tag_query(name, searchable_tag(value)))
    return terms


def _seat_filters(f: ResultsFilter, seat: int) -> list[str]:
    """The terms of the filter about one seat: its agent, its model, its partner's model."""
    terms = []
    for name, value in ((f"agent_{seat}", f.agent_id), (f"model_{1 - seat}", f.partner_model)):
        if value:
            terms.append(tag_query(name, searchable_tag(value)))
    if f.model:
        terms.append(tag_query(f"model_{seat}", *map(searchable_tag, f.model)))
    return terms


def _seat_filter_fields(f: ResultsFilter, seat: int) -> list[str]:
    """The fields `_seat_filters` reads for `seat`."""
    fields = [f"agent_{seat}"] if f.agent_id else []
    fields += [f"model_{1 - seat}"] if f.partner_model else []
    return fields + ([f"model_{seat}"] if f.model else [])


def _seat_passes(f: ResultsFilter, row: dict[str, Any], seat: int) -> bool:
    """Whether `seat` of the episodes of `row` passes the filter's seat terms."""
    if f.agent_id and row.get(f"agent_{seat}") != f.agent_id:
        return False
    if f.partner_model and row.get(f"model_{1 - seat}") != f.partner_model:
        return False
    return not f.model or row.get(f"model_{seat}") in f.model


def _rows(reply: Any) -> list[dict[str, Any]]:
    """FT.AGGREGATE's rows as dicts, from a RESP3 or a RESP2 reply."""
    if isinstance(reply, dict):
        return [row.get("extra_attributes", {}) for row in reply.get("results", [])]
    rows = []
    for flat in reply[1:]:
        rows.append({str(flat[i]): flat[i + 1] for i in range(0, len(flat) - 1, 2)})
    return rows


def _number(value: Any) -> float:
    return float(value) if value not in (None, "") else 0.0


class Results:
    """Grouped results over one index: the episodes (`evaluation` None) or a re-judging's."""

    def __init__(self, client: redis.Redis, evaluation: str | None = None) -> None:
        self.client = client
        self.evaluation = evaluation
        self.index = keys.EVALUATIONS_INDEX if evaluation else keys.RESULTS_INDEX
        self._dims: dict[str, list[str]] = {}

    async def groups(
        self, f: ResultsFilter, group_by: Sequence[GroupBy], per_cell: bool = True
    ) -> list[Group]:
        """The groups' scores; `per_cell` keeps them apart per (scenario, seat) as Sotopia's
        margin needs (more rows for Redis to reduce: without it, that margin is not given)."""
        group_by = list(dict.fromkeys(group_by))
        seats = [f.seat] if f.seat is not None else list(SEATS)
        if any(s not in SEATS for s in seats):
            raise BadArgument(f"seat must be one of {list(SEATS)}")
        dims = await self._dimensions()
        lists = await self._list_dimensions()
        by_list = len(lists) > 1
        replies = await asyncio.gather(
            *(self._scores(f, group_by, seat, dims, per_cell, by_list) for seat in seats),
            self._apart(f, group_by, seats),
        )
        groups: dict[tuple[Any, ...], Group] = {}

        def group(row: dict[str, Any], seat: int) -> Group:
            key = {k: _key_value(k, row, seat) for k in group_by}
            return groups.setdefault(tuple(key.values()), Group(key=key, per_cell=per_cell))

        for seat, reply in zip(seats, replies[:-1], strict=True):
            for row in _rows(reply):
                target = group(row, seat)
                count = int(_number(row.get("scored")))
                if not count:
                    continue
                cell = (str(row.get("scenario") or ""), seat)
                names = [OVERALL, *lists.get(str(row.get("dim_list") or ""), STANDARD)]
                for i, dim in enumerate(dims):
                    if dim not in names:
                        continue
                    total, sd = _number(row.get(f"sum{i}")), _number(row.get(f"sd{i}"))
                    moments = Moments.of(count, total, sd)
                    cells = target.cells.setdefault(dim, {})
                    before = cells.get(cell)
                    cells[cell] = moments if before is None else before.merge(moments)
        for row in _rows(replies[-1]):
            # The episodes of the row, once in each group one of their seats falls in.
            present: dict[tuple[Any, ...], list[int]] = {}
            for seat in seats:
                if _seat_passes(f, row, seat):
                    key = tuple(_key_value(k, row, seat) for k in group_by)
                    present.setdefault(key, []).append(seat)
            episodes = int(_number(row.get("n")))
            for seated in present.values():
                target = group(row, seated[0])
                match row.get("status"):
                    case "FAILED":
                        target.failed += episodes
                    case "CANCELLED":
                        target.cancelled += episodes
                    case status if status in APART:
                        target.unfinished += episodes
                    case _ if any(_number(row.get(f"has{s}")) < 1 for s in seated):
                        target.unscored += episodes
        return sorted(groups.values(), key=lambda g: tuple(str(v) for v in g.key.values()))

    async def _scores(
        self,
        f: ResultsFilter,
        group_by: list[GroupBy],
        seat: int,
        dims: list[str],
        per_cell: bool,
        by_list: bool,
    ) -> Any:
        """One seat's finished episodes (status COMPLETED, or none as Sotopia writes them): per
        group (and scenario, and dimension list when there are several), how many, how many
        with scores (a seat has its overall score exactly when it has any), and per dimension
        the sum and the standard deviation of the scores present (RediSearch's SUM and STDDEV
        skip a missing value; its AVG would count it as 0)."""
        query = " ".join([*_filters(f, seat, self.evaluation), "-" + _apart_term()])
        overall = f"@{score_field(seat, OVERALL)}"
        more = [*(["scenario"] if per_cell else []), *(["dim_list"] if by_list else [])]
        fields = _group_fields(group_by, seat, *more)
        args: list[Any] = ["FT.AGGREGATE", self.index, query]
        args += ["APPLY", f"exists({overall})", "AS", "has"]
        args += ["GROUPBY", len(fields), *(f"@{name}" for name in fields)]
        args += ["REDUCE", "COUNT", 0, "AS", "n", "REDUCE", "SUM", 1, "@has", "AS", "scored"]
        for i, dim in enumerate(dims):
            source = f"@{score_field(seat, dim)}"
            args += ["REDUCE", "SUM", 1, source, "AS", f"sum{i}"]
            args += ["REDUCE", "STDDEV", 1, source, "AS", f"sd{i}"]
        args += ["LIMIT", 0, MAX_ROWS, *WHOLE]
        return await self.client.execute_command(*args)  # type: ignore[no-untyped-call]

    async def _apart(self, f: ResultsFilter, group_by: list[GroupBy], seats: list[int]) -> Any:
        """The episodes with no scores for a seat in `seats` (failed, cancelled, unfinished, or
        finished without them), counted by status, whether each seat has scores, and the fields
        of both seats that say which groups they fall in: one row per such combination, so that
        an episode is counted once per group."""
        terms = _common_filters(f, self.evaluation)
        either = [" ".join(_seat_filters(f, seat)) for seat in seats]
        if all(either):  # else a seat passes whatever it holds
            terms.append("(" + " | ".join(f"({term})" for term in either) + ")")
        unscored = [f"-@{score_field(seat, OVERALL)}:[-inf +inf]" for seat in seats]
        terms.append("(" + " | ".join([_apart_term(), *unscored]) + ")")
        query = " ".join(terms)
        fields = [name for seat in seats for name in _group_fields(group_by, seat)]
        fields += [name for seat in seats for name in _seat_filter_fields(f, seat)]
        fields = list(dict.fromkeys([*fields, "status", *(f"has{seat}" for seat in seats)]))
        args: list[Any] = ["FT.AGGREGATE", self.index, query]
        for seat in seats:
            args += ["APPLY", f"exists(@{score_field(seat, OVERALL)})", "AS", f"has{seat}"]
        args += ["GROUPBY", len(fields), *(f"@{name}" for name in fields)]
        args += ["REDUCE", "COUNT", 0, "AS", "n", "LIMIT", 0, MAX_ROWS, *WHOLE]
        return await self.client.execute_command(*args)  # type: ignore[no-untyped-call]

    async def _list_ids(self) -> list[str]:
        reply = await self.client.execute_command("FT.TAGVALS", self.index, "dim_list")  # type: ignore[no-untyped-call]
        return sorted(str(v) for v in reply)

    async def _list_dimensions(self) -> dict[str, list[str]]:
        """Each dimension list in the index -> its dimension names ("" for Sotopia's seven)."""
        if not self._dims:
            found: dict[str, list[str]] = {"": list(STANDARD)}
            for list_id in await self._list_ids():
                record = await get_dimension_list(list_id)
                found[list_id] = [d.name for d in await dimensions_of(record)] if record else []
            self._dims = found
        return self._dims

    async def _dimensions(self) -> list[str]:
        lists = await self._list_dimensions()
        return list(dict.fromkeys([OVERALL, *(d for names in lists.values() for d in names)]))

    async def compare(
        self, f: ResultsFilter, model_a: str, model_b: str
    ) -> list[tuple[str, Paired]]:
        """Per dimension: the mean difference A - B over the (scenario, seat, partner model)
        cells where both have scores, each cell's difference of means counted once."""
        both = ResultsFilter(**{**f.__dict__, "model": (model_a, model_b)})
        keys_ = [GroupBy.MODEL, GroupBy.PARTNER_MODEL, GroupBy.SEAT]
        means: dict[str, dict[tuple[Any, ...], dict[str, float]]] = defaultdict(dict)
        for group in await self.groups(both, keys_):
            model = str(group.key[GroupBy.MODEL])
            for dim, cells in group.cells.items():
                for (scenario, seat), moments in cells.items():
                    if moments.n:
                        cell = (scenario, seat, group.key[GroupBy.PARTNER_MODEL])
                        means[dim].setdefault(cell, {})[model] = moments.mean
        out = []
        for dim in sorted(means, key=lambda d: (d != OVERALL, d)):
            diffs = [m[model_a] - m[model_b] for m in means[dim].values() if len(m) == 2]
            out.append((dim, paired(diffs)))
        return out


def _apart_term() -> str:
    return tag_query("status", *APART)


def _group_fields(group_by: list[GroupBy], seat: int, *more: str) -> list[str]:
    fields = [_seat_field(k, seat) for k in group_by]
    return list(dict.fromkeys([*(f for f in fields if f is not None), *more]))


def _key_value(key: GroupBy, row: dict[str, Any], seat: int) -> str | int | None:
    name = _seat_field(key, seat)
    if name is None:
        return seat
    value = row.get(name)
    return None if value is None else str(value)
