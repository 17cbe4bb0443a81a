"""GraphQL types of an episode's ledger of model calls (resolvers/model_calls.py)."""

from datetime import datetime
from typing import Any

import strawberry
from strawberry.scalars import JSON

from parley.graph.fields import shows, stored
from parley.graph.seat_types import moment
from parley.resolvers.model_calls import ResolvedCall
from parley.storage.ledger import StoredCall


@strawberry.type(description="One message of a model request, as sent.")
class CallMessage:
    role: str = strawberry.field(description="system, user or assistant.")
    content: str = strawberry.field(description="Its text.")


def _message(body: Any) -> CallMessage | None:
    if not isinstance(body, dict):
        return None
    return CallMessage(role=str(body.get("role", "")), content=str(body.get("content", "")))


@strawberry.type(
    description="One request Parley sent to a model for an episode, as sent, and how it went "
    "(the episode's ledger of model calls)."
)
@shows(StoredCall, held_as="call")
class ModelCall:
    resolved: strawberry.Private[ResolvedCall]
    call: strawberry.Private[StoredCall]

    @strawberry.field(description="The call's place in the episode's ledger.")
    def id(self) -> strawberry.ID:
        return strawberry.ID(self.resolved.id)

    purpose = stored("What the model was asked for.")
    attempt = stored("The episode's attempt (run) that made it.")
    seat = stored("The agent's seat (0-based) whose turn asked; null for a judge.")
    turn = stored("The turn it was made in; null for a judge.")
    judge = stored("The judge run that asked, `<model>#<repeat>`; null for a turn.")
    model = stored("The model, as the episode names it.")
    params = stored(
        "The request's other keys as sent: the provider's model name, temperature, "
        "max_tokens, stop and the models file's extra body."
    )

    @strawberry.field(description="The messages as sent, in order; null for one no longer stored.")
    def messages(self) -> list[CallMessage | None]:
        return [_message(body) for body in self.resolved.messages]

    @strawberry.field(description="The response_format (JSON schema) sent, if one was.")
    def response_format(self) -> JSON | None:
        return self.resolved.response_format  # type: ignore[no-any-return]

    message_hashes = stored(
        "SHA-256 (hex) of each message's canonical JSON: each is stored once.",
        source="messages",
    )
    request_hash = stored(
        "SHA-256 (hex) of the whole request body's canonical JSON (sorted keys, no spaces): "
        "what an identical request is recognised by.",
        source="request",
    )
    answer = stored("The answer's text as the provider gave it; null when none came.")
    prompt_tokens = stored("Prompt tokens (the provider's count, or an estimate).")
    completion_tokens = stored("Completion tokens (the provider's count, or an estimate).")
    estimated_tokens = stored("How many of these tokens were estimated.")
    latency_ms = stored("Milliseconds of the request that answered (or of the last tried).")
    attempts = stored("Requests sent for this call, retries included.")
    error_code = stored(
        "Why it gave no answer: timeout, connection, rate_limited, server, client or "
        "no_choices, or cancelled (cut short, or not sent, when another request of the same "
        "judge or turn failed); null when answered."
    )
    error_message = stored("What the provider or the connection said, when it failed.")
    served = stored(
        "Set when no model was asked: REPLAY (the replayed episode's ledger) or CACHE (an "
        "identical request's recorded answer); tokens and latency are then 0."
    )
    served_from = stored("The episode whose ledger gave the answer, when served.")

    @strawberry.field(description="When the call ended.")
    def finished_at(self) -> datetime:
        return moment(self.call.at)


def model_call(resolved: ResolvedCall) -> ModelCall:
    return ModelCall(resolved=resolved, call=resolved.call)
