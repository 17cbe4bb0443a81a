"""The web app's scripts, read as JavaScript (tree-sitter's grammar): every function short, the
schema's enum values declared once, in enums.js, as schema.graphql has them, and every status
of an episode given its words, its colour and its count."""

import re
from collections.abc import Iterator
from pathlib import Path

import tree_sitter_javascript
from graphql import GraphQLEnumType, GraphQLSchema, OperationDefinitionNode, build_schema, parse
from tree_sitter import Language, Node, Parser

from parley.graph.webapp import APP
from tests.support import repo_root

MAX_LINES = 150
"""The longest a function of the app may be, in lines from its head to its closing brace."""
FUNCTIONS = {
    "function_declaration",
    "generator_function_declaration",
    "function_expression",
    "generator_function",
    "arrow_function",
    "method_definition",
}
ENUMS = APP / "enums.js"
PARSER = Parser(Language(tree_sitter_javascript.language()))


def tree(source: str) -> Node:
    root = PARSER.parse(source.encode("utf-8")).root_node
    assert not root.has_error, "the script does not parse"
    return root


def scripts() -> dict[str, Node]:
    found = {str(p.relative_to(APP)): p for p in sorted(APP.rglob("*.js"))}
    assert {"main.js", "enums.js", "status.js", "pages/episode.js"} <= set(found)
    return {name: tree(path.read_text(encoding="utf-8")) for name, path in found.items()}


def text(node: Node | None) -> str:
    assert node is not None and node.text is not None
    return node.text.decode("utf-8")


def walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from walk(child)


def function_name(node: Node) -> str:
    own = node.child_by_field_name("name")
    if own is not None:
        return text(own)
    parent = node.parent
    if parent is not None and parent.type == "variable_declarator":
        return text(parent.child_by_field_name("name"))
    if parent is not None and parent.type == "pair":
        return text(parent.child_by_field_name("key"))
    return "(anonymous)"


def long_functions(root: Node, limit: int = MAX_LINES) -> dict[str, int]:
    """Each function over `limit` lines, as "name (line N)": its length in lines."""
    return {
        f"{function_name(n)} (line {n.start_point.row + 1})": lines
        for n in walk(root)
        if n.type in FUNCTIONS and (lines := n.end_point.row - n.start_point.row + 1) > limit
    }


def string_value(node: Node) -> str | None:
    """A plain string literal's value; None for anything else."""
    if node.type != "string":
        return None
    return "".join(text(c) for c in node.named_children if c.type == "string_fragment")


def string_array(node: Node) -> list[str] | None:
    """An array literal of plain strings only, as its values; None for anything else."""
    if node.type != "array":
        return None
    values = [string_value(c) for c in node.named_children]
    return None if any(v is None for v in values) else [v for v in values if v is not None]


def declared_enums(root: Node) -> dict[str, list[str]]:
    """The `ENUMS` object of enums.js: each key (a schema enum's name) and its array of values."""
    (declarator,) = [
        n
        for n in walk(root)
        if n.type == "variable_declarator" and text(n.child_by_field_name("name")) == "ENUMS"
    ]
    value = declarator.child_by_field_name("value")
    assert value is not None and value.type == "object"
    found = {}
    for pair in value.named_children:
        array = pair.child_by_field_name("value")
        values = string_array(array) if array is not None else None
        assert pair.type == "pair" and values is not None, f"not a list of values: {text(pair)}"
        found[text(pair.child_by_field_name("key"))] = values
    return found


def schema_enums(schema: GraphQLSchema) -> dict[str, list[str]]:
    return {
        name: list(kind.values)
        for name, kind in schema.type_map.items()
        if isinstance(kind, GraphQLEnumType) and not name.startswith("__")
    }


def enum_differences(declared: dict[str, list[str]], schema: GraphQLSchema) -> dict[str, str]:
    """Each declared enum the schema has not, or whose values are not exactly the schema's."""
    enums = schema_enums(schema)
    problems = {}
    for name, values in declared.items():
        if name not in enums:
            problems[name] = "no such enum in the schema"
        elif len(set(values)) != len(values) or set(values) != set(enums[name]):
            problems[name] = f"declared {values}, the schema has {enums[name]}"
    return problems


def redeclared_enums(root: Node, enums: dict[str, list[str]]) -> list[str]:
    """Array literals holding every value of one of `enums`: the enum declared again."""
    return [
        f"{name} (line {n.start_point.row + 1})"
        for n in walk(root)
        if (values := string_array(n))
        for name, members in enums.items()
        if len(members) > 1 and set(members) <= set(values)
    ]


