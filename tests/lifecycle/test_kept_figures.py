"""Agreement figures are computed once per set of tables: asked again at the same version of
their inputs they come from what is kept without reading anything, at another version the tables
are read again and computed again only if they changed, requests arriving together for one key
share one task, and the least recently asked key's figures go first when more are kept than the
limit."""

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence

from parley.engine.types import DimensionSpec
from parley.lifecycle.kept_figures import KeptFigures
from parley.resolvers import study_agreement
from parley.resolvers.study_agreement import DimensionAgreement
from parley.resolvers.study_status import StudyRating
from parley.storage.models import AnnotationForEpisode, RatingStudy
from parley.storage.studies import ScoredEpisode
from tests.support.scores import reward

GOAL = DimensionSpec(name="goal", description="", range_low=0, range_high=10)
EPISODES = [f"e{n}" for n in range(6)]


def study(pk: str = "study") -> RatingStudy:
    return RatingStudy(pk=pk, name="s", episode_ids=EPISODES, rubric=[GOAL])


def scored() -> dict[str, ScoredEpisode]:
    return {
        pk: ScoredEpisode(
            agents=["a", "b"],
            models=["judge", f"m{n % 2}", f"m{(n + 1) % 2}"],
            rewards=[reward(n % 10), reward((n * 3) % 10)],
        )
        for n, pk in enumerate(EPISODES)
    }


def given[T](tables: Sequence[T]) -> Callable[[], Awaitable[Sequence[T]]]:
    """A read of these tables."""

    async def read() -> Sequence[T]:
        return tables

    return read


async def figures_of(
    figures: KeptFigures,
    of: RatingStudy,
    rated: list[StudyRating],
    episodes: dict[str, ScoredEpisode],
    version: str = "1",
) -> list[DimensionAgreement]:
    """As a study's figures are asked for, its inputs at `version`."""
    tables = study_agreement.tables(of, rated, episodes)
    return await figures.of(
        f"study:{of.pk}", version, given(tables), lambda table: study_agreement.agreement(of, table)
    )


def ratings(shift: int = 0) -> list[StudyRating]:
    found = []
    for rater in range(3):
        for n, pk in enumerate(EPISODES):
            goals = [(n + rater + shift) % 10, (n * 3 + rater) % 10]
            annotation = AnnotationForEpisode(
                pk=f"{rater}-{pk}",
                episode=pk,
                annotator_id=str(rater),
                rewards=[reward(g) for g in goals],
                reasoning="",
            )
            found.append(StudyRating(rater, pk, annotation))
    return found


async def test_the_same_version_is_answered_from_what_is_kept_without_reading() -> None:
    figures = KeptFigures()
    first = await figures_of(figures, study(), ratings(), scored())
    again = await figures_of(figures, study(), ratings(), scored())
    assert figures.computed == 1 and figures.read == 1 and again is first
    expected = [
        study_agreement.agreement(study(), t)
        for t in study_agreement.tables(study(), ratings(), scored())
    ]
    assert first == expected


async def test_a_changed_rating_or_score_computes_them_again() -> None:
    figures = KeptFigures()
    first = await figures_of(figures, study(), ratings(), scored())
    changed = await figures_of(figures, study(), ratings(shift=1), scored(), version="2")
    assert figures.computed == 2 and changed != first
    rescored = scored()
    rescored["e0"] = rescored["e0"].model_copy(update={"rewards": [reward(9), reward(9)]})
    await figures_of(figures, study(), ratings(shift=1), rescored, version="3")
    assert figures.computed == 3


async def test_a_new_version_with_the_same_tables_reads_them_and_computes_nothing() -> None:
    figures = KeptFigures()
    first = await figures_of(figures, study(), ratings(), scored())
    again = await figures_of(figures, study(), ratings(), scored(), version="2")
    assert figures.read == 2 and figures.computed == 1 and again is first
    await figures_of(figures, study(), ratings(), scored(), version="2")
    assert figures.read == 2


async def test_requests_arriving_together_share_one_computation() -> None:
    figures = KeptFigures()
    answers = await asyncio.gather(
        *(figures_of(figures, study(), ratings(), scored()) for _ in range(8))
    )
    assert figures.computed == 1
    assert all(answer is answers[0] for answer in answers)


async def test_the_least_recently_asked_study_goes_first() -> None:
    figures = KeptFigures(kept=2)
    for pk in ("a", "b"):
        await figures_of(figures, study(pk), ratings(), scored())
    await figures_of(
        figures, study("a"), ratings(), scored()
    )  # "a" asked again: "b" is now the oldest
    await figures_of(figures, study("c"), ratings(), scored())
    assert figures.computed == 3
    await figures_of(figures, study("a"), ratings(), scored())
    assert figures.computed == 3
    await figures_of(figures, study("b"), ratings(), scored())
    assert figures.computed == 4


async def test_a_request_given_up_leaves_its_computation_to_the_next_one() -> None:
    """A caller that goes away (a websocket operation completed, a client gone) while the
    figures are computed does not free the slot for a second computation beside the first,
    still running in its thread: the next request for the same tables waits for that one, and
    it is kept."""
    figures = KeptFigures()
    started, release = threading.Event(), threading.Event()
    running = 0
    most = 0
    lock = threading.Lock()

    def slow(table: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        started.set()
        release.wait(10)
        with lock:
            running -= 1
        return table * 2

    first = asyncio.create_task(figures.of("study:big", "1", given([1, 2]), slow))
    assert await asyncio.to_thread(started.wait, 10)
    first.cancel()
    second = asyncio.create_task(figures.of("study:big", "1", given([1, 2]), slow))
    await asyncio.sleep(0.2)
    release.set()
    assert await second == [2, 4]
    assert most == 1 and figures.computed == 1


async def test_a_computation_nobody_waits_for_any_more_is_dropped_before_it_starts() -> None:
    """Requests given up while they wait for the process's one computation slot leave no
    computation behind them; one asked again meanwhile still gets its figures."""
    figures = KeptFigures()
    started, release = threading.Event(), threading.Event()
    computed: list[int] = []

    def slow(table: int) -> int:
        computed.append(table)
        started.set()
        release.wait(10)
        return table

    busy = asyncio.create_task(figures.of("study:busy", "1", given([0]), slow))
    assert await asyncio.to_thread(started.wait, 10)
    given_up = [
        asyncio.create_task(figures.of(f"study:{n}", "1", given([n]), slow)) for n in (1, 2)
    ]
    kept_asking = asyncio.create_task(figures.of("study:3", "1", given([3]), slow))
    await asyncio.sleep(0.1)
    for request in given_up:
        request.cancel()
    await asyncio.sleep(0.1)
    asked_again = asyncio.create_task(figures.of("study:1", "1", given([1]), slow))
    release.set()
    assert await busy == [0] and await kept_asking == [3] and await asked_again == [1]
    assert sorted(computed) == [0, 1, 3]


async def test_a_request_given_up_at_once_leaves_nothing_in_the_way() -> None:
    """Given up before its computation took its first step: the next request computes."""
    figures = KeptFigures()
    first = asyncio.create_task(figures.of("study:quick", "1", given([1]), lambda table: table + 1))
    await asyncio.sleep(0)  # the request makes its computation, which has not run yet
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    assert await figures.of("study:quick", "1", given([1]), lambda table: table + 1) == [2]
    assert figures.computed == 1
