"""Issue 19: one SSE framer. `/run_lifecycle` streams exactly what the public
`rondo.lifecycle.to_sse` documents: every frame is `to_sse(event, id=...)`, byte for byte."""

from __future__ import annotations

import json
import re

import httpx

from rondo.lifecycle import parse_lifecycle_event, sse_frame, to_sse
from rondo.server import streams

_FRAME = re.compile(r"event: (?P<type>[a-z_]+)\nid: (?P<id>\d+\.\d+)\ndata: (?P<data>[^\n]*)\n\n")


def test_19_one_sse_framer_run_lifecycle_bytes_equal_to_sse(client: httpx.Client) -> None:
    client.post("/apps/chat/users/u/sessions/s")
    body = {
        "appName": "chat",
        "userId": "u",
        "sessionId": "s",
        "newMessage": {"role": "user", "parts": [{"text": "ham"}]},
    }
    answer = client.post("/run_lifecycle", json=body)
    assert answer.status_code == 200, answer.text
    text = answer.text
    frames = list(_FRAME.finditer(text))
    assert frames
    assert "".join(m.group(0) for m in frames) == text
    rebuilt: list[str] = []
    for match in frames:
        event = parse_lifecycle_event(json.loads(match.group("data")))
        assert event is not None
        assert event.type == match.group("type")
        rebuilt.append(to_sse(event, id=match.group("id")))
    assert "".join(rebuilt) == text
    assert frames[0].group("type") == "run_start"
    assert frames[-1].group("type") == "run_end"


def test_19_one_sse_framer_is_the_one_every_route_uses() -> None:
    assert streams.sse is sse_frame
    assert sse_frame(b"{}") == b"data: {}\n\n"
    assert sse_frame(b"{}", event="x", id="1.0") == b"event: x\nid: 1.0\ndata: {}\n\n"
