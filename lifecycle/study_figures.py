"""A study's agreement figures, computed once for each set of ratings and scores.

The bootstraps of a study of hundreds of episodes take a second or more of CPU, and a study page
asks again on every change of its progress, so the figures are kept, in the process, by study,
with a digest of the tables they were computed from: the same tables are answered from what is
kept, any changed rating or score makes new ones. Requests for one study wait for the one
computation under way instead of starting their own, and at most `parallel` computations run
at once in the process, off the event loop.
"""

import asyncio
import hashlib
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from parley.resolvers import study_agreement
from parley.resolvers.study_agreement import DimensionAgreement, RatingTable
from parley.resolvers.study_status import StudyRating
from parley.storage.models import RatingStudy
from parley.storage.studies import ScoredEpisode

KEPT = 64
"""Studies whose last figures are kept (least recently asked for first out)."""
PARALLEL = 1
"""Computations at once in a process: each keeps a core busy."""


class StudyFigures:
    """Agreement figures by study, kept while their tables are unchanged."""

    def __init__(self, kept: int = KEPT, parallel: int = PARALLEL) -> None:
        self._kept: OrderedDict[str, tuple[str, list[DimensionAgreement]]] = OrderedDict()
        self._limit = kept
        self._slots = asyncio.Semaphore(parallel)
        self._studies: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self.computed = 0
        """Computations made (the others were answered from what is kept)."""

    async def of(
        self,
        study: RatingStudy,
        ratings: Sequence[StudyRating],
        episodes: Mapping[str, ScoredEpisode],
    ) -> list[DimensionAgreement]:
        """The figures of `study` from these ratings and episodes' scores."""
        pk = str(study.pk)
        tables = study_agreement.tables(study, ratings, episodes)
        digest = _digest(tables)
        lock = self._studies.get(pk)
        if lock is None:
            lock = self._studies[pk] = asyncio.Lock()
        async with lock:
            held = self._kept.get(pk)
            if held is not None and held[0] == digest:
                self._kept.move_to_end(pk)
                return held[1]
            async with self._slots:
                figures = await asyncio.to_thread(
                    lambda: [study_agreement.agreement(study, table) for table in tables]
                )
            self.computed += 1
            self._kept[pk] = (digest, figures)
            self._kept.move_to_end(pk)
            while len(self._kept) > self._limit:
                self._kept.popitem(last=False)
            return figures


def _digest(tables: Sequence[RatingTable]) -> str:
    """A digest of everything the figures are computed from (the dataclasses' reprs hold every
    unit, rater, score and model; a float's repr is exact)."""
    return hashlib.sha256(repr(list(tables)).encode("utf-8")).hexdigest()
