"""Service settings, read from the environment (and a `.env` file when present)."""

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_data_dir() -> Path:
    return Path.home() / ".parley"


class Settings(BaseSettings):
    """Every setting Parley reads; the README's settings table mirrors this class."""

    model_config = SettingsConfigDict(env_prefix="PARLEY_", env_file=".env", extra="ignore")

    redis_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("REDIS_URL", "REDIS_OM_URL", "PARLEY_REDIS_URL"),
        description="Redis with JSON and Search; when unset an embedded Redis is started.",
    )
    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Embedded Redis data, append-only file and the assembled local model.",
    )
    host: str = Field(default="127.0.0.1", description="Address the API binds to.")
    port: int = Field(default=8000, ge=0, le=65535, description="Port the API binds to.")
    seed: bool = Field(default=True, description="Load the sample data into an empty database.")
    models_file: Path | None = Field(
        default=None, description="JSON file of named OpenAI-compatible model endpoints."
    )
    tokens: str = Field(
        default="",
        description="Comma-separated bearer tokens; when set, every GraphQL request needs one.",
    )
    max_depth: int = Field(default=10, ge=1, description="Deepest selection a document may nest.")
    max_aliases: int = Field(default=30, ge=0, description="Aliases one document may use.")
    max_tokens: int = Field(default=5_000, ge=10, description="Tokens one document may have.")
    max_body_bytes: int = Field(
        default=1_000_000, ge=1_000, description="Largest HTTP request body accepted."
    )
    introspection: bool = Field(default=True, description="Answer `__schema`/`__type` queries.")
    graphiql: bool = Field(default=True, description="Serve GraphiQL to browsers at /graphql.")
    allowed_origins: str = Field(
        default="",
        description="Comma-separated browser origins allowed to open websockets ('*' for any).",
    )
    cors_origins: str = Field(
        default="", description="Comma-separated origins allowed to call the API from browsers."
    )
    ws_init_timeout: float = Field(
        default=10.0, gt=0, description="Seconds a websocket may take to send connection_init."
    )
    worker: bool = Field(default=True, description="Run a worker inside `parley serve`.")
    concurrency: int = Field(default=8, ge=1, description="Episodes one worker runs at once.")
    lease_seconds: float = Field(
        default=30.0, gt=0, description="A dead worker's jobs are taken over after this long."
    )
    max_attempts: int = Field(
        default=3, ge=1, description="Starts per episode before it fails as 'worker lost'."
    )


def split(value: str) -> list[str]:
    """A comma-separated setting as a list, blanks dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]
