"""Every module the installed package imports comes from a declared runtime dependency.

A plain `pip install .` installs only `[project].dependencies` (and what they require); an import
that only the `test` extra satisfies passes every test and then crashes the README's run command.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from tests.support import repo_root


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    return normalised(re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0])


def requested_extras(requirement: str) -> set[str]:
    found = re.match(r"[^\[;]*\[([^\]]*)\]", requirement)
    return {normalised(e) for e in found.group(1).split(",")} if found else set()


def runtime_closure(requirements: list[str]) -> set[str]:
    """The distributions a plain install brings: the dependencies and, recursively, theirs."""
    closure: set[str] = set()
    todo = [(requirement_name(r), requested_extras(r)) for r in requirements]
    while todo:
        name, extras = todo.pop()
        if name in closure:
            continue
        closure.add(name)
        try:
            needs = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for need in needs:
            wanted = {normalised(e) for e in re.findall(r"extra\s*==\s*['\"]([^'\"]+)", need)}
            if wanted and not wanted & extras:
                continue
            todo.append((requirement_name(need), requested_extras(need)))
    return closure


def imported_modules(package: Path) -> set[str]:
    """Top-level names of every absolute import in a package, nested imports included."""
    names: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def undeclared_imports(root: Path) -> dict[str, set[str]]:
    """Imported top-level module -> its providing distributions, for those a plain install lacks."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    folders: dict[str, str] = project["tool"]["setuptools"]["package-dir"]
    first_party = {name.split(".")[0] for name in folders}
    assert first_party == {"parley"}, first_party
    closure = runtime_closure(project["project"]["dependencies"])
    providers = {
        module: {normalised(d) for d in dists}
        for module, dists in metadata.packages_distributions().items()
    }
    missing: dict[str, set[str]] = {}
    for folder in sorted(folders.values()):
        assert (root / folder).is_dir(), folder
        for module in imported_modules(root / folder):
            if module in first_party or module in sys.stdlib_module_names or module == "__future__":
                continue
            dists = providers.get(module, set())
            if not dists & closure:
                missing[module] = dists
    return missing


def test_runtime_imports_are_declared() -> None:
    missing = undeclared_imports(repo_root())
    assert not missing, (
        "imported by the package but not installed by `pip install .` "
        f"(module: distributions providing it): {missing}"
    )


def test_an_extra_only_import_is_caught(tmp_path: Path) -> None:
    """The check itself: httpx (test extra only) imported by a shipped module is reported."""
    root = repo_root()
    (tmp_path / "pyproject.toml").write_text(
        (root / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    for folder in project["tool"]["setuptools"]["package-dir"].values():
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    (tmp_path / "engine" / "client.py").write_text("def f():\n    import httpx\n")
    assert "httpx" in undeclared_imports(tmp_path)
