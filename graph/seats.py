"""People in the loop over GraphQL: a person's action, seat claims, pause, step, resume and
environment messages (lifecycle/seats.py, lifecycle/control.py)."""

from collections.abc import Awaitable, Callable

import strawberry

from parley.core.errors import UserError as Refusal
from parley.graph.context import Info
from parley.graph.enums import ActionType
from parley.graph.episode_types import Episode
from parley.graph.fields import wrapped
from parley.graph.payloads import SimulationPayload, user_errors
from parley.graph.seat_types import EnvironmentMessage, Perspective, SeatToken
from parley.graph.types import UserError
from parley.lifecycle.seats import holds_seat
from parley.resolvers import perspective
from parley.storage.models import EpisodeLog
from parley.storage.records import get_or_none


@strawberry.input(description="A person's turn for the seat they hold.")
class SubmitActionInput:
    episode_id: strawberry.ID = strawberry.field(description="The episode.")
    seat: int = strawberry.field(description="The seat (0-based, in agent order).")
    seat_token: str = strawberry.field(description="The seat's token (startSimulation, claimSeat).")
    action_type: ActionType = strawberry.field(description="What the agent does.")
    argument: str = strawberry.field(
        default="", description="The words or the action; needed except for none and leave."
    )
    to: list[str] = strawberry.field(
        default_factory=list,
        description="Private recipients by name (other agents of the episode); empty: everyone.",
    )


@strawberry.input(description="An open human seat to claim.")
class ClaimSeatInput:
    episode_id: strawberry.ID = strawberry.field(description="The episode.")
    seat: int = strawberry.field(description="The seat (0-based, in agent order).")


@strawberry.input(description="An episode to pause, step or resume.")
class EpisodeControlInput:
    id: strawberry.ID = strawberry.field(description="The episode.")


@strawberry.input(description="A message from the environment to some or all agents.")
class InjectEventInput:
    episode_id: strawberry.ID = strawberry.field(description="The episode.")
    text: str = strawberry.field(description="What the environment says.")
    to: list[str] = strawberry.field(
        default_factory=list, description="Agent names it is for; empty: everyone."
    )


@strawberry.type(description="Result of submitAction.")
class ActionPayload:
    record: strawberry.Private[EpisodeLog | None]
    """The episode after the action, only when the action was stored: a refusal tells nothing
    of the episode or the seat."""
    seat: strawberry.Private[int]
    stored: strawberry.Private[int | None]
    refusals: strawberry.Private[list[UserError]]

    @strawberry.field(description="The turn event's sequence; null if refused.")
    def sequence(self) -> int | None:
        return self.stored

    @strawberry.field(description="Why nothing was done.")
    def user_errors(self) -> list[UserError]:
        return self.refusals

    @strawberry.field(
        description="The episode after the action; null if refused, and for a request with a "
        "seat token alone (read `perspective`)."
    )
    def episode(self, info: Info) -> Episode | None:
        if self.record is None or info.context.seat_only:
            return None
        return Episode(record=self.record)

    @strawberry.field(
        description="The episode as the seat's agent sees it after the action; null if refused."
    )
    async def perspective(self) -> Perspective | None:
        if self.record is None:
            return None
        found, _ = await perspective.perspective(self.record, self.seat)
        return Perspective(view=found) if found else None


@strawberry.type(description="Result of claimSeat.")
class SeatPayload:
    seat_token: SeatToken | None = strawberry.field(description="The seat's token, shown once.")
    user_errors: list[UserError] = strawberry.field(description="Why nothing was done.")


@strawberry.type(description="Result of injectEvent.")
class InjectionPayload:
    environment_message: EnvironmentMessage | None = strawberry.field(
        description="The message as stored; its turn is set when a turn delivers it."
    )
    user_errors: list[UserError] = strawberry.field(description="Why nothing was done.")


Change = Callable[[str], Awaitable[tuple[EpisodeLog | None, list[Refusal]]]]


def _payload(record: EpisodeLog | None, errors: list[Refusal]) -> SimulationPayload:
    return SimulationPayload(episode=wrapped(Episode, record), user_errors=user_errors(errors))


@strawberry.type
class SeatQuery:
    @strawberry.field(
        description="The episode as the agent in a human seat sees it, for the holder of the "
        "seat's token (what the seat page reads); null with a wrong token or id."
    )
    async def seat_view(
        self, info: Info, episode_id: strawberry.ID, seat: int, seat_token: str
    ) -> Perspective | None:
        record = await get_or_none(EpisodeLog, str(episode_id))
        if record is None or not holds_seat(record, seat, seat_token):
            return None
        found, _ = await perspective.perspective(record, seat)
        return Perspective(view=found) if found else None


@strawberry.type
class SeatMutation:
    @strawberry.mutation(
        description="Play a human seat's turn. Refused, changing nothing, without the seat's "
        "token, when it is not that seat's turn, or for an argument missing or a recipient "
        "who is not in the episode."
    )
    async def submit_action(self, info: Info, input: SubmitActionInput) -> ActionPayload:
        sequence, errors = await info.context.services.seats.act(
            {
                "episode_id": input.episode_id,
                "seat": input.seat,
                "seat_token": input.seat_token,
                "action_type": input.action_type,
                "argument": input.argument,
                "to": input.to,
            }
        )
        record = None if sequence is None else await get_or_none(EpisodeLog, str(input.episode_id))
        return ActionPayload(
            record=record,
            seat=input.seat,
            stored=sequence,
            refusals=user_errors(errors),
        )

    @strawberry.mutation(description="Take an open human seat: its token, to the first caller.")
    async def claim_seat(self, info: Info, input: ClaimSeatInput) -> SeatPayload:
        token, errors = await info.context.services.seats.claim(str(input.episode_id), input.seat)
        return SeatPayload(
            seat_token=SeatToken(seat=input.seat, token=token) if token else None,
            user_errors=user_errors(errors),
        )

    @strawberry.mutation(
        description="Pause an episode: a queued or waiting one at once, a running one before a "
        "turn once its worker notices, within about a second (PAUSED holds no worker)."
    )
    async def pause_simulation(self, info: Info, input: EpisodeControlInput) -> SimulationPayload:
        return _payload(*await info.context.services.control.pause(str(input.id)))

    @strawberry.mutation(description="Queue a paused episode again: it goes on from its turns.")
    async def resume_simulation(self, info: Info, input: EpisodeControlInput) -> SimulationPayload:
        return _payload(*await info.context.services.control.resume(str(input.id)))

    @strawberry.mutation(
        description="Run exactly one more turn, then pause (a running episode: the turn after "
        "the one it plays)."
    )
    async def step_simulation(self, info: Info, input: EpisodeControlInput) -> SimulationPayload:
        return _payload(*await info.context.services.control.step(str(input.id)))

    @strawberry.mutation(
        description="Add an environment message that its agents see from their next turn; "
        "stored in the transcript as the Environment's."
    )
    async def inject_event(self, info: Info, input: InjectEventInput) -> InjectionPayload:
        stored, errors = await info.context.services.control.inject(
            {"episode_id": input.episode_id, "text": input.text, "to": input.to}
        )
        return InjectionPayload(
            environment_message=EnvironmentMessage.of(stored) if stored else None,
            user_errors=user_errors(errors),
        )
