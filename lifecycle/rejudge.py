"""Re-judging finished episodes: queue one evaluation job per episode, and run such a job.

A re-judging has an id shared by the evaluations it makes: each is an entry of its episode's
`evaluations` (id = the re-judging's id; the original `rewards` are never touched) and, beside
it, an evaluation record (storage/keys.py) holding the fields results group by, so
`episodeResults(evaluation: id)` aggregates it like the episodes themselves. Jobs go through the
episode job queue (storage/jobs.py) as entries of their own kind, with the same leases and
takeover; a judge that fails marks that one evaluation FAILED with the reason. An episode that
COMPLETED without scores (its judge failed) gets them from the first evaluation by its own judge
on its own dimensions that succeeds (`completes`).
"""

import logging
import time
from dataclasses import dataclass
from typing import Annotated, Any

import redis.asyncio as redis
from pydantic import Field, model_validator
from ulid import ULID

from parley.core.errors import (
    BadArgument,
    ErrorCode,
    UserError,
    searchable_tag,
    validated,
)
from parley.core.limits import RecordId, ShortText
from parley.engine.errors import JudgeFailed
from parley.engine.ledger import recording
from parley.engine.llm import LLMRouter, ModelCatalog
from parley.engine.panel import PanelProgress, judge_panel
from parley.engine.stats import GenerationStats
from parley.engine.types import Aggregate, JudgeRun, JudgeSpec, Panel, Transcript
from parley.lifecycle.jobs import crash_reason
from parley.resolvers.dimensions import (
    dimensions_of,
    get_dimension_list,
    index_dimensions,
    names_problem,
)
from parley.resolvers.episode_setup import SetupError, load_setup
from parley.resolvers.panels import PanelFields
from parley.resolvers.results import WHOLE, aggregate_rows, tag_query
from parley.resolvers.transcript import episode_turns
from parley.storage import keys
from parley.storage.evaluations import (
    experiment_rejudgings,
    queue_rejudging,
    store_evaluation,
    stored_rejudging,
)
from parley.storage.jobs import JobQueue
from parley.storage.models import (
    EpisodeLog,
    EpisodeStatus,
    Evaluation,
    EvaluationStatus,
)
from parley.storage.records import get_or_none, storable

log = logging.getLogger(__name__)
MAX_EPISODES_PER_REJUDGING = 10_000
"""Most episodes one re-judging takes, named or found by experiment or tag."""
BATCH = 500
EPISODE_FIELDS = ("status", "environment", "agents", "tag", "experiment_id", "arm", "models")


