"""What every Parley process reads: where Redis and the data are, the models, the worker's limits.

Read from the environment (and a `.env` file when present); the API adds its own in graph/settings.
"""

from pathlib import Path
from typing import Self

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from parley.lifecycle.logs import LogFormat
from parley.storage import sentinel
from parley.storage.durability import Fsync, ReplicaAcks


def default_data_dir() -> Path:
    return Path.home() / ".parley"


class RunSettings(BaseSettings):
    """Settings of a worker process (and of the API, which can run one)."""

    model_config = SettingsConfigDict(env_prefix="PARLEY_", env_file=".env", extra="ignore")

    redis_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("REDIS_URL", "REDIS_OM_URL", "PARLEY_REDIS_URL"),
        description="Redis with JSON and Search, or its Sentinels (redis+sentinel://...); when "
        "unset (and no PARLEY_SENTINELS) an embedded Redis is started.",
    )
    sentinels: str | None = Field(
        default=None,
        description="Comma-separated host:port of the Sentinels that watch the primary, "
        "instead of a redis+sentinel:// URL.",
    )
    sentinel_service: str = Field(
        default="mymaster", description="The name the Sentinels monitor the primary under."
    )
    sentinel_password: str | None = Field(
        default=None, description="The Sentinels' own password, when they ask for one."
    )
    redis_password: str | None = Field(
        default=None, description="The primary's and replicas' password, with PARLEY_SENTINELS."
    )
    replicas_acked: int = Field(
        default=0,
        ge=0,
        description="Replicas that must hold a start, a turn, a status change or a person's "
        "action before it is acknowledged (WAIT); 0 waits for none.",
    )
    replica_ack_timeout: float = Field(
        default=1.0,
        gt=0,
        description="Seconds to wait for them; past it the write is not acknowledged (the API "
        "answers UNAVAILABLE, a worker retries).",
    )
    redis_fsync: Fsync = Field(
        default="everysec",
        description="When the embedded Redis syncs its append-only file: everysec (a power "
        "loss may lose about the last second of acknowledged writes) or always (before each "
        "answer; slower).",
    )
    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Embedded Redis data, append-only file and the assembled local model.",
    )
    seed: bool = Field(default=True, description="Load the sample data into an empty database.")
    models_file: Path | None = Field(
        default=None, description="JSON file of named OpenAI-compatible model endpoints."
    )
    concurrency: int = Field(
        default=512,
        ge=1,
        description="Most episodes one worker runs at once; below it, about twice the calls "
        "its models' adaptive limits take at once.",
    )
    lease_seconds: float = Field(
        default=30.0, gt=0, description="A dead worker's jobs are taken over after this long."
    )
    max_attempts: int = Field(
        default=3, ge=1, description="Starts per episode before it fails as 'worker lost'."
    )
    event_retention_seconds: float = Field(
        default=3600.0,
        gt=0,
        description="How long status events stay in the events log that episodeUpdates resumes "
        "from (older cursors get CURSOR_EXPIRED and a snapshot).",
    )
    model_call_retention_days: float = Field(
        default=30.0,
        ge=0,
        description="How long an episode's ledger of model calls (Episode.modelCalls) is kept "
        "after its last call, in days; 0 records no calls.",
    )
    log_format: LogFormat = Field(
        default="plain",
        description="plain text lines, or json: one JSON object per line (episode, attempt, "
        "worker and request ids as fields).",
    )
    metrics_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="`parley worker` only: serve its Prometheus metrics at /metrics on this port "
        "(the API serves them at its own /metrics).",
    )
    metrics_host: str = Field(
        default="127.0.0.1",
        description="`parley worker` only: the address its metrics port binds to.",
    )

    @field_validator("redis_url")
    @classmethod
    def _known_url(cls, url: str | None) -> str | None:
        return None if url is None else sentinel.check_url(url)

    @model_validator(mode="after")
    def _sentinel_url(self) -> Self:
        """PARLEY_SENTINELS and the rest, as the one redis+sentinel:// URL every process
        reads."""
        if self.sentinels:
            if self.redis_url is not None:
                raise ValueError("set REDIS_URL or PARLEY_SENTINELS, not both")
            target = sentinel.from_settings(
                self.sentinels,
                self.sentinel_service,
                password=self.redis_password,
                sentinel_password=self.sentinel_password,
            )
            self.redis_url = target.url()
        return self

    def replica_acks(self) -> ReplicaAcks | None:
        """What an acknowledged write waits for (None: no replica)."""
        if not self.replicas_acked:
            return None
        return ReplicaAcks(self.replicas_acked, self.replica_ack_timeout)
