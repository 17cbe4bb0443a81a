"""Rating studies over GraphQL: the researcher's fields (make a study, follow it, renew a link,
close it) and the rater's three (their assignment, a draft, a rating), each handing its input
to lifecycle/studies.py. Which credential may use which is graph/rater_access.py's."""

import asyncio
from typing import Any

import strawberry

from parley.engine.types import DimensionSpec
from parley.graph.connection import list_field, one_field
from parley.graph.context import Info
from parley.graph.episode_types import an_id, optional_id, when
from parley.graph.experiments import plain
from parley.graph.fields import shows, stored, wrapped
from parley.graph.payloads import user_errors
from parley.graph.study_agreement import DimensionAgreement
from parley.graph.types import UserError
from parley.lifecycle import studies as service
from parley.lifecycle.raters import RaterView, Rating, RatingTask, Saved
from parley.resolvers import study_plan, study_status
from parley.resolvers.blind import BlindAgent, BlindTurn
from parley.resolvers.study_status import StudyStatus
from parley.storage import models
from parley.storage.studies import GoldMiss as StoredGoldMiss


@strawberry.input(
    description="Which episodes a study rates: exactly one of ids, experimentId or tag; "
    "completed episodes only."
)
class StudyEpisodesInput:
    ids: list[strawberry.ID] | None = strawberry.field(default=None, description="In this order.")
    experiment_id: strawberry.ID | None = strawberry.field(
        default=None, description="The episodes now filling the experiment's slots."
    )
    tag: str | None = strawberry.field(default=None, description="Every episode with this tag.")


@strawberry.input(description="A score a rater is expected to give on a gold episode.")
class ExpectedScoreInput:
    agent: int = strawberry.field(description="The agent (0-based, in the episode's order).")
    dimension: str = strawberry.field(description="A dimension of the study's rubric.")
    score: float = strawberry.field(description="The expected score, within its range.")


@strawberry.input(description="An episode every rater rates, with the scores expected of them.")
class GoldEpisodeInput:
    episode_id: strawberry.ID = strawberry.field(description="A completed episode.")
    expected: list[ExpectedScoreInput] = strawberry.field(description="The expected scores.")
    tolerance: float = strawberry.field(
        default=1.0,
        description="How far a rater's score may be from the expected one before the rater "
        "is flagged (a flag only: the rating is kept).",
    )


@strawberry.input(description="A new rating study.")
class CreateRatingStudyInput:
    name: str = strawberry.field(description="Its name.")
    episodes: StudyEpisodesInput = strawberry.field(description="The episodes to rate.")
    evaluation_dimension_list_id: strawberry.ID | None = strawberry.field(
        default=None, description="The rubric's dimensions (default: Sotopia's seven)."
    )
    raters: int = strawberry.field(description="How many people rate (each gets a link).")
    rater_names: list[str] = strawberry.field(
        default_factory=list, description="Their names, in order (default: Rater 1, 2, ...)."
    )
    raters_per_episode: int = strawberry.field(
        default=1, description="How many raters rate each episode (the load is balanced)."
    )
    gold: list[GoldEpisodeInput] = strawberry.field(
        default_factory=list, description="Gold episodes: every rater rates each of them."
    )


@strawberry.type
class AgentDimension:
    """What a score of a rating is of: each of the score types below adds the score."""

    agent: int = strawberry.field(description="The agent (0-based).")
    dimension: str = strawberry.field(description="The dimension.")


@strawberry.input(description="One score of a rating.")
class RatingScoreInput(AgentDimension):
    score: int = strawberry.field(description="Within the dimension's range.")


@strawberry.input(description="One score of a rating being typed; empty while not chosen.")
class DraftScoreInput(AgentDimension):
    score: int | None = strawberry.field(default=None, description="Within its range, or null.")


@strawberry.input(description="One rater of a study.")
class RaterInput:
    study_id: strawberry.ID = strawberry.field(description="The study.")
    rater: int = strawberry.field(description="The rater (0-based).")


@strawberry.input(description="A rater's whole rating of one of their episodes.")
class SaveRatingInput(RaterInput):
    rater_token: str = strawberry.field(description="The rater's token (from their link).")
    position: int = strawberry.field(description="Which of the rater's episodes (0-based).")
    revision: int = strawberry.field(
        default=0, description="The episode's revision the rating was made from (RatingTask)."
    )
    scores: list[RatingScoreInput] = strawberry.field(
        description="Every agent on every dimension of the rubric."
    )
    reasoning: str = strawberry.field(default="", description="Why, in a few words.")


