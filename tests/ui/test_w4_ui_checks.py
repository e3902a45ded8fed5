"""Issue 19.5: the web UI's own checks — `tsc --noEmit` over its JSDoc types and unit tests of
its SSE and Markdown parsers in Node's test runner (tests/ui/*.test.mjs). The tools come from
tests/ui/package-lock.json, installed once per lockfile into tests/ui/node_modules."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from tests._require import require

HERE = Path(__file__).parent
STAMP = HERE / "node_modules" / ".rondo-lock"


@pytest.fixture(scope="module")
def node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    require(
        node and npm, what="NODE", reason="Node.js and npm not found (apt-get install nodejs npm)"
    )
    assert node is not None
    assert npm is not None
    want = hashlib.sha1((HERE / "package-lock.json").read_bytes()).hexdigest()
    if not STAMP.is_file() or STAMP.read_text() != want:
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        STAMP.write_text(want)
    return node


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=HERE, capture_output=True, text=True, timeout=300)


def test_w4_ui_types_check(node: str) -> None:
    done = _run([node, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json"])
    assert done.returncode == 0, done.stdout + done.stderr


def test_w4_ui_parsers(node: str) -> None:
    tests = sorted(str(p.name) for p in HERE.glob("*.test.mjs"))
    assert tests, "no UI unit tests found"
    done = _run([node, "--test", *tests])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout
