"""The changes a fork makes to its parent's setup, as inputs: shared by `forkEpisode` and by an
experiment design's arms (which are forks made for it)."""

from typing import Annotated

from pydantic import BaseModel, Field

from parley.core.limits import MAX_AGENTS, Age, LongText, RequiredText, ShortText

Seat = Annotated[int, Field(ge=0, lt=MAX_AGENTS)]


class SeatModelFields(BaseModel, extra="forbid"):
    seat: Seat
    model: ShortText


class InjectionFields(BaseModel, extra="forbid"):
    text: RequiredText
    to: Annotated[list[ShortText], Field(max_length=MAX_AGENTS)] = []


class GoalFields(BaseModel, extra="forbid"):
    seat: Seat
    goal: RequiredText


class ProfileFields(BaseModel, extra="forbid"):
    seat: Seat
    age: Age | None = None
    occupation: ShortText | None = None
    public_info: LongText | None = None
    personality_and_values: LongText | None = None
    decision_making_style: LongText | None = None
    big_five: ShortText | None = None
    mbti: ShortText | None = None
    secret: LongText | None = None
