"""Download the pinned GraphiQL assets from the npm registry and rewrite their manifest (a
maintainer's tool, run from the repository's root; it is not installed).

    python -m scripts.update_assets                       # fetch the pins again
    python -m scripts.update_assets --pin graphiql@3.8.3  # move one pin, then fetch
    python -m scripts.update_assets --check               # offline: files match the manifest

Each package's tarball is checked against the registry's `dist.integrity` (sha512) before any
file is taken from it; only the files the manifest names are written.
"""

import argparse
import base64
import hashlib
import io
import json
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

ASSETS = Path(__file__).resolve().parents[1] / "graph" / "static" / "graphiql"
MANIFEST = "manifest.json"
REGISTRY = "https://registry.npmjs.org"
TIMEOUT = 60.0

FileEntry = TypedDict("FileEntry", {"from": str, "file": str, "integrity": NotRequired[str]})


class Package(TypedDict):
    name: str
    version: str
    tarball: NotRequired[str]
    integrity: NotRequired[str]
    files: list[FileEntry]
    licence: str
    note: NotRequired[str]


class Manifest(TypedDict):
    packages: list[Package]


class AssetError(Exception):
    pass


def integrity(data: bytes) -> str:
    """Subresource-integrity form of the sha512 digest, as npm writes `dist.integrity`."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def load(directory: Path) -> Manifest:
    manifest = cast(Manifest, json.loads((directory / MANIFEST).read_text(encoding="utf-8")))
    shipped = {entry["file"] for package in manifest["packages"] for entry in package["files"]}
    for name in shipped:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise AssetError(f"{name}: the file name leaves the assets folder")
    for package in manifest["packages"]:
        if package["licence"] not in shipped:
            raise AssetError(f"{package['name']}: licence {package['licence']} is not shipped")
    return manifest


def fetch(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"user-agent": "parley-update-assets"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            data: bytes = response.read()
    except (urllib.error.URLError, TimeoutError) as err:
        raise AssetError(f"{url}: {err}") from err
    return data


def dist(registry: str, name: str, version: str) -> tuple[str, str]:
    """The tarball URL and its integrity, from the version's metadata document."""
    url = f"{registry}/{urllib.parse.quote(name, safe='@')}/{urllib.parse.quote(version)}"
    document: dict[str, Any] = json.loads(fetch(url))
    info = document.get("dist") or {}
    tarball, expected = info.get("tarball"), info.get("integrity")
    if not isinstance(tarball, str) or not isinstance(expected, str):
        raise AssetError(f"{name}@{version}: the registry gave no tarball and integrity")
    if not expected.startswith("sha512-"):
        raise AssetError(f"{name}@{version}: integrity is not sha512 ({expected[:12]}...)")
    return tarball, expected


def extract(tarball: bytes, wanted: set[str]) -> dict[str, bytes]:
    """The `wanted` paths of an npm tarball (relative to its top folder, usually `package/`)."""
    found: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        for member in archive.getmembers():
            _, _, path = member.name.partition("/")
            if member.isfile() and path in wanted:
                reader = archive.extractfile(member)
                if reader is not None:
                    found[path] = reader.read()
    missing = wanted - found.keys()
    if missing:
        raise AssetError(f"not in the tarball: {', '.join(sorted(missing))}")
    return found


def download(package: Package, registry: str) -> dict[str, bytes]:
    """The package's files by shipped name; fills in its tarball, integrity and file digests."""
    name, version = package["name"], package["version"]
    tarball_url, expected = dist(registry, name, version)
    tarball = fetch(tarball_url)
    if integrity(tarball) != expected:
        raise AssetError(f"{name}@{version}: tarball does not match {expected}")
    known = package.get("integrity")
    if known and package.get("tarball") == tarball_url and known != expected:
        raise AssetError(f"{name}@{version}: the registry's integrity changed from {known}")
    contents = extract(tarball, {entry["from"] for entry in package["files"]})
    package["tarball"], package["integrity"] = tarball_url, expected
    files: dict[str, bytes] = {}
    for entry in package["files"]:
        files[entry["file"]] = contents[entry["from"]]
        entry["integrity"] = integrity(contents[entry["from"]])
    return files


def pin(manifest: Manifest, spec: str) -> None:
    """Move `name@version` to a new version (its integrity is then taken afresh)."""
    name, at, version = spec.rpartition("@")
    if not at or not name or not version:
        raise AssetError(f"--pin wants NAME@VERSION, not {spec!r}")
    for package in manifest["packages"]:
        if package["name"] == name:
            if package["version"] != version:
                package["version"] = version
                package.pop("tarball", None)
                package.pop("integrity", None)
            return
    raise AssetError(f"no package {name!r} in the manifest")


def update(directory: Path, pins: list[str], registry: str = REGISTRY) -> Manifest:
    manifest = load(directory)
    for spec in pins:
        pin(manifest, spec)
    files: dict[str, bytes] = {}
    for package in manifest["packages"]:
        files.update(download(package, registry))
        print(f"{package['name']}@{package['version']}: {len(package['files'])} file(s)")
    for path in stray_files(directory, set(files)):
        (directory / path).unlink()
    for path, data in files.items():
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_bytes(data)
    manifest["packages"] = [in_order(package) for package in manifest["packages"]]
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    (directory / MANIFEST).write_text(text, encoding="utf-8")
    return manifest


def in_order(package: Package) -> Package:
    """The package's keys in one order, so that the manifest's diffs stay small."""
    order = {key: i for i, key in enumerate(Package.__annotations__)}
    return cast(Package, dict(sorted(package.items(), key=lambda item: order.get(item[0], 99))))


def stray_files(directory: Path, listed: set[str]) -> set[str]:
    """Files in the assets folder that the manifest does not list."""
    present = {
        p.relative_to(directory).as_posix()
        for p in directory.rglob("*")
        if p.is_file() and p.name != MANIFEST
    }
    return present - listed


def problems(directory: Path = ASSETS) -> list[str]:
    """What differs between the shipped files and the manifest (empty when they match)."""
    manifest = load(directory)
    found: list[str] = []
    listed: set[str] = set()
    for package in manifest["packages"]:
        if not package.get("integrity"):
            found.append(f"{package['name']}: no tarball integrity recorded")
        for entry in package["files"]:
            listed.add(entry["file"])
            path = directory / entry["file"]
            if not path.is_file():
                found.append(f"{entry['file']}: missing")
            elif integrity(path.read_bytes()) != entry.get("integrity"):
                found.append(f"{entry['file']}: does not match its recorded integrity")
    stray = stray_files(directory, listed)
    found.extend(f"{path}: not in the manifest" for path in sorted(stray))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pin", action="append", default=[], metavar="NAME@VERSION")
    parser.add_argument("--check", action="store_true", help="verify the files, offline")
    parser.add_argument("--registry", default=REGISTRY)
    parser.add_argument("--dir", type=Path, default=ASSETS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.check:
            found = problems(args.dir)
            for line in found:
                print(line, file=sys.stderr)
            return 1 if found else 0
        update(args.dir, args.pin, args.registry.rstrip("/"))
    except AssetError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
