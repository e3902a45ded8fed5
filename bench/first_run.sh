#!/usr/bin/env bash
# The README's first command as a new user meets it: a fresh clone, an empty pip cache, a new
# venv. Prints the command's output and its wall time (GNU time). Results: bench/FIRST_RUN.md.
#   bench/first_run.sh [REPO]   # REPO defaults to this checkout
set -euo pipefail
repo="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
git clone -q "$repo" "$d/c"
cd "$d/c"
PIP_CACHE_DIR=$(mktemp -d -p "$d") /usr/bin/time -f "wall %e s (user %U s, sys %S s)" \
    ./dev run examples/weather "What's the weather in Paris?"
