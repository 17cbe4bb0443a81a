"""ARCHITECTURE.md's drawing of the layers is the import contracts' (pyproject.toml)."""

import re
import tomllib
from typing import Any

from tests.support import repo_root


def drawn() -> tuple[list[str], list[str]]:
    """The drawing's layers top to bottom, and the packages drawn beside them."""
    text = (repo_root() / "ARCHITECTURE.md").read_text(encoding="utf-8")
    drawing = text.split("```\n", 2)[1]
    stack, beside = drawing.split("\n\n", 1)
    return re.findall(r"^(\w+)/ ", stack, re.M), re.findall(r"^(\w+)/ ", beside, re.M)


def contracts() -> list[dict[str, Any]]:
    project = tomllib.loads((repo_root() / "pyproject.toml").read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = project["tool"]["importlinter"]["contracts"]
    return found


def test_the_drawing_is_the_layers_contract() -> None:
    [layers] = [c["layers"] for c in contracts() if c["type"] == "layers"]
    stack, _ = drawn()
    assert [f"parley.{name}" for name in stack] == layers


def test_every_installed_package_is_drawn_once() -> None:
    project = tomllib.loads((repo_root() / "pyproject.toml").read_text(encoding="utf-8"))
    installed = {name.split(".")[1] for name in project["tool"]["setuptools"]["package-dir"]}
    stack, beside = drawn()
    assert sorted(stack + beside) == sorted(installed)


def test_what_is_drawn_beside_the_layers_is_kept_apart_from_the_server() -> None:
    _, beside = drawn()
    [layers] = [c["layers"] for c in contracts() if c["type"] == "layers"]
    for name in beside:
        [kept] = [c for c in contracts() if c.get("source_modules") == [f"parley.{name}"]]
        assert set(layers) - {"parley.core"} <= set(kept["forbidden_modules"]), name