@strawberry.input(description="What a rater has typed so far for one of their episodes.")
class SaveRatingDraftInput(RaterInput):
    rater_token: str = strawberry.field(description="The rater's token (from their link).")
    position: int = strawberry.field(description="Which of the rater's episodes (0-based).")
    revision: int = strawberry.field(
        default=0, description="The episode's revision the draft was made from (RatingTask)."
    )
    scores: list[DraftScoreInput] = strawberry.field(
        default_factory=list, description="The scores chosen so far."
    )
    reasoning: str = strawberry.field(default="", description="The reasoning so far.")


@strawberry.input(description="Which rating study.")
class RatingStudyIdInput:
    id: strawberry.ID = strawberry.field(description="The study.")


@strawberry.input(description="Narrows a list of rating studies.")
class RatingStudyFilter:
    name: str | None = strawberry.field(default=None, description="Name (letter case ignored).")


@strawberry.type(description="A dimension of a rubric: what to rate, from low to high.")
@shows(DimensionSpec, held_as="spec")
class RubricDimension:
    spec: strawberry.Private[DimensionSpec]

    name = stored("The dimension's name (its key in the rewards).")
    description = stored("What to assess.")
    range_low = stored("The lowest score.")
    range_high = stored("The highest score.")


def rubric_of(study: models.RatingStudy) -> list[RubricDimension]:
    return [RubricDimension(spec=d) for d in study.rubric]


@strawberry.type(description="A rater's link: the token in it is shown once, here.")
class RaterLink:
    rater: int = strawberry.field(description="The rater (0-based).")
    name: str = strawberry.field(description="The rater's name.")
    token: str = strawberry.field(
        description="The rater's token: their page is /#/rate/<study>/<rater>?token=<token>."
    )


@strawberry.type(description="A score of a rating.")
class GivenScore(AgentDimension):
    score: int | None = strawberry.field(description="The score; null in a draft not chosen yet.")


@strawberry.type(description="A rating as its rater gave it (saved, or a draft).")
@shows(Rating)
class GivenRating:
    record: strawberry.Private[Rating]

    @strawberry.field(description="Its scores.")
    def scores(self) -> list[GivenScore]:
        return [
            GivenScore(agent=a, dimension=d, score=s) for (a, d), s in self.record.scores.items()
        ]

    reasoning = stored("Its reasoning.")


@strawberry.type(description="An agent of an episode, as a rater sees it.")
@shows(BlindAgent, held_as="agent")
class RatedAgent:
    agent: strawberry.Private[BlindAgent]

    name = stored("The agent's name.")
    age = stored("Age in years.")
    occupation = stored("Occupation.")
    gender_pronoun = stored("Pronouns.")
    public_info = stored("What anyone may know about the agent.")
    personality = stored("Personality and values.")
    goal = stored("The agent's goal in this scenario (with Sotopia's hint tags, if any).")

    @strawberry.field(
        description="What the agent hides; null unless the rubric rates keeping secrets."
    )
    def secret(self) -> str | None:
        return self.agent.secret or None


@strawberry.type(description="A turn of the conversation, or an environment message.")
@shows(BlindTurn, held_as="item")
class RatedTurn:
    item: strawberry.Private[BlindTurn]

    turn = stored("The turn (0-based).")
    speaker = stored("The agent's name, or Environment.")

    action_type = stored("What the agent did; null for an environment message.")

    text = stored("The words, or the action.")
    to = stored("Private recipients by name; empty: everyone saw it.")


@strawberry.type(description="One episode to rate: what happened, and the rating so far.")
@shows(RatingTask)
class RatingTaskType:
    record: strawberry.Private[RatingTask]

    position = stored("Its place in the rater's order (0-based).")
    revision = stored("How many times its rating was saved: send it back with a save or a draft.")

    @strawberry.field(description="The situation, as every agent knew it.")
    def scenario(self) -> str:
        return self.record.episode.scenario

    @strawberry.field(description="The agents, in order.")
    def agents(self) -> list[RatedAgent]:
        return [RatedAgent(agent=a) for a in self.record.episode.agents]

    @strawberry.field(description="The whole conversation, in order.")
    def turns(self) -> list[RatedTurn]:
        return [RatedTurn(item=t) for t in self.record.episode.turns]

    @strawberry.field(description="The rating saved; null before the first save.")
    def saved(self) -> GivenRating | None:
        return wrapped(GivenRating, self.record.saved)

    @strawberry.field(description="What was typed and not saved yet; null if nothing.")
    def draft(self) -> GivenRating | None:
        return wrapped(GivenRating, self.record.draft)


