"""The graphql-http server audits (GraphQL over HTTP conformance) against a real uvicorn.

Needs Node and npm; without them the test is skipped, unless PARLEY_REQUIRE_NODE=1 (as in CI).
"""

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.support import repo_root
from tests.support.server import serve

RUNNER = repo_root() / "tests" / "support" / "conformance"
AUDITS = 61
"""Server audits in the pinned graphql-http (1.23.1)."""


def require_node() -> None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if not missing:
        return
    reason = f"{' and '.join(missing)} not on PATH: the GraphQL over HTTP audit needs Node"
    if os.environ.get("PARLEY_REQUIRE_NODE") == "1":
        pytest.fail(f"{reason} (PARLEY_REQUIRE_NODE=1)")
    pytest.skip(reason)


async def run(*command: str, cwd: Path) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_every_graphql_over_http_audit_passes(redis_url: str, tmp_path: Path) -> None:
    require_node()
    if not (RUNNER / "node_modules").is_dir():
        code, out, err = await run("npm", "ci", "--no-audit", "--no-fund", cwd=RUNNER)
        assert code == 0, f"npm ci failed:\n{out}\n{err}"
    async with serve(redis_url, tmp_path) as base_url:
        code, out, err = await run("node", "audit.mjs", f"{base_url}/graphql", cwd=RUNNER)
    assert out, f"the audit printed nothing (exit {code}):\n{err}"
    results = json.loads(out)
    failing = [
        f"{r['name']} ({r['status']}: {r['reason']})" for r in results if r["status"] != "ok"
    ]
    assert not failing, "audits not ok:\n" + "\n".join(failing)
    assert code == 0, err
    assert len(results) == AUDITS, [r["name"] for r in results]
