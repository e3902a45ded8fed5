"""Issue 26 item 4 (SPEC W3): bad input is a 4xx, never a 500, on every store.

A lone surrogate or a NUL in message text or in any id, an artifact name too long for a file
name once encoded, a long non-ASCII user id, the first request on a fresh PostgreSQL database:
each gets a clear 4xx (or works), and the session stays readable and free for the next run.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.server._attack import ALICE, Hostile, hostile, message, store
from tests.server._live import sse_events

__all__ = ["hostile", "store"]

SURROGATE = "caf\ud800"  # decoded from the JSON escape "\ud800": not UTF-8
RUN_ROUTES = ["/run", "/run_sse", "/run_lifecycle"]


def _post(http: httpx.Client, path: str, body: Any, **headers: str) -> httpx.Response:
    # Escaped, as a client would send it: the server's JSON decoder makes the lone surrogate.
    content = json.dumps(body, ensure_ascii=True)
    return http.post(path, content=content, headers={"content-type": "application/json", **headers})


def test_w3_attack_first_request_on_a_fresh_database_is_a_4xx(hostile: Hostile) -> None:
    # `store` is new: for PostgreSQL a database no rondo has set up yet (no tables).
    with hostile() as http:
        for route in RUN_ROUTES:
            first = http.post(route, json=message("chat", "alice", "s1", "hi"), headers=ALICE)
            assert first.status_code == 404, first.text
        assert http.post("/apps/chat/users/alice/sessions/s1", headers=ALICE).status_code == 200
        assert http.post("/run", json=message("chat", "alice", "s1", "hi"), headers=ALICE)


@pytest.mark.parametrize("route", RUN_ROUTES)
def test_w3_attack_a_lone_surrogate_in_message_text_is_a_422(hostile: Hostile, route: str) -> None:
    with hostile() as http:
        assert http.post("/apps/chat/users/alice/sessions/s1", headers=ALICE).status_code == 200
        bad = _post(http, route, message("chat", "alice", "s1", SURROGATE), **ALICE)
        assert bad.status_code == 422, bad.text
        assert "surrogate" in bad.json()["detail"]
        # Nothing was stored, the session reads, and it is free for the next run at once.
        session = http.get("/apps/chat/users/alice/sessions/s1", headers=ALICE)
        assert session.status_code == 200, session.text
        assert session.json()["events"] == []
        good = http.post("/run", json=message("chat", "alice", "s1", "café"), headers=ALICE)
        assert good.status_code == 200, good.text


def test_w3_attack_a_nul_in_message_text_is_stored_and_read_back(hostile: Hostile) -> None:
    with hostile() as http:
        assert http.post("/apps/slow/users/alice/sessions/s1", headers=ALICE).status_code == 200
        answer = http.post("/run_sse", json=message("slow", "alice", "s1", "a\x00b"), headers=ALICE)
        assert answer.status_code == 200, answer.text
        texts = [e["content"]["parts"][0].get("text") for e in sse_events(answer.text)]
        assert texts == ["done: a\x00b"]
        session = http.get("/apps/slow/users/alice/sessions/s1", headers=ALICE).json()
        assert [e["content"]["parts"][0]["text"] for e in session["events"]] == [
            "a\x00b",
            "done: a\x00b",
        ]


BAD_IDS = ["s\x00", SURROGATE, "s" * 129, "../s", "名" * 200]


@pytest.mark.parametrize("bad", BAD_IDS, ids=["nul", "surrogate", "long", "dotdot", "long-cjk"])
def test_w3_attack_a_bad_id_in_a_run_is_a_4xx_before_any_claim(hostile: Hostile, bad: str) -> None:
    with hostile(auth_tokens=None, loopback_only=True) as http:
        assert http.post("/apps/chat/users/u/sessions/s").status_code == 200
        for body in (
            message("chat", "u", bad, "hi"),
            message("chat", bad, "s", "hi"),
            message(bad, "u", "s", "hi"),
        ):
            for route in RUN_ROUTES:
                answer = _post(http, route, body)
                assert 400 <= answer.status_code < 500, (route, body, answer.text)
        made = _post(http, "/apps/chat/users/u/sessions", {"sessionId": bad})
        assert made.status_code == 400, made.text
        # The good session was never claimed by the refused runs.
        assert http.post("/run", json=message("chat", "u", "s", "hi")).status_code == 200


# (Bytes that are not UTF-8, `%ED%A0%80`, arrive decoded as U+FFFD: a legal id.)
@pytest.mark.parametrize("segment", ["s%00", "s%1F", "x" * 300])
def test_w3_attack_a_bad_id_in_a_path_is_a_4xx(hostile: Hostile, segment: str) -> None:
    with hostile(auth_tokens=None, loopback_only=True) as http:
        for path in (
            f"/apps/chat/users/u/sessions/{segment}",
            f"/apps/chat/users/{segment}/sessions/s",
            f"/apps/{segment}/users/u/sessions/s",
            f"/apps/chat/users/u/sessions/{segment}/artifacts",
            f"/apps/chat/users/u/sessions/s/artifacts/{segment}",
        ):
            for method in ("GET", "POST"):
                answer = http.request(method, path)
                assert 400 <= answer.status_code < 500, (method, path, answer.text)


def test_w3_attack_an_artifact_name_too_long_once_encoded_is_a_400(hostile: Hostile) -> None:
    with hostile() as http:
        assert http.post("/apps/chat/users/alice/sessions/s1", headers=ALICE).status_code == 200
        long_name = "报告" * 50  # 100 characters, 900 bytes percent-encoded
        answer = http.get(
            f"/apps/chat/users/alice/sessions/s1/artifacts/{long_name}", headers=ALICE
        )
        assert answer.status_code == 400, answer.text
        assert "too long" in answer.json()["detail"]


def test_w3_attack_a_long_non_ascii_user_id_works(hostile: Hostile) -> None:
    user = "名" * 128  # the longest legal user id; 1,152 bytes as a percent-encoded file name
    with hostile(auth_tokens={"tok-long": user}) as http:
        headers = {"Authorization": "Bearer tok-long"}
        base = f"/apps/files/users/{user}/sessions/s1"
        assert http.post(base, headers=headers).status_code == 200
        run = http.post("/run", json=message("files", user, "s1", "hello"), headers=headers)
        assert run.status_code == 200, run.text
        assert http.get(f"{base}/artifacts", headers=headers).json() == ["notes.txt"]
        saved = http.get(f"{base}/artifacts/notes.txt", headers=headers)
        assert saved.status_code == 200, saved.text
        assert saved.json() == {"text": "hello"}


def test_w3_attack_a_lone_surrogate_in_a_pending_decision_is_a_422(hostile: Hostile) -> None:
    with hostile() as http:
        base = "/apps/waiter/users/alice/sessions/s1"
        assert http.post(base, headers=ALICE).status_code == 200
        ran = http.post("/run", json=message("waiter", "alice", "s1", "ask"), headers=ALICE)
        assert ran.status_code == 200, ran.text
        (pending,) = http.get(f"{base}/pending", headers=ALICE).json()
        decision = f"{base}/pending/{pending['callId']}"
        for body in (
            {"decision": "approve", "result": {"answer": SURROGATE}},
            {"decision": "reject", "comment": SURROGATE},
        ):
            bad = _post(http, decision, body, **ALICE)
            assert bad.status_code == 422, bad.text
            assert http.get(base, headers=ALICE).status_code == 200  # still readable
        good = http.post(
            decision, json={"decision": "approve", "result": {"answer": "yes"}}, headers=ALICE
        )
        assert good.status_code == 200, good.text
        assert http.get(f"{base}/pending", headers=ALICE).json() == []
