"""`parley worker` and `parley seed` load no GraphQL and no web stack, at run time too."""

import subprocess
import sys

from tests.support import repo_root

PROBE = """
import sys
from parley.graph import cli
from parley.lifecycle import worker
from parley.storage import sample
web = {"strawberry", "graphql", "starlette", "uvicorn"}
print(sorted({name.split(".")[0] for name in sys.modules} & web))
print(sorted(name for name in sys.modules if name.startswith("parley.graph.")))
"""


def test_the_worker_command_imports_no_graphql() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=repo_root(), capture_output=True, text=True, check=True
    )
    web, graph_modules = done.stdout.splitlines()
    assert web == "[]", web
    assert graph_modules == "['parley.graph.cli']", graph_modules
