"""What an evaluation id names, for results and agreement: the episodes' own judgement (None), a
re-judging, or a rating study, whose raters' mean scores are read as an evaluation."""

from parley.core.errors import BadArgument
from parley.lifecycle.studies import Studies
from parley.resolvers import rejudging
from parley.storage.models import RatingStudy


async def evaluation_study(studies: Studies, evaluation: str | None) -> RatingStudy | None:
    """The rating study `evaluation` names, or None for the episodes' own judgement or a
    re-judging; BadArgument when it names neither a re-judging nor a study."""
    if evaluation is None:
        return None
    study = await studies.get(evaluation)
    if study is not None:
        return study
    try:
        await rejudging.check_exists(studies.client, evaluation)
    except BadArgument:
        raise BadArgument(f"no re-judging or rating study with id {evaluation!r}") from None
    return None


async def readable(studies: Studies, evaluation: str | None) -> None:
    """Make results of `evaluation` readable: a study's raters' means are written as its
    evaluation records first (from the ratings saved by now)."""
    study = await evaluation_study(studies, evaluation)
    if study is not None:
        await studies.write_results(study)
