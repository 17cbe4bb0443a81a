"""The API's settings, on top of what every process reads (lifecycle/settings.py)."""

from pydantic import Field

from parley.lifecycle.settings import RunSettings


class Settings(RunSettings):
    """Every setting `parley serve` reads; the README's settings table mirrors this class."""

    host: str = Field(default="127.0.0.1", description="Address the API binds to.")
    port: int = Field(default=8000, ge=0, le=65535, description="Port the API binds to.")
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
    allowed_hosts: str = Field(
        default="",
        description="Comma-separated Host names the API answers ('*' for any); unset: the "
        "loopback names and the bound address, or any name when bound to 0.0.0.0 or ::.",
    )
    header_timeout: float = Field(
        default=10.0, gt=0, description="Seconds a request's headers may take to arrive."
    )
    body_timeout: float = Field(
        default=30.0, gt=0, description="Seconds a request's body may take to arrive."
    )
    ws_init_timeout: float = Field(
        default=10.0, gt=0, description="Seconds a websocket may take to send connection_init."
    )
    worker: bool = Field(default=True, description="Run a worker inside `parley serve`.")
    ws_per_message_deflate: bool = Field(
        default=False,
        description="Offer permessage-deflate on websockets: smaller frames for clients on slow "
        "links, at about twice the API's CPU per delivered event (bench/RESULTS.md, issue 11).",
    )


def split(value: str) -> list[str]:
    """A comma-separated setting as a list, blanks dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]
