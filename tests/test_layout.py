"""Tests beside their code: a source module with logic, `graph/foo.py`, has its test module of
the same name in the same folder under tests/, `tests/graph/test_foo.py`.

A module has logic when it defines a function or a method; a module of declarations only
(enums, constants, classes of fields) and a package's `__init__.py` are not counted."""

import ast
import tomllib
from pathlib import Path

from tests.support import repo_root

SHARE = 0.70
"""The least share of modules with logic that have a test module beside them."""


def packages() -> list[str]:
    """The installed packages' folders (pyproject.toml maps `parley.<folder>` to each)."""
    project = tomllib.loads((repo_root() / "pyproject.toml").read_text(encoding="utf-8"))
    return sorted(project["tool"]["setuptools"]["package-dir"].values())


def has_logic(module: Path) -> bool:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) for node in ast.walk(tree))


def modules_with_logic() -> list[Path]:
    root = repo_root()
    return [
        module.relative_to(root)
        for folder in packages()
        for module in sorted((root / folder).glob("*.py"))
        if module.name != "__init__.py" and has_logic(module)
    ]


def beside(module: Path) -> Path:
    return Path("tests") / module.parent / f"test_{module.name}"


def test_most_modules_with_logic_have_a_test_module_beside_them() -> None:
    modules = modules_with_logic()
    without = [str(m) for m in modules if not (repo_root() / beside(m)).is_file()]
    share = 1 - len(without) / len(modules)
    assert share >= SHARE, (
        f"{share:.0%} of {len(modules)} modules with logic have a test module beside them, "
        f"under {SHARE:.0%}; without one: {', '.join(without)}"
    )


def test_declarations_alone_are_not_counted_as_logic(tmp_path: Path) -> None:
    declared = tmp_path / "declared.py"
    declared.write_text('"""Names."""\n\nimport enum\n\nclass Kind(enum.Enum):\n    A = "A"\n')
    acting = tmp_path / "acting.py"
    acting.write_text("class Box:\n    def open(self) -> None:\n        pass\n")
    assert not has_logic(declared)
    assert has_logic(acting)
