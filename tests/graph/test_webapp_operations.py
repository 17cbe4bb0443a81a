"""The web app's operations are typed against schema.graphql: every named operation it sends
validates against the committed schema, within the server's limits, so a schema change that
breaks the app fails here."""

import re
from pathlib import Path

from graphql import (
    DocumentNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLSchema,
    OperationDefinitionNode,
    build_schema,
    parse,
    specified_rules,
    validate,
)
from graphql.language import Visitor, visit

from parley.graph.schema import Limits, validation_rules
from parley.graph.webapp import APP
from tests.support import repo_root

OPERATIONS = APP / "operations.graphql"
CALLED = re.compile(r"""\b(?:request|follow)\(\s*["']([A-Za-z_][A-Za-z0-9_]*)["']""")
"""Operation names the app's scripts pass to api.request and api.follow literally."""
NAMED = re.compile(r"""["']([A-Z][A-Za-z0-9]*)["']""")
"""Quoted names in the scripts (the world pages name their operations in tables)."""


def committed_schema() -> GraphQLSchema:
    return build_schema((repo_root() / "schema.graphql").read_text(encoding="utf-8"))


class Spreads(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def enter_fragment_spread(self, node: FragmentSpreadNode, *_: object) -> None:
        self.names.add(node.name.value)


def spreads(node: OperationDefinitionNode | FragmentDefinitionNode) -> set[str]:
    visitor = Spreads()
    visit(node, visitor)
    return visitor.names


def documents(source: str) -> dict[str, DocumentNode]:
    """Each operation with the fragments it needs, as the app sends it (operations.js)."""
    parsed = parse(source)
    fragments = {
        d.name.value: d for d in parsed.definitions if isinstance(d, FragmentDefinitionNode)
    }
    found: dict[str, DocumentNode] = {}
    for definition in parsed.definitions:
        if not isinstance(definition, OperationDefinitionNode):
            continue
        assert definition.name is not None, "every operation of the app is named"
        needed: set[str] = set()
        todo = spreads(definition)
        while todo:
            name = todo.pop()
            if name not in needed:
                needed.add(name)
                todo |= spreads(fragments[name])
        assert definition.name.value not in found, f"{definition.name.value} is defined twice"
        found[definition.name.value] = DocumentNode(
            definitions=(definition, *(fragments[n] for n in sorted(needed)))
        )
    return found


def problems(schema: GraphQLSchema, source: str) -> dict[str, list[str]]:
    rules = [*specified_rules, *validation_rules(Limits())]
    found = {}
    for name, document in documents(source).items():
        errors = validate(schema, document, rules)
        if errors:
            found[name] = [error.message for error in errors]
    return found


def test_every_operation_of_the_app_validates_against_the_schema() -> None:
    operations = documents(OPERATIONS.read_text(encoding="utf-8"))
    assert len(operations) >= 20
    assert problems(committed_schema(), OPERATIONS.read_text(encoding="utf-8")) == {}


def test_every_operation_the_scripts_name_exists_and_each_is_used() -> None:
    defined = set(documents(OPERATIONS.read_text(encoding="utf-8")))
    scripts = [p.read_text(encoding="utf-8") for p in APP.rglob("*.js")]
    called = {name for text in scripts for name in CALLED.findall(text)}
    named = {name for text in scripts for name in NAMED.findall(text)}
    assert called - defined == set()
    assert defined - named == set(), "operations the app never sends"


def test_a_schema_change_that_breaks_the_app_is_caught() -> None:
    sdl = (repo_root() / "schema.graphql").read_text(encoding="utf-8")
    renamed = sdl.replace("  resumedFromTurn: Int\n", "  resumedFrom: Int\n")
    assert renamed != sdl
    found = problems(build_schema(renamed), OPERATIONS.read_text(encoding="utf-8"))
    assert set(found) == {"EpisodeDetail", "WatchEpisode"}
    assert all("resumedFromTurn" in message for m in found.values() for message in m)


def test_every_file_of_the_app_is_package_data() -> None:
    """A plain `pip install .` ships only what pyproject.toml's package data names."""
    import tomllib

    project = tomllib.loads((repo_root() / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = project["tool"]["setuptools"]["package-data"]["parley.graph.static"]
    static = APP.parent
    files = [p.relative_to(static) for p in APP.rglob("*") if p.is_file()]
    assert files and all(any(Path(f).match(p) for p in patterns) for f in files), files
