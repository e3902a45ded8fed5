"""SPEC W7 (issue 21) and issue 26 item 7: runs that outlive their connection.

Real servers on loopback (uvicorn in a thread), real HTTP clients. Frames carry ids; a client
that leaves does not stop the run (its records, a sync tool's result included, are stored);
a run is rejoined after any frame id — from the journal on the server running it, from the
log on another server — and the frames before and after add up to the run's frames, none
lost, none twice; background runs answer 202 and can be cancelled from any replica.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import pytest

from rondo.sessions.memory import InMemorySessionService
from tests.server.conftest import Launch

pytestmark = pytest.mark.integration


def _body(app: str, user: str, sid: str, text: str, **extra: Any) -> dict[str, Any]:
    message = {"role": "user", "parts": [{"text": text}]}
    return {"appName": app, "userId": user, "sessionId": sid, "newMessage": message, **extra}


def _frames(text: str) -> list[tuple[str, dict[str, Any]]]:
    """`(id, data)` of each frame of an SSE body; every frame must have an id (a lifecycle
    frame also names its type, as `rondo.lifecycle.to_sse` writes it)."""
    out: list[tuple[str, dict[str, Any]]] = []
    if not text.strip():
        return out
    for block in text.strip("\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        assert set(fields) - {"event"} == {"id", "data"}, block
        data = json.loads(fields["data"])
        assert fields.get("event", data.get("type")) == data.get("type"), block
        out.append((fields["id"], data))
    return out


def _key(frame_id: str) -> tuple[int, int]:
    n, k = frame_id.split(".")
    return int(n), int(k)


def _session(http: httpx.Client, app: str, user: str, sid: str) -> dict[str, Any]:
    answer = http.get(f"/apps/{app}/users/{user}/sessions/{sid}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def _wait_status(http: httpx.Client, path: str, *wanted: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        status = http.get(path).json()
        if status["status"] in wanted or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def test_w7_every_frame_of_the_run_routes_has_an_increasing_id(client: httpx.Client) -> None:
    client.post("/apps/steps/users/u/sessions/s")
    for route in ("/run_sse", "/run_lifecycle"):
        answer = client.post(route, json=_body("steps", "u", "s", "go", streaming=True))
        assert answer.status_code == 200
        ids = [_key(i) for i, _ in _frames(answer.text)]
        assert len(ids) >= 7
        assert ids == sorted(ids)
        assert len(set(ids)) == len(ids)


def test_w7_i26_7_a_client_that_leaves_mid_tool_loses_nothing(client: httpx.Client) -> None:
    """The run goes on without its client: each sync tool result is stored (so nothing is
    left for a resume to run again) and the run ends with its answer."""
    client.post("/apps/steps/users/u/sessions/s")
    with client.stream("POST", "/run_sse", json=_body("steps", "u", "s", "go")) as answer:
        first = next(line for line in answer.iter_lines() if line.startswith("data: "))
        run_id = json.loads(first[len("data: ") :])["runId"]
    status = _wait_status(client, f"/apps/steps/users/u/sessions/s/runs/{run_id}", "completed")
    assert status["status"] == "completed", status
    session = _session(client, "steps", "u", "s")
    assert session["state"]["steps_run"] == 3
    assert session["events"][-1]["content"]["parts"][0]["text"] == "done after 3 steps"
    answers = [
        p["functionResponse"]
        for e in session["events"]
        for p in (e.get("content") or {}).get("parts", [])
        if "functionResponse" in p
    ]
    assert [a["response"] for a in answers] == [{"step": 1}, {"step": 2}, {"step": 3}]


@pytest.mark.parametrize("route", ["/run_sse", "/run_lifecycle"])
def test_w7_rejoin_after_every_frame_gets_the_rest_exactly_once(
    client: httpx.Client, route: str
) -> None:
    client.post("/apps/steps/users/u/sessions/s")
    whole = client.post(route, json=_body("steps", "u", "s", "go", streaming=True))
    frames = _frames(whole.text)
    run_id = frames[0][1].get("runId") or frames[0][1].get("run_id")
    path = f"/apps/steps/users/u/sessions/s/runs/{run_id}/stream"
    assert _frames(client.get(path).text) == frames  # no cursor: the whole run
    for i, (frame_id, _) in enumerate(frames):
        by_header = client.get(path, headers={"Last-Event-ID": frame_id})
        assert _frames(by_header.text) == frames[i + 1 :]
        by_query = client.get(path, params={"after": frame_id})
        assert _frames(by_query.text) == frames[i + 1 :]


def test_w7_another_server_replays_the_run_from_the_log(launch: Launch) -> None:
    """A server that did not run the run streams its records from the log: the ADK frames,
    partial ones left out, with the same ids."""
    store = InMemorySessionService()
    with launch(session_service=store) as one, launch(session_service=store) as two:
        one.post("/apps/steps/users/u/sessions/s")
        whole = one.post("/run_sse", json=_body("steps", "u", "s", "go", streaming=True))
        frames = [f for f in _frames(whole.text) if not f[1].get("partial")]
        path = f"/apps/steps/users/u/sessions/s/runs/{frames[0][1]['runId']}/stream"
        assert _frames(two.get(path).text) == frames
        for i, (frame_id, _) in enumerate(frames[:-1]):
            rest = two.get(path, headers={"Last-Event-ID": frame_id})
            assert _frames(rest.text) == frames[i + 1 :]
        # A store of one process keeps no lifecycle frames for another server (PostgreSQL
        # does: test_21_lifecycle_rejoin_…), and this run never built any.
        refused = two.get(path, params={"format": "lifecycle"})
        assert refused.status_code == 400
        assert "format=adk" in refused.json()["detail"]
        here = one.get(path, params={"format": "lifecycle"})
        assert here.status_code == 400
        assert "/run_sse" in here.json()["detail"]


def test_w7_background_run_answers_202_and_streams_later(client: httpx.Client) -> None:
    client.post("/apps/steps/users/u/sessions/s")
    started = client.post("/run_sse", json=_body("steps", "u", "s", "go", background=True))
    assert started.status_code == 202, started.text
    run_id = started.json()["runId"]
    base = f"/apps/steps/users/u/sessions/s/runs/{run_id}"
    streamed = _frames(client.get(base + "/stream").text)
    assert streamed[-1][1]["content"]["parts"][0]["text"] == "done after 3 steps"
    assert _wait_status(client, base, "completed")["status"] == "completed"
    listed = client.get("/apps/steps/users/u/sessions/s/runs").json()
    assert [r["runId"] for r in listed] == [run_id]
    assert listed[0]["lastEventId"] == streamed[-1][0]


def test_w7_cancel_stops_the_run_and_answers_the_call_it_cut(client: httpx.Client) -> None:
    client.post("/apps/slow/users/u/sessions/s")
    body = _body("slow", "u", "s", "long one", background=True)
    run_id = client.post("/run_lifecycle", json=body).json()["runId"]
    base = f"/apps/slow/users/u/sessions/s/runs/{run_id}"
    assert client.get(base).json()["status"] == "running"
    # The model's call is stored once the 30 s tool runs.
    deadline = time.monotonic() + 10
    while len(_session(client, "slow", "u", "s")["events"]) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    cancelled = client.post(base + "/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    events = _session(client, "slow", "u", "s")["events"]
    answer = events[-2]["content"]["parts"][0]["functionResponse"]
    assert answer["name"] == "wait"
    assert "cancelled" in answer["response"]["error"]
    assert events[-1]["errorCode"] == "CANCELLED"
    again = client.post(base + "/cancel")
    assert again.status_code == 409
    # The session is free for the next message, whose history holds no unanswered call.
    nxt = client.post("/run", json=_body("slow", "u", "s", "next"))
    assert nxt.status_code == 200
    assert nxt.json()[-1]["content"]["parts"][0]["text"] == ("done: next")


def test_w7_multitask_reject_enqueue_and_interrupt(client: httpx.Client) -> None:
    client.post("/apps/slow/users/u/sessions/s")
    first = client.post("/run_sse", json=_body("slow", "u", "s", "long one", background=True))
    run_id = first.json()["runId"]
    refused = client.post("/run", json=_body("slow", "u", "s", "two"))
    assert refused.status_code == 409
    assert "busy" in refused.json()["detail"]
    interrupting = client.post("/run", json=_body("slow", "u", "s", "three", multitask="interrupt"))
    assert interrupting.status_code == 200, interrupting.text
    assert interrupting.json()[-1]["content"]["parts"][0]["text"] == "done: three"
    status = client.get(f"/apps/slow/users/u/sessions/s/runs/{run_id}").json()
    assert status["status"] == "cancelled"
    # enqueue: waits for a running run, then runs.
    client.post("/run_sse", json=_body("slow", "u", "s", "four", background=True))
    queued = client.post("/run", json=_body("slow", "u", "s", "five", multitask="enqueue"))
    assert queued.status_code == 200
    assert queued.json()[-1]["content"]["parts"][0]["text"] == ("done: five")
    texts = [
        e["content"]["parts"][0].get("text")
        for e in _session(client, "slow", "u", "s")["events"]
        if e["author"] == "slow" and e.get("content")
    ]
    assert texts[-2:] == ["done: four", "done: five"]


def test_w7_unknown_run_and_bad_cursor_are_4xx(client: httpx.Client) -> None:
    client.post("/apps/steps/users/u/sessions/s")
    assert client.get("/apps/steps/users/u/sessions/s/runs/nope").status_code == 404
    assert client.get("/apps/steps/users/u/sessions/s/runs/nope/stream").status_code == 404
    bad = client.get("/apps/steps/users/u/sessions/s/runs/x/stream", params={"after": "a.b"})
    assert bad.status_code == 400
    assert client.get("/apps/steps/users/u/sessions/nope/runs").status_code == 404


@pytest.mark.postgres
def test_w7_cancel_from_the_other_replica_on_postgres(launch: Launch, postgres_url: str) -> None:
    user = f"w7-{uuid.uuid4().hex[:8]}"
    with launch(db=postgres_url) as one, launch(db=postgres_url) as two:
        sid = one.post(f"/apps/slow/users/{user}/sessions").json()["id"]
        body = _body("slow", user, sid, "long one", background=True)
        run_id = one.post("/run_lifecycle", json=body).json()["runId"]
        base = f"/apps/slow/users/{user}/sessions/{sid}/runs/{run_id}"
        assert two.get(base).json()["status"] == "running"
        cancelled = two.post(base + "/cancel", timeout=60)
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled"
        assert one.get(base).json()["status"] == "cancelled"


def test_w7_a_paused_run_reads_paused_and_its_resume_stream_has_ids(
    client: httpx.Client,
) -> None:
    """The pending-answer stream carries ids too, numbered after the paused part of the run:
    one stream of the run from its start to its end, across the pause."""
    client.post("/apps/waiter/users/u/sessions/s")
    first = client.post("/run_lifecycle", json=_body("waiter", "u", "s", "ask"))
    before = _frames(first.text)
    run_id = before[0][1]["run_id"]
    base = f"/apps/waiter/users/u/sessions/s/runs/{run_id}"
    assert client.get(base).json()["status"] == "paused"
    call_id = client.get("/apps/waiter/users/u/sessions/s/pending").json()[0]["callId"]
    decided = client.post(
        f"/apps/waiter/users/u/sessions/s/pending/{call_id}",
        json={"decision": "approve", "result": {"note": "yes"}},
    )
    after = _frames(decided.text)
    assert after[0][1]["run_id"] == run_id
    ids = [_key(i) for i, _ in before + after]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert client.get(base).json()["status"] == "completed"
    assert _frames(client.get(base + "/stream").text) == before + after


def test_w7_a_store_failing_to_free_the_session_still_ends_the_stream(
    launch: Launch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Freeing the run's claim fails (the store went away): the stream still ends, the run
    reads as ended, never as running forever."""
    from rondo.server import claims

    async def broken(self: claims.SessionClaims, *args: Any, **options: Any) -> Any:
        async def release() -> None:
            raise ConnectionError("store gone")

        return release

    monkeypatch.setattr(claims.SessionClaims, "take", broken)
    with launch() as client:
        client.post("/apps/steps/users/u/sessions/s")
        answer = client.post("/run_sse", json=_body("steps", "u", "s", "go"))
        assert answer.status_code == 200
        frames = _frames(answer.text)
        assert frames[-1][1]["content"]["parts"][0]["text"] == "done after 3 steps"
        run_id = frames[0][1]["runId"]
        status = client.get(f"/apps/steps/users/u/sessions/s/runs/{run_id}").json()
        assert status["status"] == "completed"
