"""schema.graphql is generated from the code; this fails when the two drift apart."""

from parley.graph.schema import schema
from tests.support import repo_root


def test_schema_file_matches_code() -> None:
    committed = (repo_root() / "schema.graphql").read_text(encoding="utf-8")
    assert committed == schema.as_str() + "\n", "run `parley export-schema -o schema.graphql`"


def test_every_type_and_field_is_described() -> None:
    from graphql import GraphQLEnumType, GraphQLInputObjectType, GraphQLObjectType

    missing = []
    for name, kind in schema._schema.type_map.items():
        if name.startswith("__") or not isinstance(
            kind, GraphQLObjectType | GraphQLInputObjectType | GraphQLEnumType
        ):
            continue
        if not kind.description:
            missing.append(name)
        if isinstance(kind, GraphQLObjectType | GraphQLInputObjectType):
            missing += [f"{name}.{f}" for f, d in kind.fields.items() if not d.description]
    assert missing == []
