"""Where a rating study is: each rater, each episode, and every gold check, from its record
and the state stored beside it."""

from dataclasses import dataclass

from parley.storage.models import AnnotationForEpisode, RatingStudy
from parley.storage.studies import GoldMiss, StudyState, slot


@dataclass(frozen=True)
class RaterProgress:
    rater: int
    name: str
    annotator_id: str
    assigned: int
    rated: int
    gold_rated: int
    gold_flagged: int


@dataclass(frozen=True)
class EpisodeProgress:
    number: int
    episode_id: str
    gold: bool
    raters: list[int]
    rated_by: list[int]


@dataclass(frozen=True)
class GoldResult:
    rater: int
    episode_id: str
    misses: list[GoldMiss]


@dataclass(frozen=True)
class StudyStatus:
    raters: list[RaterProgress]
    episodes: list[EpisodeProgress]
    gold: list[GoldResult]
    """Every saved rating of a gold episode, flagged or not."""

    @property
    def assigned(self) -> int:
        return sum(r.assigned for r in self.raters)

    @property
    def rated(self) -> int:
        return sum(r.rated for r in self.raters)


@dataclass(frozen=True)
class StudyRating:
    """A saved rating, for the study's researcher (and the agreement statistics)."""

    rater: int
    episode_id: str
    annotation: AnnotationForEpisode


def study_status(
    study: RatingStudy, state: StudyState, gone: frozenset[int] = frozenset()
) -> StudyStatus:
    """Where each rater and each episode of a study is, and every gold check. An episode of
    `gone` (by number: deleted since the study was made) that a rater had not rated is no longer
    theirs to rate, so a study can finish without it."""
    gold = {g.episode for g in study.gold}
    raters: list[RaterProgress] = []
    given: dict[int, list[int]] = {n: [] for n in range(len(study.episode_ids))}
    rated_by: dict[int, list[int]] = {n: [] for n in range(len(study.episode_ids))}
    results: list[GoldResult] = []
    for number, rater in enumerate(study.raters):
        gold_rated = flagged = 0
        assigned = 0
        for item in rater.items:
            given[item.episode].append(number)
            where = slot(number, item.episode)
            rated = state.revisions.get(where, 0) > 0
            if rated:
                rated_by[item.episode].append(number)
            assigned += rated or item.episode not in gone
            check = state.gold.get(where)
            if check is not None:
                gold_rated += 1
                flagged += check.flagged
                pk = study.episode_ids[item.episode]
                results.append(GoldResult(number, pk, check.misses))
        raters.append(
            RaterProgress(
                number,
                rater.name,
                rater.annotator_id,
                assigned,
                state.rated.get(number, 0),
                gold_rated,
                flagged,
            )
        )
    episodes = [
        EpisodeProgress(n, pk, n in gold, sorted(given[n]), sorted(rated_by[n]))
        for n, pk in enumerate(study.episode_ids)
    ]
    return StudyStatus(raters, episodes, results)
