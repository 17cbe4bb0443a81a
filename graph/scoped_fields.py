"""The one shape of a scoped credential's grant (a seat token's, a rater token's): which root
fields it may use and where their arguments name the record it opens and the one part of it."""

from dataclasses import dataclass


@dataclass(frozen=True)
class ScopedField:
    """A root field a scoped credential may use: where its arguments name the record (an
    episode, a study) and the part of it (a seat, a rater), a path through input objects each,
    which must be the credential's own."""

    record: tuple[str, ...]
    part: tuple[str, ...]

    @property
    def paths(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return self.record, self.part


def offered_token(params: object, key: str) -> str | None:
    """The token a websocket connection_init payload offers under `key`, if any."""
    if isinstance(params, dict) and isinstance(params.get(key), str):
        token: str = params[key]
        return token
    return None
