"""Optional test requirements: skip with a reason naming what is missing, or fail in CI.

A test that needs something a core install does not have (an SDK, llama.cpp, weights,
PostgreSQL, MCP, a browser) calls one of these. Without the thing it skips, saying what to
install; with `RONDO_REQUIRE_<WHAT>=1` in the environment (CI sets these) it fails instead, so
nothing CI is meant to run is ever skipped there.

    openai = require_module("openai", what="OPENAI", install="pip install 'rondo-agents[openai]'")
    require(shutil.which("chromium"), what="BROWSER", reason="Chromium not found (apt-get install chromium)")
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

__all__ = ["require", "require_module", "required"]


def required(what: str) -> bool:
    """Whether CI demands `what` (`RONDO_REQUIRE_<WHAT>=1`)."""
    return os.environ.get(f"RONDO_REQUIRE_{what.upper()}") == "1"


def require(condition: object, *, what: str, reason: str) -> None:
    """Skip the calling test (or module) unless `condition` holds; fail instead when required."""
    if condition:
        return
    if required(what):
        pytest.fail(f"{reason} — RONDO_REQUIRE_{what.upper()}=1 requires it", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_module(name: str, *, what: str, install: str) -> ModuleType:
    """Import `name`, or skip (fail when required) saying how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        require(False, what=what, reason=f"needs {name} ({install}): {exc}")
        raise  # pragma: no cover - require() skips or fails
