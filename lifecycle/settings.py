"""What every Parley process reads: where Redis and the data are, the models, the worker's limits.

Read from the environment (and a `.env` file when present); the API adds its own in graph/settings.
"""

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from parley.lifecycle.logs import LogFormat
from parley.storage.durability import Fsync


def default_data_dir() -> Path:
    return Path.home() / ".parley"


class RunSettings(BaseSettings):
    """Settings of a worker process (and of the API, which can run one)."""

    model_config = SettingsConfigDict(env_prefix="PARLEY_", env_file=".env", extra="ignore")

    redis_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("REDIS_URL", "REDIS_OM_URL", "PARLEY_REDIS_URL"),
        description="Redis with JSON and Search; when unset an embedded Redis is started.",
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
