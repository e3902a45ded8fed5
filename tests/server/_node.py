"""The real JavaScript clients (tests/js: `@ag-ui/client`, the AI SDK's `ai`), run in Node.

`node_client()` installs tests/js's locked packages once (`npm ci`, its cache inside the
worktree) and returns a function that runs one of its scripts. Without Node or npm the
calling test skips naming what is missing (fails under `RONDO_REQUIRE_NODE=1`).
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests._require import require

JS = Path(__file__).parent.parent / "js"
_CACHE = JS.parent.parent / ".npm-cache"

RunScript = Callable[..., Any]


def _install() -> None:
    # Test files run on several xdist workers: one installs, the others wait (`npm ci` first
    # deletes node_modules, so two at once would break each other).
    JS.joinpath(".install.lock").touch()
    with JS.joinpath(".install.lock").open() as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        _install_locked()


def _install_locked() -> None:
    lock = JS / "package-lock.json"
    stamp = JS / "node_modules" / ".rondo-lock"
    if stamp.is_file() and stamp.read_text() == lock.read_text():
        return
    subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", "--cache", str(_CACHE)],
        cwd=JS,
        check=True,
        capture_output=True,
        timeout=600,
    )
    stamp.write_text(lock.read_text())


def node_client() -> RunScript:
    """`run(script, *args)` → the script's stdout parsed as JSON."""
    require(shutil.which("node"), what="NODE", reason="Node.js not found (apt-get install nodejs)")
    require(shutil.which("npm"), what="NODE", reason="npm not found (apt-get install npm)")
    _install()

    def run(script: str, *args: str) -> Any:
        done = subprocess.run(
            ["node", str(JS / script), *args], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"{script} failed: {done.stderr[-3000:]}"
        return json.loads(done.stdout)

    return run
