"""Draft jobs: a large draft (say 50 scenarios) asked of a model in parts, as queued jobs.

A job is split into parts of a few agents or scenarios each; every part is an entry of the
episode job queue (storage/jobs.py) with the same leases and takeover, so parts run on any
worker, at once. Each part's outcome is stored beside the job (storage/draft_jobs.py); the job's
status and progress are read from them, so no two workers ever write the same value.
"""

import asyncio
import logging
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import redis.asyncio as redis
from pydantic import BaseModel, Field, model_validator
from ulid import ULID

from parley.core.errors import ErrorCode, UserError, camel, validated
from parley.core.limits import LIST_MAX, RecordId, ShortText
from parley.engine.drafting import DraftSpec, WorldDraft, draft_world
from parley.engine.errors import LLMError
from parley.engine.llm import LLMRouter, ModelCatalog
from parley.engine.models import LOCAL_MODEL
from parley.resolvers.drafts import SAVE_SCENARIOS, Prompt, checked_cast, draft_check
from parley.resolvers.plausible import name_problems
from parley.storage import draft_jobs
from parley.storage.jobs import JobQueue
from parley.storage.models import RelationshipType
from parley.storage.records import storable

log = logging.getLogger(__name__)
PART = 5
"""Agents or scenarios asked for in one request."""


class DraftJobFields(BaseModel, extra="forbid"):
    prompt: Prompt
    model: ShortText = LOCAL_MODEL
    agents: Annotated[int, Field(ge=0, le=LIST_MAX)] = 0
    scenarios: Annotated[int, Field(ge=0, le=SAVE_SCENARIOS)] = 0
    agent_ids: Annotated[list[RecordId], Field(min_length=2, max_length=LIST_MAX)] | None = None
    relationship: RelationshipType | None = None

    @model_validator(mode="after")
    def something(self) -> "DraftJobFields":
        if not (self.agents or self.scenarios):
            raise ValueError("ask for at least one agent or scenario")
        return self