@strawberry.type(description="What a rater rates: the rubric, their episodes, one at a time.")
@shows(RaterView)
class RaterAssignment:
    record: strawberry.Private[RaterView]

    @strawberry.field(description="The study's name.")
    def study_name(self) -> str:
        return self.record.study.name

    rater = stored("The rater (0-based).")

    @strawberry.field(description="The rater's name.")
    def rater_name(self) -> str:
        return self.record.name

    @strawberry.field(description="The dimensions to rate each agent on.")
    def rubric(self) -> list[RubricDimension]:
        return rubric_of(self.record.study)

    rated = stored("Whether each of the rater's episodes is rated, in order.")

    @strawberry.field(description="The episode asked for, else the first not rated yet.")
    def current(self) -> RatingTaskType | None:
        return wrapped(RatingTaskType, self.record.task)


@strawberry.type(description="How far one rater has got.")
@shows(study_status.RaterProgress, held_as="progress")
class StudyRater:
    progress: strawberry.Private[study_status.RaterProgress]

    rater = stored("The rater (0-based).")
    name = stored("The rater's name.")

    annotator_id = stored("The Sotopia Annotator record of the rater.", an_id)

    assigned = stored("Episodes given to the rater, gold ones included.")
    rated = stored("Of those, the ones rated.")
    gold_rated = stored("Gold episodes rated.")
    gold_flagged = stored("Gold episodes rated further off than their tolerance.")


@strawberry.type(description="One episode of a study and its raters.")
@shows(study_status.EpisodeProgress, held_as="progress")
class StudyEpisode:
    progress: strawberry.Private[study_status.EpisodeProgress]

    episode_id = stored("The episode.", an_id)

    gold = stored("A gold episode: every rater rates it.")
    raters = stored("The raters it was given to.")
    rated_by = stored("Those who have rated it.")


@strawberry.type(description="A score of a gold episode further off than the tolerance.")
@shows(StoredGoldMiss, held_as="miss")
class GoldMiss:
    miss: strawberry.Private[StoredGoldMiss]

    agent = stored("The agent (0-based).")
    dimension = stored("The dimension.")
    expected = stored("The score expected.")
    given = stored("The score the rater gave.")


@strawberry.type(description="How a rater's rating of a gold episode compares with the expected.")
@shows(study_status.GoldResult, held_as="result")
class GoldCheck:
    result: strawberry.Private[study_status.GoldResult]

    rater = stored("The rater (0-based).")
    episode_id = stored("The gold episode.", an_id)

    @strawberry.field(description="Some score is further off than the tolerance.")
    def flagged(self) -> bool:
        return bool(self.result.misses)

    @strawberry.field(description="The scores further off than the tolerance.")
    def misses(self) -> list[GoldMiss]:
        return [GoldMiss(miss=m) for m in self.result.misses]


@strawberry.type(description="A saved score, as stored in the rating's rewards.")
class RatingScore(AgentDimension):
    score: float = strawberry.field(description="The score.")


@strawberry.type(description="A saved rating: a Sotopia AnnotationForEpisode record.")
@shows(study_status.StudyRating, held_as="rating")
class StudyRating:
    rating: strawberry.Private[study_status.StudyRating]

    rater = stored("The rater (0-based).")
    episode_id = stored("The episode rated.", an_id)

    @strawberry.field(description="The AnnotationForEpisode record's id.")
    def annotation_id(self) -> strawberry.ID:
        return strawberry.ID(self.rating.annotation.pk)

    @strawberry.field(description="Every score, by agent and dimension.")
    def scores(self) -> list[RatingScore]:
        found = study_plan.scores_of(self.rating.annotation.rewards)
        return [RatingScore(agent=a, dimension=d, score=s) for (a, d), s in found.items()]

    @strawberry.field(description="The rater's reasoning.")
    def reasoning(self) -> str:
        return self.rating.annotation.reasoning


