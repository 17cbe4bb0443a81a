"""Which stored fields a connection query reads: the selection set mapped to record fields.

Each object type that wraps a record says, per GraphQL field, which record fields its resolver
reads (`Reads`); a list query fetches only the union of those for the fields selected under
`nodes` and `edges { node }`. A selected field a type does not list (one added later without its
line here) makes the query fetch whole records, so a missing line costs speed, never an answer.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from strawberry.types.nodes import FragmentSpread, InlineFragment, SelectedField, Selection
from strawberry.utils.str_converters import to_camel_case

from parley.graph.context import Info
from parley.resolvers.fields import Exposed

TYPENAME = "__typename"


@dataclass(frozen=True)
class Reads:
    """GraphQL field name -> the record fields its resolver reads."""

    fields: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, exposed: Exposed | None = None, **own: tuple[str, ...]) -> "Reads":
        """The exposed fields (each reads its own record field) and a type's own fields, given
        by their Python names."""
        declared: dict[str, tuple[str, ...]] = (
            {name: (name,) for name in exposed.limits} if exposed else {}
        )
        declared.update(own)
        return cls({to_camel_case(name): needs for name, needs in declared.items()})

    def needed(self, selected: Iterable[str]) -> frozenset[str] | None:
        """The record fields `selected` GraphQL fields read; None if one is not known here."""
        out: set[str] = set()
        for name in selected:
            if name == TYPENAME:
                continue
            needs = self.fields.get(name)
            if needs is None:
                return None
            out.update(needs)
        return frozenset(out)


def node_fields(info: Info) -> set[str]:
    """GraphQL names of the fields selected on the nodes of the connection `info` resolves
    (under `nodes` and `edges { node }`, through fragments)."""
    out: set[str] = set()
    for field in info.selected_fields:
        for connection_field in _flatten(field.selections):
            if connection_field.name == "nodes":
                out.update(f.name for f in _flatten(connection_field.selections))
            elif connection_field.name == "edges":
                for edge_field in _flatten(connection_field.selections):
                    if edge_field.name == "node":
                        out.update(f.name for f in _flatten(edge_field.selections))
    return out


def _flatten(selections: Iterable[Selection]) -> list[SelectedField]:
    """The fields of a selection set, with fragments spread (whatever their directives: a field
    fetched but skipped costs a little, never an answer)."""
    out: list[SelectedField] = []
    for selection in selections:
        if isinstance(selection, SelectedField):
            out.append(selection)
        elif isinstance(selection, FragmentSpread | InlineFragment):
            out.extend(_flatten(selection.selections))
    return out


def fields_for(info: Info, reads: Reads) -> frozenset[str] | None:
    """The record fields a connection query needs of each record; None for whole records."""
    return reads.needed(node_fields(info))
