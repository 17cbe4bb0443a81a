"""GraphQL fields derived from a record's fields.

`reads` gives an object type one field per exposed field (resolvers/fields.py), reading
`self.record`; `creates` and `updates` give an input type one argument per exposed field: with the
record's default (or required) for a new record, and optional and unset for a change. Types and
descriptions come from the record's declaration; apply these under `@strawberry.type` /
`@strawberry.input`.

`shows` does it for a record clients only read (an episode): each `stored(description)` in the
class body becomes a field reading the record's field of that name (or of the name `source`
gives), typed as the record declares it, in its place in the class. Every derived field says what
it reads (graph/projection.py).
"""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

import strawberry
from pydantic import BaseModel
from strawberry.scalars import JSON

from parley.graph.projection import reading
from parley.resolvers.fields import Exposed

Decorator = Callable[[type[Any]], type[Any]]
_AS_GRAPHQL: dict[Any, Any] = {
    dict[str, Any] | None: JSON | None,
    dict[str, Any]: JSON,
    dict[str, float]: JSON,
}
"""Stored types GraphQL spells otherwise: a free-form object is JSON."""


def _graphql(exposed: Exposed, name: str) -> Any:
    annotation = exposed.annotation(name)
    return _AS_GRAPHQL.get(annotation, annotation)


@dataclass(frozen=True)
class Stored:
    """A field of a `shows` type that reads the record's field of its name."""

    description: str
    convert: Callable[[Any], Any] | None = None
    """Turns the stored value into the GraphQL one, whose type is its return annotation."""
    source: str | None = None
    """The record's field it reads, when its name is not the GraphQL field's."""


def stored(
    description: str, convert: Callable[[Any], Any] | None = None, *, source: str | None = None
) -> Any:
    """Declares, in a `shows` class body, the field reading the record's field of this name
    (or `source`)."""
    return Stored(description, convert, source)


def shows(record: type[Any], held_as: str = "record") -> Decorator:
    """Each `stored` field reads the `record` (a pydantic model or a dataclass) the object holds
    in its field `held_as`."""

    def decorate(cls: type[Any]) -> type[Any]:
        for name, value in list(vars(cls).items()):
            if isinstance(value, Stored):
                # keeps its place in the class
                setattr(cls, name, _stored(record, name, value, held_as))
        return cls

    return decorate


def _annotation(record: type[Any], name: str) -> Any:
    """How `record` (a pydantic model or a dataclass) declares its field or property `name`."""
    if isinstance(found := getattr(record, name, None), property):
        return get_type_hints(found.fget)["return"]
    if issubclass(record, BaseModel):
        field = record.model_fields.get(name)
        if field is not None:
            return field.annotation
    elif name in (hints := get_type_hints(record)):
        return hints[name]
    raise ValueError(f"{record.__name__} has no field {name}")


def _stored(record: type[Any], name: str, declared: Stored, held_as: str) -> Any:
    source = declared.source or name
    annotation = _annotation(record, source)
    convert = declared.convert
    if convert is None:
        returns = _AS_GRAPHQL.get(annotation, annotation)
    else:
        returns = get_type_hints(convert)["return"]

    def read(self: Any) -> Any:
        value = getattr(getattr(self, held_as), source)
        return value if convert is None else convert(value)

    read.__name__ = name
    read.__annotations__ = {"return": returns}
    return strawberry.field(
        resolver=read, description=declared.description, metadata=reading(source)
    )


def reads(exposed: Exposed) -> Decorator:
    def decorate(cls: type[Any]) -> type[Any]:
        fields = {name: _reader(exposed, name) for name in exposed.limits}
        return _with_fields(cls, {}, fields)

    return decorate


def creates(exposed: Exposed) -> Decorator:
    def decorate(cls: type[Any]) -> type[Any]:
        annotations: dict[str, Any] = {}
        fields: dict[str, Any] = {}
        for name in exposed.limits:
            annotations[name] = _graphql(exposed, name)
            description = exposed.description(name)
            if exposed.required(name):
                fields[name] = strawberry.field(description=f"{description} Required.")
            elif isinstance(exposed.default(name), list):
                fields[name] = strawberry.field(default_factory=list, description=description)
            else:
                fields[name] = strawberry.field(
                    default=exposed.default(name), description=description
                )
        return _with_fields(cls, annotations, fields)

    return decorate


def updates(exposed: Exposed) -> Decorator:
    def decorate(cls: type[Any]) -> type[Any]:
        annotations = {name: _graphql(exposed, name) | None for name in exposed.limits}
        fields = {
            name: strawberry.field(
                default=strawberry.UNSET,
                description=f"{exposed.description(name)} Omit to keep the current value.",
            )
            for name in exposed.limits
        }
        return _with_fields(cls, annotations, fields)

    return decorate


def _reader(exposed: Exposed, name: str) -> Any:
    def read(self: Any) -> Any:
        return getattr(self.record, name)

    read.__name__ = name
    read.__annotations__ = {"return": _graphql(exposed, name)}
    return strawberry.field(
        resolver=read, description=exposed.description(name), metadata=reading(name)
    )


def wrapped[R, T](cls: Callable[..., T], record: R | None) -> T | None:
    """`cls(record=record)`, or None without a record."""
    return cls(record=record) if record else None


def copied[T](cls: type[T], source: object) -> T:
    """A `cls` whose every field is `source`'s attribute of the same name."""
    names = [f.name for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
    return cls(**{name: getattr(source, name) for name in names})


def copies[T](cls: type[T]) -> Callable[[list[Any]], list[T]]:
    """A `stored` converter: each item of a list `copied` into a `cls`."""

    def convert(items: list[Any]) -> list[T]:
        return [copied(cls, item) for item in items]

    convert.__annotations__ = {"items": list[Any], "return": list[cls]}  # type: ignore[valid-type]
    return convert


def _with_fields(cls: type[Any], annotations: dict[str, Any], fields: dict[str, Any]) -> type[Any]:
    """`cls` rebuilt with `fields` right after its `id` (or first, without one), so that the
    schema lists them in declaration order next to the class's own."""
    own = {k: v for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__")}
    own_annotations: dict[str, Any] = dict(own.pop("__annotations__", {}))
    head = {k: own_annotations.pop(k) for k in list(own_annotations) if k in ("id", "record")}
    namespace: dict[str, Any] = {}
    for key in list(own):
        if key.startswith("__") or key in head or key == "id":
            namespace[key] = own.pop(key)
    namespace["__annotations__"] = {**head, **annotations, **own_annotations}
    namespace.update(fields)
    namespace.update(own)
    return type(cls.__name__, cls.__bases__, namespace)
