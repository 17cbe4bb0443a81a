"""`pip install .` adds one name to site-packages, `parley`, with the design's folders inside it."""

import subprocess
import sys
import venv
from pathlib import Path

from tests.support import repo_root

FOLDERS = {"graph", "lifecycle", "resolvers", "storage", "engine", "core", "client"}

PROBE = """
import importlib.util, sys
for name in sys.argv[1:]:
    print(name, importlib.util.find_spec(name) is not None)
"""


def test_the_wheel_installs_only_the_parley_namespace(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), "."],
        cwd=repo_root(),
        check=True,
    )
    [wheel] = wheels.glob("parley-*.whl")
    target = tmp_path / "venv"
    venv.create(target, with_pip=False)
    [site] = target.glob("lib/python*/site-packages")
    # --no-deps: what the wheel itself adds, not its dependencies.
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), wheel],
        check=True,
    )
    added = {path.name for path in site.iterdir()} - {"bin"}  # bin: --target's console script
    assert {name for name in added if not name.endswith(".dist-info")} == {"parley"}
    assert {path.name for path in (site / "parley").iterdir()} == FOLDERS
    assert all((site / "parley" / folder / "py.typed").is_file() for folder in FOLDERS)
    assert (site / "parley" / "graph" / "static" / "app" / "main.js").is_file()
    found = subprocess.run(
        [str(target / "bin" / "python"), "-I", "-c", PROBE, "storage", "graph", "parley.storage"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    assert found[:3] == ["storage False", "graph False", "parley.storage True"], found
