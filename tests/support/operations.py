"""A minimal valid document for every root field of a schema, read from the schema itself: its
required arguments with values of their types (and any the caller gives by path), and
`__typename` selected from an object. What an authorization matrix sends for each operation."""

from collections.abc import Mapping
from dataclasses import dataclass

from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLOutputType,
    GraphQLScalarType,
    GraphQLSchema,
    OperationType,
    Undefined,
    get_named_type,
    print_ast,
)
from graphql.utilities import ast_from_value

Path = tuple[str, ...]
"""An argument, or a field of an input object inside one: ("input", "episodeId")."""

ID = "no-such-record"
"""The value of every ID: names nothing, so an operation run with it changes nothing."""
SCALARS: dict[str, str] = {
    "ID": f'"{ID}"',
    "String": '""',
    "Int": "0",
    "Float": "0",
    "Boolean": "false",
    "DateTime": '"2000-01-01T00:00:00+00:00"',
    "JSON": "{}",
}


@dataclass(frozen=True)
class RootField:
    operation: OperationType
    name: str
    field: GraphQLField


def root_fields(schema: GraphQLSchema) -> list[RootField]:
    """Every field of Query, Mutation and Subscription."""
    found: list[RootField] = []
    for operation in OperationType:
        root = schema.get_root_type(operation)
        if root is not None:
            found += [RootField(operation, name, f) for name, f in root.fields.items()]
    return found


def document(root: RootField, given: Mapping[Path, object] | None = None) -> str:
    """`<operation> { <field>(<required arguments>) <selection> }`; `given` sets arguments (or
    input fields) by path, required or not."""
    given = given or {}
    arguments = [
        f"{name}: {value}"
        for name, argument in root.field.args.items()
        if (value := _value(argument.type, (name,), given, argument.default_value)) is not None
    ]
    listed = f"({', '.join(arguments)})" if arguments else ""
    return f"{root.operation.value} {{ {root.name}{listed}{_selection(root.field.type)} }}"


def _value(
    type_: GraphQLInputType, path: Path, given: Mapping[Path, object], default: object
) -> str | None:
    """A literal for the argument or input field at `path`: given, or needed (non-null without
    a default), else None (left out)."""
    if path in given:
        literal = ast_from_value(given[path], type_)
        assert literal is not None, (path, given[path])
        return print_ast(literal)
    needed = isinstance(type_, GraphQLNonNull) and default is Undefined
    nested = any(p[: len(path)] == path and len(p) > len(path) for p in given)
    if not needed and not nested:
        return None
    inner = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
    if isinstance(inner, GraphQLList):
        return "[]"
    if isinstance(inner, GraphQLInputObjectType):
        fields = [
            f"{name}: {value}"
            for name, field in inner.fields.items()
            if (value := _value(field.type, (*path, name), given, field.default_value)) is not None
        ]
        return "{" + ", ".join(fields) + "}"
    if isinstance(inner, GraphQLEnumType):
        first: str = next(iter(inner.values))
        return first
    assert isinstance(inner, GraphQLScalarType)
    return SCALARS[inner.name]


def _selection(type_: GraphQLOutputType) -> str:
    named = get_named_type(type_)
    return "" if isinstance(named, GraphQLScalarType | GraphQLEnumType) else " { __typename }"
