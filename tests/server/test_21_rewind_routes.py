"""Issue 21.5 and 21.4 over real HTTP: `…/rewind`, `…/fork`, `…/rewound`, and
`"multitask": "rollback"` on the ADK and native run routes, on every store. Another user's
session can be neither rewound, forked nor listed."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.server._attack import ALICE, BOB, Hostile, hostile, store

__all__ = ["hostile", "store"]

pytestmark = pytest.mark.integration


def _body(app: str, user: str, sid: str, text: str, **extra: Any) -> dict[str, Any]:
    message = {"role": "user", "parts": [{"text": text}]}
    return {"appName": app, "userId": user, "sessionId": sid, "newMessage": message, **extra}


def _texts(session: dict[str, Any]) -> list[str]:
    return [
        p["text"]
        for e in session["events"]
        for p in (e.get("content") or {}).get("parts", [])
        if p.get("text")
    ]


def _base(user: str, sid: str) -> str:
    return f"/apps/slow/users/{user}/sessions/{sid}"


def _two_turns(http: httpx.Client, headers: dict[str, str], user: str, sid: str) -> str:
    made = http.post(_base(user, sid), json={"mood": "calm"}, headers=headers)
    assert made.status_code == 200, made.text
    for text in ("one", "two"):
        answer = http.post("/run", json=_body("slow", user, sid, text), headers=headers)
        assert answer.status_code == 200, answer.text
    events = http.get(_base(user, sid), headers=headers).json()["events"]
    return next(e["invocationId"] for e in events if e["content"]["parts"][0]["text"] == "two")


def test_21_rewind_route_reads_as_before_and_next_message_runs(hostile: Hostile) -> None:
    with hostile() as http:
        invocation = _two_turns(http, BOB, "bob", "s")
        base = _base("bob", "s")
        rewound = http.post(base + "/rewind", json={"invocationId": invocation}, headers=BOB)
        assert rewound.status_code == 200, rewound.text
        assert _texts(rewound.json()) == ["one", "done: one"]
        assert rewound.json()["state"] == {"mood": "calm"}
        audit = http.get(base + "/rewound", headers=BOB).json()
        assert [e["id"] for e in audit][-1] == rewound.json()["rewindEventId"]
        assert [p["text"] for e in audit[:-1] for p in e["content"]["parts"]] == [
            "two",
            "done: two",
        ]
        answer = http.post("/run", json=_body("slow", "bob", "s", "three"), headers=BOB)
        assert answer.status_code == 200
        got = http.get(base, headers=BOB).json()
        assert _texts(got) == ["one", "done: one", "three", "done: three"]


def test_21_rewind_route_refuses_unknown_stale_and_busy(hostile: Hostile) -> None:
    with hostile() as http:
        invocation = _two_turns(http, BOB, "bob", "s")
        base = _base("bob", "s")
        unknown = http.post(base + "/rewind", json={"invocationId": "nope"}, headers=BOB)
        assert unknown.status_code == 404
        assert "nope" in unknown.json()["detail"]
        stale = http.post(
            base + "/rewind", json={"invocationId": invocation, "expectedVersion": 1}, headers=BOB
        )
        assert stale.status_code == 409
        assert "version" in stale.json()["detail"]
        assert http.post(base + "/rewind", json={}, headers=BOB).status_code in (400, 422)
        missing = http.post(
            _base("bob", "nope") + "/rewind", json={"invocationId": invocation}, headers=BOB
        )
        assert missing.status_code == 404
        # A run going on holds the session: the rewind is refused, not interleaved.
        started = http.post(
            "/run_sse", json=_body("slow", "bob", "s", "long one", background=True), headers=BOB
        )
        assert started.status_code == 202
        busy = http.post(base + "/rewind", json={"invocationId": invocation}, headers=BOB)
        assert busy.status_code == 409
        cancel = http.post(f"{base}/runs/{started.json()['runId']}/cancel", headers=BOB)
        assert cancel.status_code == 200


def test_21_fork_route_copies_history_and_leaves_the_original(hostile: Hostile) -> None:
    with hostile() as http:
        invocation = _two_turns(http, BOB, "bob", "s")
        base = _base("bob", "s")
        original = http.get(base, headers=BOB).json()
        forked = http.post(
            base + "/fork", json={"invocationId": invocation, "sessionId": "s-f"}, headers=BOB
        )
        assert forked.status_code == 201, forked.text
        assert forked.json()["id"] == "s-f"
        assert _texts(forked.json()) == ["one", "done: one"]
        assert forked.json()["state"] == {"mood": "calm"}
        whole = http.post(base + "/fork", json={}, headers=BOB)
        assert whole.status_code == 201
        assert _texts(whole.json()) == _texts(original)
        assert http.get(base, headers=BOB).json() == original
        again = http.post(base + "/fork", json={"sessionId": "s-f"}, headers=BOB)
        assert again.status_code == 409
        unknown = http.post(base + "/fork", json={"invocationId": "nope"}, headers=BOB)
        assert unknown.status_code == 404
        # The fork runs on its own.
        answer = http.post("/run", json=_body("slow", "bob", "s-f", "other"), headers=BOB)
        assert answer.status_code == 200
        assert _texts(http.get(_base("bob", "s-f"), headers=BOB).json())[-1] == "done: other"
        assert http.get(base, headers=BOB).json() == original


def test_21_another_user_cannot_rewind_fork_or_list(hostile: Hostile) -> None:
    with hostile() as http:
        invocation = _two_turns(http, BOB, "bob", "s")
        before = http.get(_base("bob", "s"), headers=BOB).json()
        for path, body in (
            ("/rewind", {"invocationId": invocation}),
            ("/fork", {"invocationId": invocation, "sessionId": "stolen"}),
        ):
            # Bob's path with Alice's token: 403; Alice's own path: no such session.
            assert http.post(_base("bob", "s") + path, json=body, headers=ALICE).status_code == 403
            own = http.post(_base("alice", "s") + path, json=body, headers=ALICE)
            assert own.status_code == 404
        assert http.get(_base("bob", "s") + "/rewound", headers=ALICE).status_code == 403
        assert http.get(_base("alice", "s") + "/rewound", headers=ALICE).status_code == 404
        assert http.get(_base("bob", "s"), headers=BOB).json() == before
        assert http.get(_base("alice", "stolen"), headers=ALICE).status_code == 404


@pytest.mark.parametrize("route", ["/run", "/run_sse", "/run_lifecycle"])
def test_21_multitask_rollback_stops_and_rewinds_the_running_run(
    hostile: Hostile, route: str
) -> None:
    with hostile() as http:
        base = _base("bob", "s")
        http.post(base, headers=BOB)
        http.post("/run", json=_body("slow", "bob", "s", "one"), headers=BOB)
        started = http.post(
            "/run_sse", json=_body("slow", "bob", "s", "long one", background=True), headers=BOB
        )
        run_id = started.json()["runId"]
        deadline = time.monotonic() + 20  # wait until the long run has stored its call
        while len(http.get(base, headers=BOB).json()["events"]) < 4:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        body = _body("slow", "bob", "s", "instead", multitask="rollback", streaming=False)
        answer = http.post(route, json=body, headers=BOB, timeout=60)
        assert answer.status_code == 200, answer.text
        session = http.get(base, headers=BOB).json()
        assert _texts(session) == ["one", "done: one", "instead", "done: instead"]
        assert all(e.get("runId") != run_id for e in session["events"])
        audit = http.get(base + "/rewound", headers=BOB).json()
        cut = [e for e in audit if e.get("runId") == run_id]
        assert cut[0]["content"]["parts"][0]["text"] == "long one"
        assert cut[-1]["errorCode"] == "CANCELLED"  # the stop was recorded, then rewound
        # The rolled-back run still answers: it ended, cancelled (not 404, not running).
        status = http.get(base + f"/runs/{run_id}", headers=BOB)
        assert status.status_code == 200, status.text
        assert status.json()["status"] == "cancelled"
        assert status.json()["rewound"] is True
        assert status.json()["lastEventId"] is not None
        assert http.get(base + "/runs/no-such-run", headers=BOB).status_code == 404


def test_21_rewind_route_artifacts_read_at_their_earlier_version(hostile: Hostile) -> None:
    with hostile() as http:
        base = "/apps/files/users/bob/sessions/s"
        http.post(base, headers=BOB)
        for text in ("first note", "second note"):
            answer = http.post("/run", json=_body("files", "bob", "s", text), headers=BOB)
            assert answer.status_code == 200, answer.text
        assert http.get(base + "/artifacts/notes.txt", headers=BOB).json()["text"] == "second note"
        events = http.get(base, headers=BOB).json()["events"]
        second = events[len(events) // 2]["invocationId"]
        assert events[len(events) // 2]["content"]["parts"][0]["text"] == "second note"
        rewound = http.post(base + "/rewind", json={"invocationId": second}, headers=BOB)
        assert rewound.status_code == 200
        latest = http.get(base + "/artifacts/notes.txt", headers=BOB)
        assert latest.json()["text"] == "first note"
        # Nothing deleted: the rewound version stays readable by its number.
        kept = http.get(base + "/artifacts/notes.txt/versions/1", headers=BOB)
        assert kept.json()["text"] == "second note"
        first = http.post(
            base + "/rewind", json={"invocationId": events[0]["invocationId"]}, headers=BOB
        )
        assert first.status_code == 200
        assert http.get(base + "/artifacts/notes.txt", headers=BOB).status_code == 404
        assert http.get(base + "/artifacts", headers=BOB).json() == []
