"""The README is a short front door whose links all resolve; the manual in docs/ builds with MkDocs
in strict mode, which refuses a link to a page, file or heading that does not exist."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from tests.support import repo_root

README_MAX_LINES = 150


def build_manual(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of the project at root, written to site."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def copy_of_the_manual(destination: Path) -> Path:
    """mkdocs.yml and docs/ copied to destination, to break without touching the tree."""
    root = repo_root()
    shutil.copy(root / "mkdocs.yml", destination / "mkdocs.yml")
    shutil.copytree(root / "docs", destination / "docs")
    return destination


def link_targets(markdown: str) -> list[str]:
    """Every link's and image's target in a Markdown document, in order."""

    def walk(tokens: list[Token]) -> list[str]:
        found: list[str] = []
        for token in tokens:
            if token.type == "link_open":
                found.append(str(token.attrGet("href")))
            elif token.type == "image":
                found.append(str(token.attrGet("src")))
            found.extend(walk(token.children or []))
        return found

    return walk(MarkdownIt("commonmark").enable("table").parse(markdown))


def relative_paths(targets: list[str]) -> list[str]:
    """The targets that name a file of the repository (no scheme, no host, not just an anchor)."""
    paths = []
    for target in targets:
        parts = urlsplit(target)
        if not parts.scheme and not parts.netloc and parts.path:
            paths.append(parts.path)
    return paths


def test_the_manual_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = build_manual(repo_root(), site)
    assert built.returncode == 0, built.stderr
    pages = {path.parent.name for path in site.glob("*/index.html")}
    assert {"getting-started", "graphql", "errors", "sotopia"} <= pages


@pytest.mark.parametrize(
    ("target", "named"),
    [("no-such-page.md", "no-such-page.md"), ("errors.md#no-such-heading", "no-such-heading")],
    ids=["page", "heading"],
)
def test_a_link_to_a_missing_page_or_heading_fails_the_build(
    tmp_path: Path, target: str, named: str
) -> None:
    root = copy_of_the_manual(tmp_path)
    index = root / "docs" / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + f"\n[gone]({target})\n")
    built = build_manual(root, tmp_path / "site")
    assert built.returncode != 0
    assert named in built.stderr


def test_the_readme_is_a_short_front_door() -> None:
    lines = (repo_root() / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def test_every_relative_link_in_the_readme_names_a_file() -> None:
    root = repo_root()
    paths = relative_paths(link_targets((root / "README.md").read_text(encoding="utf-8")))
    assert any(path.startswith("docs/") for path in paths), "the README links into the manual"
    missing = [path for path in paths if not (root / path).is_file()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_the_link_check_sees_links_and_images() -> None:
    """The check itself: a link and an image are found, a web address and an anchor left out."""
    markdown = "[a](docs/a.md#x) ![b](docs/b.png) [c](https://example.org/c.md) [d](#d)\n"
    assert relative_paths(link_targets(markdown)) == ["docs/a.md", "docs/b.png"]
