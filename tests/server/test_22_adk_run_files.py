"""Issue 22 item 5 on google-adk's run routes: a message's inline data on `/run` and
`/run_sse`. As ADK, the file is stored in the message as sent; with rondo's
`runConfig.saveInputBlobsAsArtifacts` (named as ADK's RunConfig field) it is saved as the
session's artifact and the stored message refers to it, while the model still sees the file.
Either way a file too large (413) or of a type the model cannot take (415) is refused before
anything runs, with a JSON body that says why."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from rondo.server.files import MAX_FILE_BYTES

_DOT = b"\x89PNG\r\n\x1a\nx"  # 9 bytes


def _body(sid: str, data: bytes, mime: str = "image/png", **extra: Any) -> dict[str, Any]:
    blob = {"mimeType": mime, "data": base64.b64encode(data).decode(), "displayName": "dot.png"}
    message = {"role": "user", "parts": [{"text": "see"}, {"inlineData": blob}]}
    return {"appName": "helper", "userId": "user", "sessionId": sid, "newMessage": message, **extra}


def _new_session(client: httpx.Client, sid: str) -> str:
    made = client.post(f"/apps/helper/users/user/sessions/{sid}")
    assert made.status_code == 200, made.text
    return f"/apps/helper/users/user/sessions/{sid}"


def _answer_text(events: list[dict[str, Any]]) -> str:
    return "".join(
        p.get("text", "")
        for e in events
        if e["author"] != "user"
        for p in (e.get("content") or {}).get("parts", [])
    )


@pytest.mark.parametrize("route", ["/run", "/run_sse"])
def test_22_adk_run_with_inline_data_saves_it_as_an_artifact_when_asked(
    client: httpx.Client, route: str
) -> None:
    base = _new_session(client, "files")
    body = _body("files", _DOT, runConfig={"saveInputBlobsAsArtifacts": True})
    answer = client.post(route, json=body)
    assert answer.status_code == 200, answer.text
    if route == "/run":
        events = answer.json()
    else:
        events = [
            json.loads(line.removeprefix("data: "))
            for line in answer.text.splitlines()
            if line.startswith("data: ")
        ]
    assert _answer_text(events) == "Got image/png of 9 bytes"  # the model saw the file
    assert client.get(base + "/artifacts").json() == ["dot.png"]
    saved = client.get(base + "/artifacts/dot.png").json()
    assert base64.b64decode(saved["inlineData"]["data"]) == _DOT
    first = next(e for e in client.get(base).json()["events"] if e["author"] == "user")
    stored = first["content"]["parts"][1]
    assert "inlineData" not in stored
    assert stored["fileData"]["fileUri"] == "artifact://dot.png?version=0"
    assert first["actions"]["artifactDelta"] == {"dot.png": 0}


def test_22_adk_run_with_inline_data_keeps_it_in_the_message_by_default(
    client: httpx.Client,
) -> None:
    """google-adk's own route stores the file in the user's event; so does rondo's."""
    base = _new_session(client, "inline")
    answer = client.post("/run", json=_body("inline", _DOT))
    assert answer.status_code == 200, answer.text
    assert _answer_text(answer.json()) == "Got image/png of 9 bytes"
    assert client.get(base + "/artifacts").json() == []
    first = next(e for e in client.get(base).json()["events"] if e["author"] == "user")
    assert base64.b64decode(first["content"]["parts"][1]["inlineData"]["data"]) == _DOT


@pytest.mark.parametrize("route", ["/run", "/run_sse", "/run_lifecycle"])
def test_22_adk_run_refuses_files_too_large_or_of_types_the_model_cannot_take(
    client: httpx.Client, route: str
) -> None:
    base = _new_session(client, "refused")
    too_large = client.post(route, json=_body("refused", b"x" * (MAX_FILE_BYTES + 1)))
    assert too_large.status_code == 413, too_large.text
    assert "at most" in too_large.json()["detail"]
    exe = client.post(route, json=_body("refused", b"MZ", "application/x-msdownload"))
    assert exe.status_code == 415, exe.text
    assert "does not take application/x-msdownload" in exe.json()["detail"]
    # Nothing ran and nothing was stored; the session is free for the next message.
    assert client.get(base).json()["events"] == []
    ok = client.post("/run", json=_body("refused", _DOT))
    assert ok.status_code == 200, ok.text
