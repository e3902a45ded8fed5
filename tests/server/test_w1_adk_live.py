"""SPEC W1: rondo and a real google-adk `api_server`, asked the same questions, agree.

Both servers run the reference agent (`adk_apps/chat` on google-adk, `apps/chat` on rondo)
and get the same requests in the same order; every answer must have the same status and,
once ids, clocks and the documented differences are masked, the same JSON. A second test
reads rondo's answers back through google-adk's own pydantic models (`Session`, `Event`)
and requires that dumping them again, as google-adk's server does, changes nothing.

Needs google-adk (here or in `RONDO_ADK_PYTHON`); skips without it unless
`RONDO_REQUIRE_ADK=1`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._require import require
from tests.server._adk import adk_python
from tests.server._live import APPS, free_port, serve, sse_events

pytestmark = pytest.mark.integration

_VOLATILE = {"id", "invocationId", "timestamp", "lastUpdateTime", "createTime", "canonicalUri"}


def masked(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {
            k: {"path": "<path>"} if k == "nodeInfo" else masked(v, k)
            for k, v in value.items()
            if k != "runId"  # rondo's run id, an extra key google-adk's Event ignores
        }
    if isinstance(value, list):
        return [masked(v) for v in value]
    if key in _VOLATILE:
        return f"<{key}>"
    return value


def _python() -> str:
    python = adk_python()
    require(
        python,
        what="ADK",
        reason="google-adk not found (pip install google-adk, or set RONDO_ADK_PYTHON to a "
        "python that has it)",
    )
    assert python is not None
    return python


@pytest.fixture
def adk(tmp_path: Path) -> Iterator[httpx.Client]:
    python = _python()
    agents = tmp_path / "agents"
    shutil.copytree(Path(__file__).parent / "adk_apps", agents)
    port = free_port()
    process = subprocess.Popen(
        [python, "-m", "google.adk.cli", "api_server", "--port", str(port), str(agents)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/health", timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("adk api_server did not start") from None
                time.sleep(0.2)
        with httpx.Client(base_url=url, timeout=30) as client:
            yield client
    finally:
        process.terminate()
        process.wait(10)
        assert process.stderr is not None
        process.stderr.close()


@pytest.fixture
def rondo() -> Iterator[httpx.Client]:
    from rondo.server import create_app

    with (
        serve(create_app(APPS, db="memory", loopback_only=True)) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        yield client


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def _run(session: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "appName": "chat",
        "userId": "u1",
        "sessionId": session,
        "newMessage": _message(text),
        **extra,
    }


def _blob() -> dict[str, str]:
    return {"mimeType": "text/plain", "data": "aGVsbG8gd29ybGQ="}


S = "/apps/chat/users/u1/sessions"
A = f"{S}/s1/artifacts"

# (method, path, body, compare): compare is "json" (same masked JSON), "status" (same status
# only; the bodies differ on purpose, see the comment) or "sse" (same masked events).
SCENARIO: list[tuple[str, str, Any, str]] = [
    ("POST", S, {"state": {"k": 1}}, "json"),
    ("POST", S, None, "json"),
    ("POST", f"{S}/s1", {"a": 1}, "json"),
    ("POST", f"{S}/s1", {}, "json"),  # 409
    ("GET", f"{S}/s1", None, "json"),
    ("PATCH", f"{S}/s1", {"stateDelta": {"x": 2}}, "json"),
    ("PATCH", f"{S}/missing", {"stateDelta": {"x": 2}}, "json"),
    ("PATCH", f"{S}/s1", {"state": {"x": 2}}, "json"),  # 422: stateDelta missing
    ("POST", "/run", _run("s1", "milk"), "json"),
    ("POST", "/run_sse", _run("s1", "eggs"), "sse"),
    ("POST", "/run", _run("missing", "x"), "json"),
    ("POST", "/run_sse", _run("missing", "x"), "json"),
    ("POST", "/run", {"userId": "u1", "sessionId": "s1"}, "status"),  # messages name ADK's env
    ("POST", "/run", {"appName": "chat"}, "json"),  # 422
    ("POST", "/run", b"{not json", "json"),
    ("POST", A, {"filename": "notes.txt", "artifact": {"inlineData": _blob()}}, "json"),
    ("POST", A, {"filename": "notes.txt", "artifact": {"text": "v1"}}, "json"),
    ("POST", A, {"filename": "t.txt", "artifact": {"text": "hi"}}, "json"),
    ("POST", A, {"filename": "../x", "artifact": {"text": "no"}}, "status"),  # own wording
    ("GET", A, None, "json"),
    ("GET", f"{A}/notes.txt", None, "json"),
    ("GET", f"{A}/notes.txt?version=0", None, "json"),
    ("GET", f"{A}/notes.txt/versions", None, "json"),
    ("GET", f"{A}/notes.txt/versions/0", None, "json"),
    ("GET", f"{A}/notes.txt/versions/latest", None, "json"),
    ("GET", f"{A}/notes.txt/versions/9", None, "json"),
    ("GET", f"{A}/notes.txt/versions/x", None, "json"),
    ("GET", f"{A}/nope", None, "json"),
    ("DELETE", f"{A}/notes.txt", None, "json"),
    ("GET", A, None, "json"),
    ("GET", f"{S}/s1", None, "json"),
    ("GET", S, None, "sorted"),
    ("DELETE", f"{S}/s1", None, "json"),
    ("DELETE", f"{S}/s1", None, "json"),
    ("GET", f"{S}/s1", None, "json"),
]


def _send(client: httpx.Client, method: str, path: str, body: Any) -> httpx.Response:
    if isinstance(body, bytes):
        return client.request(
            method, path, content=body, headers={"content-type": "application/json"}
        )
    return client.request(method, path, json=body)


def _body(response: httpx.Response, compare: str) -> Any:
    if compare == "sse":
        return [masked(e) for e in sse_events(response.text)]
    data = masked(response.json())
    if compare == "sorted":
        return sorted(json.dumps(d, sort_keys=True) for d in data)
    return data


def test_w1_rondo_answers_like_a_live_adk_api_server(
    adk: httpx.Client, rondo: httpx.Client
) -> None:
    for method, path, body, compare in SCENARIO:
        theirs = _send(adk, method, path, body)
        ours = _send(rondo, method, path, body)
        step = f"{method} {path} {body!r:.60}"
        assert ours.status_code == theirs.status_code, (step, theirs.text, ours.text)
        assert ours.headers["content-type"] == theirs.headers["content-type"], step
        if compare != "status":
            assert _body(ours, compare) == _body(theirs, compare), step


_ROUND_TRIP = """
import json, sys
from google.adk.events.event import Event
from google.adk.sessions.session import Session

def dump(model):
    return model.model_dump(exclude_none=True, by_alias=True, mode="json")

data = json.load(sys.stdin)
out = {"session": dump(Session.model_validate(data["session"])),
       "events": [dump(Event.model_validate(e)) for e in data["events"]]}
json.dump(out, sys.stdout)
"""


def test_w1_adks_own_models_read_rondos_json_unchanged(rondo: httpx.Client) -> None:
    python = _python()
    rondo.post(f"{S}/s1", json={"k": [1, 2]})
    events = rondo.post("/run", json=_run("s1", "milk")).json()
    streamed = rondo.post("/run_sse", json=_run("s1", "eggs", streaming=True))
    events += sse_events(streamed.text)
    session = rondo.get(f"{S}/s1").json()
    for event in [*events, *session["events"]]:
        event.pop("runId")  # the one key rondo adds; google-adk's Event ignores it
    done = subprocess.run(
        [python, "-c", _ROUND_TRIP],
        input=json.dumps({"session": session, "events": events}),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    again = json.loads(done.stdout)
    assert again["events"] == events
    assert again["session"] == session