@strawberry.type(description="How far a study has got.")
class StudyProgress:
    assigned: int = strawberry.field(description="Episodes given to raters, counted per rater.")
    rated: int = strawberry.field(description="Of those, the ones rated.")

    @strawberry.field(description="Every rater has rated every episode given to them.")
    def finished(self) -> bool:
        return self.rated >= self.assigned


@strawberry.type(description="Episodes that people rate, blind, each by several raters.")
@shows(models.RatingStudy)
class RatingStudy:
    record: strawberry.Private[models.RatingStudy]
    measured: strawberry.Private["asyncio.Future[StudyStatus] | None"] = None

    @strawberry.field(description="Its id.")
    def id(self) -> strawberry.ID:
        return strawberry.ID(str(self.record.pk))

    name = stored("Its name.")
    created_at = stored("When it was made.", when)
    closed_at = stored("When it was closed (its links open nothing since); null: open.", when)
    raters_per_episode = stored("How many raters rate each episode (gold ones: every rater).")
    evaluation_dimension_list_id = stored(
        "The list the rubric was copied from; null: Sotopia's seven.", optional_id
    )
    shows_secrets = stored("Whether raters see the agents' secrets (the rubric rates them).")

    @strawberry.field(description="The dimensions each agent is rated on.")
    def rubric(self) -> list[RubricDimension]:
        return rubric_of(self.record)

    async def status(self, info: Info) -> StudyStatus:
        """Read once for all the fields of this object that need it."""
        if self.measured is None:
            self.measured = asyncio.ensure_future(info.context.services.studies.status(self.record))
        return await self.measured

    @strawberry.field(description="How far it has got.")
    async def progress(self, info: Info) -> StudyProgress:
        status = await self.status(info)
        return StudyProgress(assigned=status.assigned, rated=status.rated)

    @strawberry.field(description="Each rater and how far they have got.")
    async def raters(self, info: Info) -> list[StudyRater]:
        return [StudyRater(progress=r) for r in (await self.status(info)).raters]

    @strawberry.field(description="Each episode (gold ones last) and who has rated it.")
    async def episodes(self, info: Info) -> list[StudyEpisode]:
        return [StudyEpisode(progress=e) for e in (await self.status(info)).episodes]

    @strawberry.field(description="Every saved rating of a gold episode, flagged or not.")
    async def gold_checks(self, info: Info) -> list[GoldCheck]:
        return [GoldCheck(result=g) for g in (await self.status(info)).gold]

    @strawberry.field(
        description="Every rating saved so far (Sotopia AnnotationForEpisode records), by rater."
    )
    async def ratings(self, info: Info) -> list[StudyRating]:
        found = await info.context.services.studies.ratings(self.record)
        return [StudyRating(rating=r) for r in found]

    @strawberry.field(
        description="How far the raters agree with each other and with the judge, per dimension "
        "of the rubric and overall (`overall_score`), from the ratings saved so far; a unit is "
        "one agent of one episode. Bootstrap intervals are seeded by the study: the same "
        "ratings give the same figures."
    )
    async def agreement(self, info: Info) -> list[DimensionAgreement]:
        found = await info.context.services.studies.agreement(self.record)
        return [DimensionAgreement.of(d) for d in found]


@strawberry.type(description="Result of createRatingStudy.")
class CreateRatingStudyPayload:
    study: RatingStudy | None = strawberry.field(description="Null on failure.")
    rater_links: list[RaterLink] = strawberry.field(
        description="One link's token per rater, in order: shown this once only."
    )
    user_errors: list[UserError] = strawberry.field(description="Why nothing was made.")


@strawberry.type(description="Result of closeRatingStudy.")
class RatingStudyPayload:
    study: RatingStudy | None = strawberry.field(description="Null on failure.")
    user_errors: list[UserError] = strawberry.field(description="Why nothing was done.")


@strawberry.type(description="Result of renewRaterLink.")
class RaterLinkPayload:
    rater_link: RaterLink | None = strawberry.field(
        description="The new link's token, shown once; the old link opens nothing now."
    )
    user_errors: list[UserError] = strawberry.field(description="Why nothing was done.")


@strawberry.type(description="Result of saveRating.")
class SaveRatingPayload:
    saved: strawberry.Private[Saved | None]
    refusals: strawberry.Private[list[UserError]]

    @strawberry.field(description="The rating is stored.")
    def stored(self) -> bool:
        return self.saved is not None

    @strawberry.field(description="The episode's revision now; null if refused.")
    def revision(self) -> int | None:
        return None if self.saved is None else self.saved.revision

    @strawberry.field(description="Episodes the rater has rated now; null if refused.")
    def rated(self) -> int | None:
        return None if self.saved is None else self.saved.rated

    @strawberry.field(description="Episodes given to the rater; null if refused.")
    def total(self) -> int | None:
        return None if self.saved is None else self.saved.total

    @strawberry.field(description="Why nothing was stored.")
    def user_errors(self) -> list[UserError]:
        return self.refusals