class RejudgeFields(PanelFields, extra="forbid"):
    episode_ids: Annotated[list[RecordId], Field(max_length=MAX_EPISODES_PER_REJUDGING)] | None = (
        None
    )
    experiment_id: RecordId | None = None
    tag: ShortText | None = None
    evaluation_dimension_list_id: RecordId | None = None

    @model_validator(mode="after")
    def one_selection(self) -> "RejudgeFields":
        given = [x for x in (self.episode_ids, self.experiment_id, self.tag) if x is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of: episode ids, an experiment id, a tag")
        return self


@dataclass(frozen=True)
class Rejudging:
    id: str
    judge_model: str
    """The judge, or the panel's label."""
    evaluation_dimension_list_id: str | None
    episodes: int
    created_at: float
    judges: list[JudgeSpec]
    judge_aggregate: Aggregate

    @classmethod
    def of(cls, queued: Evaluation, episodes: int) -> "Rejudging":
        """The re-judging whose evaluations of `episodes` episodes start as `queued`."""
        return cls(
            id=queued.id,
            judge_model=queued.judge_model,
            evaluation_dimension_list_id=queued.evaluation_dimension_list_id,
            episodes=episodes,
            created_at=queued.created_at,
            judges=queued.judges,
            judge_aggregate=queued.judge_aggregate,
        )

    def panel(self) -> Panel:
        return Panel.stored(self.judge_model, self.judges, self.judge_aggregate)


def _error(field: str, message: str, code: ErrorCode = ErrorCode.INVALID) -> UserError:
    return UserError(["input", field], message, code)


async def _selected(client: redis.Redis, valid: RejudgeFields) -> list[str]:
    """The episode ids a selection names (explicit ids as given, in order)."""
    if valid.episode_ids is not None:
        return list(dict.fromkeys(valid.episode_ids))
    field, value = (
        ("experiment", valid.experiment_id) if valid.experiment_id else ("tag", valid.tag)
    )
    assert value is not None
    reply: Any = await client.execute_command(  # type: ignore[no-untyped-call]
        "FT.SEARCH", keys.RESULTS_INDEX, tag_query(field, value), "NOCONTENT",
        "LIMIT", 0, MAX_EPISODES_PER_REJUDGING + 1, *WHOLE,
    )  # fmt: skip
    found = reply.get("results", []) if isinstance(reply, dict) else reply[1:]
    prefix = EpisodeLog.make_primary_key("")
    ids = [str(r["id"] if isinstance(r, dict) else r).removeprefix(prefix) for r in found]
    return sorted(ids)


async def _episode_fields(client: redis.Redis, ids: list[str]) -> list[dict[str, Any] | None]:
    out: list[dict[str, Any] | None] = []
    for start in range(0, len(ids), BATCH):
        async with client.pipeline(transaction=False) as pipe:
            for pk in ids[start : start + BATCH]:
                pipe.json().get(
                    EpisodeLog.make_primary_key(pk), *(f"$.{f}" for f in EPISODE_FIELDS)
                )
            replies = await pipe.execute()
        for reply in replies:
            if reply is None:
                out.append(None)
                continue
            out.append({f: (reply.get(f"$.{f}") or [None])[0] for f in EPISODE_FIELDS})
    return out


async def _dimension_names(list_id: str | None) -> list[str] | None:
    """The list's dimension names (Sotopia's seven for None); None if there is no such list."""
    if list_id is None:
        return []
    record = await get_dimension_list(list_id)
    if record is None:
        return None
    return [d.name for d in await dimensions_of(record)]


def _ended_without_scores(fields: dict[str, Any] | None) -> bool:
    return fields is not None and fields["status"] in (
        EpisodeStatus.FAILED,
        EpisodeStatus.CANCELLED,
    )


async def queue(
    client: redis.Redis, jobs: JobQueue, models: ModelCatalog, fields: dict[str, Any]
) -> tuple[Rejudging | None, list[UserError]]:
    """Check the request, then write each episode's QUEUED evaluation, its evaluation record and
    its job; nothing is written when anything is refused."""
    valid, errors = validated(RejudgeFields, fields)
    if valid is None:
        return None, errors
    if valid.tag is not None:
        try:
            searchable_tag(valid.tag)
        except BadArgument as err:
            return None, [_error("tag", str(err))]
    errors = valid.judge_errors(models, ["input"])
    names = await _dimension_names(valid.evaluation_dimension_list_id)
    if names is None:
        message = f"no evaluation dimension list with id {valid.evaluation_dimension_list_id!r}"
        errors.append(_error("evaluationDimensionListId", message, ErrorCode.NOT_FOUND))
    elif (problem := names_problem(names)) is not None:
        message = f"evaluation dimension list {valid.evaluation_dimension_list_id!r}: {problem}"
        errors.append(_error("evaluationDimensionListId", message))
    ids = await _selected(client, valid)
    if len(ids) > MAX_EPISODES_PER_REJUDGING:
        errors.append(
            _error("episodeIds", f"at most {MAX_EPISODES_PER_REJUDGING} episodes per re-judging")
        )
    named = [pk for pk in ids if storable(pk)]
    episodes = dict(zip(named, await _episode_fields(client, named), strict=True))
    if valid.episode_ids is None:
        # An experiment or a tag is re-judged where there is something to judge: its failed
        # and cancelled episodes (replaced by a later start, or given up) are left out.
        ids = [pk for pk in ids if not _ended_without_scores(episodes.get(pk))]
    missing = [pk for pk in ids if episodes.get(pk) is None]
    unfinished = {
        pk: e["status"]
        for pk in ids
        if (e := episodes.get(pk)) is not None
        and (e["status"] or EpisodeStatus.COMPLETED) != EpisodeStatus.COMPLETED
    }
    field = "episodeIds" if valid.episode_ids is not None else (
        "experimentId" if valid.experiment_id else "tag"
    )  # fmt: skip
    if valid.episode_ids is not None and missing:
        shown = ", ".join(repr(pk) for pk in missing[:5])
        errors.append(_error(field, f"no episode with id {shown}", ErrorCode.NOT_FOUND))
    if unfinished:
        shown = ", ".join(f"{pk} is {status}" for pk, status in list(unfinished.items())[:5])
        more = f" (and {len(unfinished) - 5} more)" if len(unfinished) > 5 else ""
        message = f"only COMPLETED episodes can be re-judged: {shown}{more}"
        errors.append(_error(field, message))
    if not ids:
        errors.append(_error(field, "no episodes to re-judge", ErrorCode.NOT_FOUND))
    if errors:
        return None, errors
    assert names is not None
    errors = await index_dimensions(client, names, ["input", "evaluationDimensionListId"])
    if errors:
        return None, errors
    panel = valid.panel()
    # Each episode's evaluation starts as the re-judging's fields, the rest at their defaults.
    queued = Evaluation(
        id=str(ULID()),
        judge_model=panel.label(),
        evaluation_dimension_list_id=valid.evaluation_dimension_list_id,
        created_at=time.time(),
        judges=panel.judges,
        judge_aggregate=panel.aggregate,
    )
    rejudging = Rejudging.of(queued, len(ids))
    chosen: list[tuple[str, dict[str, Any]]] = []
    for pk in ids:
        found = episodes[pk]
        assert found is not None  # a missing episode is refused above
        chosen.append((pk, found))
    await queue_rejudging(client, jobs, queued, chosen, valid.experiment_id)
    log.info("re-judging queued", extra={"rejudging": rejudging.id, "episodes": len(ids)})
    return rejudging, []


async def get_rejudging(client: redis.Redis, rejudging_id: str) -> Rejudging | None:
    stored: Any = (
        await client.hgetall(keys.rejudging(rejudging_id)) if storable(rejudging_id) else {}
    )
    if not stored:
        return None
    return Rejudging.of(stored_rejudging(rejudging_id, stored), int(stored["episodes"]))


async def of_experiment(client: redis.Redis, experiment_id: str) -> list[Rejudging]:
    """The re-judgings made of an experiment's episodes, oldest first."""
    ids = await experiment_rejudgings(client, experiment_id)
    found = [await get_rejudging(client, pk) for pk in ids]
    return [rejudging for rejudging in found if rejudging is not None]


async def progress(client: redis.Redis, rejudging_id: str) -> dict[EvaluationStatus, int]:
    """Evaluations of a re-judging by status (computed by the evaluations index)."""
    rows = await aggregate_rows(
        client,
        [
            "FT.AGGREGATE", keys.EVALUATIONS_INDEX, tag_query("evaluation", rejudging_id),
            "GROUPBY", 1, "@status", "REDUCE", "COUNT", 0, "AS", "n", *WHOLE,
        ],
    )  # fmt: skip
    counts = dict.fromkeys(EvaluationStatus, 0)
    for row in rows:
        status = str(row.get("status"))
        if status in EvaluationStatus.__members__:
            counts[EvaluationStatus(status)] += int(float(row.get("n") or 0))
    return counts


class Rejudger:
    """Runs evaluation jobs: one episode judged again by a re-judging's judge and dimensions."""

    def __init__(self, client: redis.Redis, llm: LLMRouter, max_attempts: int) -> None:
        self.client = client
        self.llm = llm
        self.max_attempts = max_attempts

    async def _store(
        self,
        episode_id: str,
        entry: Evaluation,
        count_start: bool = False,
        fills: str | None = None,
    ) -> int:
        """Write the evaluation (storage/evaluations.py)."""
        return await store_evaluation(self.client, episode_id, entry, count_start, fills)

    async def run(self, episode_id: str, rejudging_id: str) -> None:
        """Judge once more; the evaluation ends COMPLETED with its scores or FAILED with why.
        Each judge run is stored as it ends: a run taken over keeps them and makes the rest."""
        episode = await get_or_none(EpisodeLog, episode_id)
        entry = next(
            (e for e in (episode.evaluations if episode else []) if e.id == rejudging_id), None
        )
        if episode is None or entry is None or entry.status in (
            EvaluationStatus.COMPLETED, EvaluationStatus.FAILED
        ):  # fmt: skip
            return
        running = entry.model_copy(update={"status": EvaluationStatus.RUNNING, "error": None})
        starts = await self._store(episode_id, running, count_start=True)
        if starts < 0:
            return
        if starts > self.max_attempts:
            await self._fail(episode_id, running, f"worker lost {starts - 1} times")
            return

        async def on_runs(progress: PanelProgress) -> None:
            nonlocal running
            running = running.model_copy(update={"judge_runs": progress.runs})
            await self._store(episode_id, running)

        try:
            setup = await _setup(episode, entry)
            transcript = stored_transcript(episode, [a.name for a in setup.agents])
            with recording(episode_id, episode.attempt):
                judged = await judge_panel(setup, transcript, self.llm, entry.judge_runs, on_runs)
        except SetupFailed as err:
            await self._fail(episode_id, running, str(err))
            return
        except JudgeFailed as err:
            await self._fail(episode_id, running, err.reason, err.runs)
            return
        except redis.RedisError:
            raise  # left for redelivery
        except Exception as err:
            log.exception("re-judging crashed", extra={"episode": episode_id})
            await self._fail(episode_id, running, crash_reason(err))
            return
        done = running.model_copy(
            update={
                "status": EvaluationStatus.COMPLETED,
                "rewards": judged.rewards(),
                "reasoning": judged.reasoning,
                "judge_runs": judged.runs,
                "finished_at": time.time(),
            }
        )
        fills = judged.rewards_prompt if completes(episode, entry) else None
        await self._store(episode_id, done, fills=fills)
        log.info("re-judged", extra={"episode": episode_id, "rejudging": rejudging_id})

    async def _fail(
        self, episode_id: str, entry: Evaluation, reason: str, runs: list[JudgeRun] | None = None
    ) -> None:
        update: dict[str, Any] = {
            "status": EvaluationStatus.FAILED,
            "error": reason,
            "finished_at": time.time(),
        }
        if runs is not None:
            update["judge_runs"] = runs
        failed = entry.model_copy(update=update)
        await self._store(episode_id, failed)
        log.info("re-judging failed: %s", reason, extra={"episode": episode_id})


class SetupFailed(Exception):
    pass


def completes(episode: EpisodeLog, entry: Evaluation) -> bool:
    """Whether an evaluation is the judgement an episode left without scores never got: its
    own judge (or panel: both are named by the panel's label) on its own dimensions. Then its
    scores become the episode's (results and experiments count them); any other evaluation
    stays beside the episode's own."""
    own_judge = episode.models[0] if episode.models else None
    return (
        episode.judge_error is not None
        and entry.judge_model == own_judge
        and entry.evaluation_dimension_list_id == episode.evaluation_dimension_list_id
    )


async def _setup(episode: EpisodeLog, entry: Evaluation) -> Any:
    models = list(episode.models or [])
    judged = episode.model_copy(
        update={
            "models": [entry.judge_model, *models[1:]],
            "judges": entry.judges,
            "judge_aggregate": entry.judge_aggregate,
            "evaluation_dimension_list_id": entry.evaluation_dimension_list_id,
            # Sotopia's records keep no turn limit: the turns played stand in for it.
            "max_turns": episode.max_turns or max(1, len(episode_turns(episode))),
        }
    )
    try:
        return await load_setup(judged)
    except SetupError as err:
        raise SetupFailed(str(err)) from err


def stored_transcript(episode: EpisodeLog, names: list[str]) -> Transcript:
    """What the judge reads, from the stored episode: its turns (read from Sotopia's messages
    when it has none of its own) and the messages."""
    actions = episode_turns(episode)
    return Transcript(
        agent_names=names,
        messages=[[tuple(m) for m in turn] for turn in episode.messages],
        actions=actions,
        turns=episode.progress or len(actions),
        termination=[],
        termination_reason=episode.termination_reason or "",
        stats=GenerationStats(),
    )
