"""SPEC O2: `rondo api-server --traces` keeps spans for the trace routes; without it, none.

Run as a user runs it (a subprocess on a free port). Needs opentelemetry-sdk (the server
extra): skipped without it unless `RONDO_REQUIRE_OTEL_SDK=1`.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests._require import require_module
from tests.server._live import APPS
from tests.server.test_w1_cli import _command

require_module("opentelemetry.sdk", what="OTEL_SDK", install="pip install 'rondo-agents[server]'")

pytestmark = pytest.mark.integration


def _run(url: str) -> str:
    session = httpx.post(f"{url}/apps/chat/users/u/sessions").json()
    run = {
        "appName": "chat",
        "userId": "u",
        "sessionId": session["id"],
        "newMessage": {"role": "user", "parts": [{"text": "tea"}]},
    }
    assert httpx.post(f"{url}/run", json=run, timeout=30).status_code == 200
    return session["id"]


@pytest.mark.parametrize("traces", [True, False])
def test_o2_api_server_keeps_spans_only_with_traces(tmp_path: Path, traces: bool) -> None:
    flags = ["--db", "memory", *(["--traces"] if traces else [])]
    with _command("api-server", str(APPS), *flags, cwd=tmp_path) as url:
        session_id = _run(url)
        spans = httpx.get(f"{url}/dev/apps/chat/debug/trace/session/{session_id}").json()
    names = {s["name"] for s in spans}
    if traces:
        assert {"invoke_agent chat", "chat echo", "execute_tool remember"} <= names
    else:
        assert spans == []
