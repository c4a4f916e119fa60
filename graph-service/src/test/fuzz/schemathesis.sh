#!/usr/bin/env bash
# schemathesis.sh ARGS... : runs `st run ARGS...` from a venv made once per pinned requirements file, under
# $WATTGRAPH_CACHE (default ~/.cache/wattgraph), outside the checkout. Used by SchemathesisFuzzTest.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
requirements="$here/schemathesis-requirements.txt"
key="$(sha256sum "$requirements" | cut -c1-12)"
venv="${WATTGRAPH_CACHE:-$HOME/.cache/wattgraph}/schemathesis-$key"
if [ ! -e "$venv/.complete" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
  touch "$venv/.complete"
fi
exec "$venv/bin/st" run "$@"
