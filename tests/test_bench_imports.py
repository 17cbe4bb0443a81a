"""The benchmarks run on the installed package and their own helpers, never on the tests."""

import ast
from pathlib import Path

from tests.support import repo_root


def test_the_scan_finds_every_import_of_tests(tmp_path: Path) -> None:
    """The scan below finds each spelling of an import of `tests`, and nothing else."""
    (tmp_path / "a.py").write_text(
        "import tests\nimport tests.support as s\nfrom tests.support import x\n"
        "from tests import support\nimport testsuite\nfrom bench.tests_like import y\n",
        encoding="utf-8",
    )
    assert imports_of_tests(tmp_path) == [
        "a.py:1 tests",
        "a.py:2 tests.support",
        "a.py:3 tests.support",
        "a.py:4 tests",
    ]


def imports_of_tests(root: Path) -> list[str]:
    """Each import of the `tests` package under `root`, as `file:line module`."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                if module == "tests" or module.startswith("tests."):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {module}")
    return found


def test_no_benchmark_imports_the_tests() -> None:
    assert imports_of_tests(repo_root() / "bench") == []
