"""Records a list query found, read lazily and versioned (resolvers/search.py `Hit`).

Each object type a list query returns has a `Listed...` twin: the same GraphQL type, whose
record is parsed only when a field reads it, and whose `version` (a digest of the stored fields
fetched) lets its completed answer be reused while they are unchanged (graph/answer_cache.py).
"""

from parley.resolvers.search import Hit
from parley.storage.models import Record


class Listed[R: Record]:
    def __init__(self, hit: Hit[R]) -> None:
        self.hit = hit
        self.version = hit.version

    @property
    def record(self) -> R:
        return self.hit.record
