#!/usr/bin/env bash
# Run the A2A conformance kit against rondo, by hand (the kit is on no package registry, so CI
# cannot install it): see README.md beside this script.
#   run_by_hand.sh KIT_DIR [KIT_PYTHON]
# KIT_DIR: a2a-tck at commit 410ba92, installed (`pip install -e KIT_DIR`) for KIT_PYTHON.
set -euo pipefail
kit=$(cd "$1" && pwd)
kit_python=${2:-python}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
rondo_python=${RONDO_PYTHON:-$repo/.venv/bin/python}
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# One app, so its card is also at the host root, where the kit looks.
mkdir -p "$work/apps"
cp -r "$repo/tests/server/apps/chat" "$work/apps/"
cp "$repo/tests/server/apps/echo_model.py" "$work/apps/"
echo '{"tck-token": "tck"}' >"$work/tokens.json"

free_port() { "$rondo_python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

serve() {  # serve PORT [rondo options...]; waits until the card answers
    local port=$1
    shift
    (cd "$work" && exec "$rondo_python" -m rondo.cli api-server "$work/apps" --db memory --a2a \
        --port "$port" --log-level warning "$@") &
    pids+=($!)
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$port/.well-known/agent-card.json" >/dev/null && return
        sleep 0.2
    done
    echo "rondo did not start on port $port" >&2
    exit 1
}

deselect=()
while read -r id; do deselect+=(--deselect "$id"); done \
    < <(grep -v '^#' "$here/deselected.txt" | sed 's/  #.*//' | grep -v '^$')

kit_pytest() {  # kit_pytest PORT CATEGORY_PATH [pytest options...]
    local port=$1 path=$2
    shift 2
    (cd "$kit" && PYTHONPATH="$here" "$kit_python" -m pytest "$path" -p version_header \
        -p no:cacheprovider --sut-url="http://localhost:$port/a2a/chat" --test-scope=all \
        --tb=short -q "${deselect[@]}" "$@")
}

open_port=$(free_port)
serve "$open_port"
token_port=$(free_port)
serve "$token_port" --auth-tokens "$work/tokens.json"

status=0
mandatory=(-m "mandatory or mandatory_protocol or mandatory_jsonrpc")
echo "== mandatory, no tokens"
kit_pytest "$open_port" tests/mandatory/ "${mandatory[@]}" || status=1
echo "== mandatory, --auth-tokens"
A2A_AUTH_TYPE=bearer A2A_AUTH_TOKEN=tck-token \
    kit_pytest "$token_port" tests/mandatory/ "${mandatory[@]}" || status=1
echo "== capabilities"
kit_pytest "$open_port" tests/optional/capabilities/ || status=1
exit $status