@strawberry.type(description="Result of saveRatingDraft.")
class SaveRatingDraftPayload:
    stored: bool = strawberry.field(description="The draft is kept.")
    user_errors: list[UserError] = strawberry.field(description="Why it was not.")


@strawberry.type
class StudyQuery:
    rating_study = one_field(
        RatingStudy, lambda info, pk: info.context.services.studies.get(pk), "rating study"
    )

    rating_studies = list_field(
        RatingStudy,
        lambda record: RatingStudy(record=record),
        RatingStudyFilter,
        service.list_studies,
        newest_first=True,
    )

    @strawberry.field(
        description="What a rater rates, for the holder of the rater's token (what the rating "
        "page reads): the episode at `position` in their order (from 0), else (none asked, or "
        "none there) the first not rated yet; null with a wrong token or id, or once the study "
        "is closed."
    )
    async def rater_assignment(
        self,
        info: Info,
        study_id: strawberry.ID,
        rater: int,
        rater_token: str,
        position: int | None = None,
    ) -> RaterAssignment | None:
        view = await info.context.services.raters.view(str(study_id), rater, rater_token, position)
        return wrapped(RaterAssignment, view)


@strawberry.type
class StudyMutation:
    @strawberry.mutation(
        description="Make a rating study of completed episodes: each rater gets a link (its "
        "token shown once), each episode `ratersPerEpisode` raters, every rater every gold "
        "episode. Nothing is made on a user error."
    )
    async def create_rating_study(
        self, info: Info, input: CreateRatingStudyInput
    ) -> CreateRatingStudyPayload:
        fields: dict[str, Any] = plain(input)
        study, tokens, errors = await info.context.services.studies.create(fields)
        links = [
            RaterLink(rater=n, name=r.name, token=token)
            for n, (r, token) in enumerate(zip(study.raters if study else [], tokens, strict=True))
        ]
        return CreateRatingStudyPayload(
            study=wrapped(RatingStudy, study), rater_links=links, user_errors=user_errors(errors)
        )

    @strawberry.mutation(
        description="Save a rater's rating of one of their episodes, as a Sotopia "
        "AnnotationForEpisode. Refused, changing nothing, without the rater's token, with a "
        "score missing or off its range, or when it was saved meanwhile from elsewhere "
        "(another revision: load it again)."
    )
    async def save_rating(self, info: Info, input: SaveRatingInput) -> SaveRatingPayload:
        saved, errors = await info.context.services.raters.rate(plain(input))
        return SaveRatingPayload(saved=saved, refusals=user_errors(errors))

    @strawberry.mutation(
        description="Keep what a rater has typed for one of their episodes, to be found again "
        "after a reload or on another device; not kept when a save came since its revision."
    )
    async def save_rating_draft(
        self, info: Info, input: SaveRatingDraftInput
    ) -> SaveRatingDraftPayload:
        kept, errors = await info.context.services.raters.draft(plain(input))
        return SaveRatingDraftPayload(stored=kept, user_errors=user_errors(errors))

    @strawberry.mutation(description="A new link for a rater; their old link opens nothing now.")
    async def renew_rater_link(self, info: Info, input: RaterInput) -> RaterLinkPayload:
        studies = info.context.services.studies
        token, errors = await studies.renew(str(input.study_id), input.rater)
        study = await studies.get(str(input.study_id)) if token else None
        link = (
            RaterLink(rater=input.rater, name=study.raters[input.rater].name, token=token)
            if study is not None and token
            else None
        )
        return RaterLinkPayload(rater_link=link, user_errors=user_errors(errors))

    @strawberry.mutation(
        description="Close a study: its rater links open nothing from now on; its ratings stay."
    )
    async def close_rating_study(self, info: Info, input: RatingStudyIdInput) -> RatingStudyPayload:
        study, errors = await info.context.services.studies.close(str(input.id))
        return RatingStudyPayload(
            study=wrapped(RatingStudy, study), user_errors=user_errors(errors)
        )
