"""Finding google-adk for the tests that check rondo against it.

google-adk is not a dependency of rondo (its pins clash with rondo's extras), so it is found
either in this interpreter or in another one named by `RONDO_ADK_PYTHON` (a virtualenv's
python with `google-adk` installed). Tests that need it skip without it; CI sets
`RONDO_REQUIRE_ADK=1` / `RONDO_REQUIRE_ADK_UI=1` to make them fail instead.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

__all__ = ["adk_browser_dir", "adk_python"]

_FIND = (
    "import importlib.util, pathlib; "
    "spec = importlib.util.find_spec('google.adk'); "
    "print(pathlib.Path(spec.origin).parent if spec and spec.origin else '')"
)


@cache
def adk_python() -> str | None:
    """A python interpreter that can import google.adk, or None."""
    candidates = [os.environ.get("RONDO_ADK_PYTHON") or "", sys.executable]
    for python in candidates:
        if python and _adk_package(python) is not None:
            return python
    return None


@cache
def _adk_package(python: str) -> Path | None:
    if python == sys.executable:
        try:
            spec = importlib.util.find_spec("google.adk")
        except ModuleNotFoundError:
            return None
        return Path(spec.origin).parent if spec and spec.origin else None
    try:
        out = subprocess.run(
            [python, "-c", _FIND], capture_output=True, text=True, timeout=60, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out) if out else None


def adk_browser_dir() -> Path | None:
    """The dev web UI shipped in google-adk's wheel (`google/adk/cli/browser`), or None."""
    python = adk_python()
    package = _adk_package(python) if python else None
    browser = package / "cli" / "browser" if package else None
    return browser if browser is not None and (browser / "index.html").is_file() else None