class DraftJobStatus(StrEnum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    """Every part gave a draft."""
    FAILED = "FAILED"
    """Every part ended, and some gave no draft (their errors say why)."""


@dataclass(frozen=True)
class Part:
    agents: int
    scenarios: int

    @property
    def size(self) -> int:
        return self.agents + self.scenarios


def split(agents: int, scenarios: int) -> list[Part]:
    parts = [Part(min(PART, agents - i), 0) for i in range(0, agents, PART)]
    return parts + [Part(0, min(PART, scenarios - i)) for i in range(0, scenarios, PART)]


@dataclass
class DraftJob:
    id: str
    model: str
    prompt: str
    parts: list[Part]
    seats: int
    cast: list[str]
    relationship: RelationshipType | None
    created_at: float
    outcomes: dict[int, dict[str, Any]]
    starts: int

    @property
    def total(self) -> int:
        return sum(p.size for p in self.parts)

    @property
    def done(self) -> int:
        return sum(p.size for i, p in enumerate(self.parts) if i in self.outcomes)

    @property
    def status(self) -> DraftJobStatus:
        if len(self.outcomes) == len(self.parts):
            failed = any(o.get("error") for o in self.outcomes.values())
            return DraftJobStatus.FAILED if failed else DraftJobStatus.COMPLETED
        return DraftJobStatus.RUNNING if self.outcomes or self.starts else DraftJobStatus.QUEUED

    def spec(self, part: int) -> DraftSpec:
        size = self.parts[part]
        return DraftSpec(
            prompt=self.prompt,
            agents=size.agents,
            scenarios=size.scenarios,
            seats=self.seats,
            cast=self.cast,
            relationship=self.relationship,
        )

    def result(self) -> tuple[WorldDraft, list[UserError]]:
        """What the ended parts drafted, in part order, with their problems re-numbered to the
        whole draft; a part that failed gives an error on `parts.<n>`."""
        whole = WorldDraft()
        errors: list[UserError] = []
        for i in range(len(self.parts)):
            outcome = self.outcomes.get(i)
            if outcome is None:
                continue
            if outcome.get("error"):
                errors.append(UserError(["parts", str(i)], outcome["error"], ErrorCode.INVALID))
                continue
            draft = WorldDraft.model_validate(outcome["draft"])
            offsets = {"agents": len(whole.agents), "scenarios": len(whole.scenarios)}
            for path, message in outcome.get("problems", []):
                kind, index, *rest = path
                moved = [kind, str(int(index) + offsets.get(kind, 0)), *rest]
                field = ["draft", *(camel(p) for p in moved)]
                errors.append(UserError(field, message, ErrorCode.INVALID))
            whole.agents += draft.agents
            whole.scenarios += draft.scenarios
        # Two parts can each draft an agent of one name: no part's check sees both.
        reported = {(tuple(e.field), e.message) for e in errors}
        for path, message in name_problems([a.model_dump() for a in whole.agents]):
            field = ["draft", *(camel(p) for p in path)]
            if (tuple(field), message) not in reported:
                errors.append(UserError(field, message, ErrorCode.INVALID))
        return whole, errors


def _settings(job: DraftJob) -> dict[str, Any]:
    return {
        "model": job.model,
        "prompt": job.prompt,
        "parts": [[p.agents, p.scenarios] for p in job.parts],
        "seats": job.seats,
        "cast": job.cast,
        "relationship": None if job.relationship is None else int(job.relationship),
        "created_at": job.created_at,
    }


async def queue(
    client: redis.Redis, jobs: JobQueue, models: ModelCatalog, fields: dict[str, Any]
) -> tuple[DraftJob | None, list[UserError]]:
    """Check the request, then write the job and one queue entry per part in one transaction;
    nothing is written when anything is refused."""
    valid, errors = validated(DraftJobFields, fields)
    if valid is None:
        return None, errors
    cast, errors = await checked_cast(client, models, valid.model, valid.agent_ids)
    if errors:
        return None, errors
    job = DraftJob(
        id=str(ULID()),
        model=valid.model,
        prompt=valid.prompt,
        parts=split(valid.agents, valid.scenarios),
        seats=len(cast) if cast else 2,
        cast=cast,
        relationship=valid.relationship,
        created_at=time.time(),
        outcomes={},
        starts=0,
    )
    await draft_jobs.queue(client, jobs, job.id, _settings(job), len(job.parts))
    log.info("draft job queued", extra={"draft_job": job.id, "parts": len(job.parts)})
    return job, []


async def get_draft_job(client: redis.Redis, job_id: str) -> DraftJob | None:
    if not storable(job_id):
        return None
    stored = await draft_jobs.read(client, job_id)
    if stored is None:
        return None
    data = stored.settings
    level = data["relationship"]
    return DraftJob(
        id=job_id,
        model=data["model"],
        prompt=data["prompt"],
        parts=[Part(a, s) for a, s in data["parts"]],
        seats=data["seats"],
        cast=data["cast"],
        relationship=None if level is None else RelationshipType(level),
        created_at=data["created_at"],
        outcomes=stored.outcomes,
        starts=stored.starts,
    )


class Drafter:
    """Runs the parts of draft jobs."""

    def __init__(
        self, client: redis.Redis, llm: LLMRouter, jobs: JobQueue, max_attempts: int
    ) -> None:
        self.client = client
        self.llm = llm
        self.jobs = jobs
        self.max_attempts = max_attempts

    async def _end(self, job_id: str, part: int, outcome: dict[str, Any]) -> None:
        await draft_jobs.end_part(self.client, job_id, part, outcome)

    async def run(self, job_id: str, part: int) -> None:
        """Draft one part; it ends with its draft (and what breaks the limits) or an error."""
        job = await get_draft_job(self.client, job_id)
        if job is None or part in job.outcomes or not 0 <= part < len(job.parts):
            return
        starts = await draft_jobs.start_part(self.client, job_id, part)
        if starts > self.max_attempts:
            await self._end(job_id, part, {"error": f"worker lost {starts - 1} times"})
            return
        try:
            outcome = await draft_world(
                self.llm,
                job.model,
                job.spec(part),
                draft_check(job.seats if job.parts[part].scenarios else None),
            )
        except LLMError as err:
            await self._end(job_id, part, {"error": f"the model gave no usable draft: {err}"})
            return
        except asyncio.CancelledError:
            # Handed back at shutdown: queue the part again, its start not counted as a loss.
            await draft_jobs.hand_back_part(self.client, self.jobs, job_id, part)
            raise
        problems = [[path, message] for path, message in outcome.problems]
        await self._end(
            job_id, part, {"draft": outcome.draft.model_dump(mode="json"), "problems": problems}
        )
        log.info("draft part done", extra={"draft_job": job_id, "part": part})
