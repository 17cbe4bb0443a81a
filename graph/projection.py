"""Which stored fields a connection query reads: the selection set mapped to record fields.

Each field of an object type that wraps a record says, where it is declared, which record fields
its resolver reads (`reading`); `Reads.of_type` gathers them, and a list query fetches only the
union of those for the fields selected under `nodes` and `edges { node }`. A type with a field
that says nothing is refused when its reads are gathered, so no field can be added without it.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from strawberry.types.base import StrawberryContainer, get_object_definition
from strawberry.types.nodes import FragmentSpread, InlineFragment, SelectedField, Selection
from strawberry.utils.str_converters import to_camel_case

from parley.graph.context import Info

TYPENAME = "__typename"
READS = "reads"
"""The key of a field's metadata that holds the record fields its resolver reads."""


def reading(*fields: str) -> dict[str, tuple[str, ...]]:
    """A field's metadata saying which record fields its resolver reads:
    `@strawberry.field(description=..., metadata=reading("progress", "max_turns"))`."""
    return {READS: fields}


@dataclass(frozen=True)
class Reads:
    """GraphQL field name -> the record fields its resolver reads."""

    fields: Mapping[str, tuple[str, ...]]

    @classmethod
    def of_type(cls, type_: type[Any]) -> "Reads":
        """What each field of a Strawberry type reads, as its declaration says (`reading`)."""
        definition = get_object_definition(type_, strict=True)
        declared: dict[str, tuple[str, ...]] = {}
        for field in definition.fields:
            needs = field.metadata.get(READS)
            if needs is None:
                raise TypeError(
                    f"{definition.name}.{field.python_name} does not say which record fields it "
                    "reads (metadata=reading(...))"
                )
            declared[field.graphql_name or to_camel_case(field.python_name)] = needs
        return cls(declared)

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


def own_types(type_: type[Any]) -> frozenset[str]:
    """The names of the object types an answer of `type_` is made of that read nothing but its
    record: those reached from it through fields whose resolvers do not await. A field that reads
    anything else (another record, a loader, the store) awaits it, so its type and what lies
    beneath it are left out (an episode's agents, a reward's agent); graph/answer_cache.py keeps
    the answers of selections made only of these."""
    root = get_object_definition(type_, strict=True)
    found: set[str] = set()
    pending = [root]
    while pending:
        for field in pending.pop().fields:
            if field.is_async:
                continue
            named: Any = field.type
            while isinstance(named, StrawberryContainer):
                named = named.of_type
            definition = get_object_definition(named)
            if definition is not None and definition.name not in found | {root.name}:
                found.add(definition.name)
                pending.append(definition)
    return frozenset(found)
