#!/usr/bin/env bash
# Regenerate parley_client/ from ../../schema.graphql and operations.graphql with ariadne-codegen.
#   ./regenerate.sh           rewrite parley_client/ in place
#   ./regenerate.sh --check   generate into a temporary directory and fail if it differs
# ariadne-codegen needs graphql-core 3.2 (the service needs 3.3), so it runs from its own venv:
# $CODEGEN_VENV, by default .venv here, created on first use with $PYTHON (default python3.12).
set -euo pipefail
cd "$(dirname "$0")"

CODEGEN_VERSION=0.19.0
RUFF_VERSION=0.15.22 # ariadne-codegen formats its output with the ruff it finds; pinned for stable output
VENV=${CODEGEN_VENV:-.venv}
PYTHON=${PYTHON:-python3.12}
PACKAGE=parley_client

installed() {
  "$VENV/bin/python" - "$CODEGEN_VERSION" "$RUFF_VERSION" <<'PY' >/dev/null 2>&1
import sys
from importlib.metadata import version

sys.exit((version("ariadne-codegen"), version("ruff")) != (sys.argv[1], sys.argv[2]))
PY
}

if ! installed; then
  echo "Installing ariadne-codegen $CODEGEN_VERSION into $VENV" >&2
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q "ariadne-codegen==$CODEGEN_VERSION" "ruff==$RUFF_VERSION"
fi

generate() { # $1: a pyproject.toml with the [tool.ariadne-codegen] settings
  if ! "$VENV/bin/ariadne-codegen" --config "$1" >/dev/null; then
    echo "ariadne-codegen failed: do the operations in operations.graphql still fit schema.graphql?" >&2
    exit 1
  fi
}

if [[ "${1:-}" != "--check" ]]; then
  rm -rf "$PACKAGE"
  generate pyproject.toml
  echo "Regenerated $PACKAGE/"
  exit 0
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The same settings, with the package written to the temporary directory.
sed "s|^target_package_path = .*|target_package_path = \"$out\"|" pyproject.toml >"$out/pyproject.toml"
grep -q "^target_package_path = \"$out\"" "$out/pyproject.toml"
generate "$out/pyproject.toml"
if ! diff -r -x __pycache__ "$PACKAGE" "$out/$PACKAGE"; then
  echo "examples/typed_client/$PACKAGE/ is out of date with schema.graphql or operations.graphql:" \
    "run examples/typed_client/regenerate.sh and commit the result." >&2
  exit 1
fi
echo "examples/typed_client/$PACKAGE/ matches schema.graphql and operations.graphql"
