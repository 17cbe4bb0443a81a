"""A pytest plugin that stops the run, saying what to do, when the editable install is stale.

The strict editable install (the README's test command) links each module of the folders
`pyproject.toml` maps into the `parley` namespace; a module added after it is not importable
until the install runs again, and the failure would otherwise be a ModuleNotFoundError deep in
some test's imports.
"""

import importlib.util
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REINSTALL = "pip install -e '.[test]' --config-settings editable_mode=strict"


def unlinked(root: Path = ROOT) -> list[str]:
    """Source modules of the mapped folders that the installed `parley` package lacks."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    missing: list[str] = []
    for package, folder in project["tool"]["setuptools"]["package-dir"].items():
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            missing.append(folder)
            continue
        installed = [Path(p) for p in spec.submodule_search_locations]
        for source in (root / folder).rglob("*.py"):
            relative = source.relative_to(root / folder)
            if not any((place / relative).exists() for place in installed):
                missing.append(str(Path(folder) / relative))
    return sorted(missing)


def pytest_configure(config: pytest.Config) -> None:
    missing = unlinked()
    if missing:
        pytest.exit(
            f"the installed parley package lacks {', '.join(missing[:5])}"
            f"{' and more' if len(missing) > 5 else ''}: run `{REINSTALL}` again",
            returncode=4,
        )