def status_tables(root: Node, statuses: list[str]) -> list[tuple[int, set[str]]]:
    """Object literals keyed by three or more statuses (a table by status): line, keys."""
    found = []
    for node in walk(root):
        if node.type != "object":
            continue
        keys = {text(p.child_by_field_name("key")) for p in node.named_children if p.type == "pair"}
        if len(keys & set(statuses)) >= 3:
            found.append((node.start_point.row + 1, keys))
    return found


def committed_schema() -> GraphQLSchema:
    return build_schema((repo_root() / "schema.graphql").read_text(encoding="utf-8"))


def test_no_function_of_the_app_is_longer_than_150_lines() -> None:
    found = {
        f"{name}: {function}": lines
        for name, root in scripts().items()
        for function, lines in long_functions(root).items()
    }
    assert found == {}


def test_a_long_function_is_found_whatever_its_kind() -> None:
    body = "\n".join(f"  const a{i} = {i};" for i in range(MAX_LINES))
    source = "\n".join(
        [
            f"export function declared() {{\n{body}\n}}",
            f"const arrow = () => {{\n{body}\n}};",
            "function short() { return 1; }",
            f"const table = {{ nested: function () {{\n{body}\n}} }};",
            f"class Page {{ draw() {{\n{body}\n}} }}",
        ]
    )
    found = long_functions(tree(source))
    assert [name.split(" (")[0] for name in found] == ["declared", "arrow", "nested", "draw"]
    assert set(found.values()) == {MAX_LINES + 2}


def test_the_enums_of_the_app_are_the_schemas() -> None:
    declared = declared_enums(scripts()["enums.js"])
    assert {"EpisodeStatus", "ActionType", "RelationshipType"} <= set(declared)
    assert enum_differences(declared, committed_schema()) == {}


def test_an_enum_value_the_schema_adds_or_drops_is_caught() -> None:
    declared = declared_enums(scripts()["enums.js"])
    sdl = (repo_root() / "schema.graphql").read_text(encoding="utf-8")
    changed = sdl.replace("  STAND_IN\n", "  STAND_IN\n  ASK_AGAIN\n").replace("  RESTART\n", "")
    assert changed.count("\n") == sdl.count("\n")
    problems = enum_differences(declared, build_schema(changed))
    assert set(problems) == {"SeatTimeout", "Redelivery"}
    assert "ASK_AGAIN" in problems["SeatTimeout"]


def test_no_other_script_declares_an_enum_again() -> None:
    enums = schema_enums(committed_schema())
    found = {
        name: again
        for name, root in scripts().items()
        if name != "enums.js" and (again := redeclared_enums(root, enums))
    }
    assert found == {}
    repeated = tree('const orders = ["ROUND_ROBIN", "SIMULTANEOUS", "RANDOM"];')
    assert redeclared_enums(repeated, enums) == ["TurnOrder (line 1)"]


def test_every_status_has_its_words_its_colour_and_its_count() -> None:
    statuses = declared_enums(scripts()["enums.js"])["EpisodeStatus"]
    tables = {
        f"{name}:{line}": keys
        for name, root in scripts().items()
        for line, keys in status_tables(root, statuses)
    }
    assert {key.split(":")[0] for key in tables} == {"status.js"}, "statuses in words elsewhere"
    assert len(tables) >= 2 and all(set(statuses) <= keys for keys in tables.values()), tables
    css = (APP / "app.css").read_text(encoding="utf-8")
    colours = set(re.findall(r"\.status-([a-z_]+)\s*\{", css))
    # a queued episode's badge keeps the plain `.status` colours; every other has its own
    assert colours == {s.lower() for s in statuses} - {"queued"}
    operations = parse((APP / "operations.graphql").read_text(encoding="utf-8"))
    (counts,) = [
        d
        for d in operations.definitions
        if isinstance(d, OperationDefinitionNode) and d.name and d.name.value == "EpisodeCounts"
    ]
    variables = [v.variable.name.value for v in counts.variable_definitions or ()]
    assert variables == [s.lower() for s in statuses]


def test_the_scripts_are_read_whole(tmp_path: Path) -> None:
    broken = tmp_path / "broken.js"
    broken.write_text("export function ( {", encoding="utf-8")
    assert PARSER.parse(broken.read_bytes()).root_node.has_error
