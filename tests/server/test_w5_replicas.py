"""SPEC W5: stateless `rondo api-server` replicas on one PostgreSQL, driven over plain HTTP.

Three real server processes (the command a user runs) share the test database. A session
created on one is run on another and read on a third; two replicas running one session at the
same time never lose an update — the stale run is answered 409 and leaves nothing half-written;
a replica that cached a session sees what other replicas appended since. (One test runs two
servers in this process instead, to slow down how they free a session.)

Every test works under a user id of its own, so it never meets another test's sessions.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from rondo.sessions.sql import SqlSessionService
from tests.server._live import APPS, free_port
from tests.server.conftest import Launch

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

REPLICAS = 3


def _start(db: str, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    command = [sys.executable, "-m", "rondo.cli", "api-server", str(APPS), "--db", db]
    process = subprocess.Popen(
        [*command, "--port", str(port)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return process, f"http://127.0.0.1:{port}"


def _wait_ready(process: subprocess.Popen[str], url: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            output = process.stdout.read() if process.stdout else ""
            raise AssertionError(f"the replica at {url} did not start: {output}")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def replicas(postgres_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """The base URLs of three api-server processes on the test database."""
    cwd = tmp_path_factory.mktemp("replicas")
    started = [_start(postgres_url, cwd) for _ in range(REPLICAS)]
    try:
        for process, url in started:
            _wait_ready(process, url)
        yield [url for _, url in started]
    finally:
        for process, _ in started:
            process.terminate()
        for process, _ in started:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
            if process.stdout is not None:
                process.stdout.close()


@pytest.fixture
def user() -> str:
    return f"w5-{uuid.uuid4().hex[:12]}"


def _run_body(app: str, user: str, session_id: str, text: str) -> dict[str, Any]:
    return {
        "appName": app,
        "userId": user,
        "sessionId": session_id,
        "newMessage": {"role": "user", "parts": [{"text": text}]},
    }


def _session(url: str, app: str, user: str, session_id: str) -> dict[str, Any]:
    answer = httpx.get(f"{url}/apps/{app}/users/{user}/sessions/{session_id}", timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _create(url: str, app: str, user: str) -> str:
    answer = httpx.post(f"{url}/apps/{app}/users/{user}/sessions", timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()["id"]


def test_w5_a_session_created_on_one_replica_runs_on_another_and_reads_the_same_on_a_third(
    replicas: list[str], user: str
) -> None:
    one, two, three = replicas
    sid = _create(one, "chat", user)
    ran = httpx.post(f"{two}/run", json=_run_body("chat", user, sid, "tea"), timeout=30)
    assert ran.status_code == 200, ran.text
    answered = ran.json()
    assert answered[-1]["content"]["parts"][0]["text"] == "Stub reply: noted 'tea'"

    read = _session(three, "chat", user, sid)
    assert [e["id"] for e in read["events"]][1:] == [e["id"] for e in answered]
    assert read["events"][0]["author"] == "user"
    assert read["state"] == {"note_count": 1, "last_note": "tea"}
    # Every replica answers the same session: events, state, update time.
    for url in replicas:
        assert _session(url, "chat", user, sid) == read
    listed = httpx.get(f"{one}/apps/chat/users/{user}/sessions", timeout=10).json()
    assert [s["id"] for s in listed] == [sid]
    # A session deleted on one replica is gone for a run on another (404, not a new session).
    assert httpx.delete(f"{three}/apps/chat/users/{user}/sessions/{sid}").status_code == 200
    gone = httpx.post(f"{one}/run", json=_run_body("chat", user, sid, "more"), timeout=30)
    assert gone.status_code == 404, gone.text
    assert gone.json() == {"detail": f"Session not found: {sid}"}


def test_w5_a_replica_that_cached_a_session_sees_what_other_replicas_appended(
    replicas: list[str], user: str
) -> None:
    one, two, three = replicas
    sid = _create(one, "chat", user)
    first = httpx.post(f"{one}/run", json=_run_body("chat", user, sid, "a"), timeout=30)
    assert first.status_code == 200, first.text
    assert len(_session(one, "chat", user, sid)["events"]) == 4  # `one` holds it cached now

    for url, text in ((two, "b"), (three, "c")):
        ran = httpx.post(f"{url}/run", json=_run_body("chat", user, sid, text), timeout=30)
        assert ran.status_code == 200, ran.text

    seen = _session(one, "chat", user, sid)
    assert len(seen["events"]) == 12
    assert [e["content"]["parts"][0]["text"] for e in seen["events"][::4]] == ["a", "b", "c"]
    assert seen["state"] == {"note_count": 3, "last_note": "c"}
    assert seen == _session(three, "chat", user, sid)
    # ... and runs on from there: its handle is current, not refused as stale.
    again = httpx.post(f"{one}/run", json=_run_body("chat", user, sid, "d"), timeout=30)
    assert again.status_code == 200, again.text
    assert _session(two, "chat", user, sid)["state"] == {"note_count": 4, "last_note": "d"}


def _complete_invocations(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The stored events by invocation, each checked to be a whole `tally` run."""
    by_invocation: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_invocation.setdefault(event["invocationId"], []).append(event)
    runs = list(by_invocation.values())
    for run in runs:
        authors = [e["author"] for e in run]
        assert authors == ["user", "tally", "tally", "tally"], f"half-written run: {run}"
        assert run[-1]["content"]["parts"][0]["text"].startswith("counted ")
    # Runs never interleave: each invocation's events are contiguous in the log.
    order = [e["invocationId"] for e in events]
    assert order == [e["invocationId"] for run in runs for e in run]
    return runs


def test_w5_concurrent_runs_on_one_session_from_two_replicas_never_lose_an_update(
    replicas: list[str], user: str
) -> None:
    one, two, three = replicas
    sid = _create(three, "tally", user)
    acknowledged: list[list[dict[str, Any]]] = []
    refused: list[httpx.Response] = []
    with ThreadPoolExecutor(2) as pool:
        for round_ in range(6):
            futures = [
                pool.submit(
                    httpx.post,
                    f"{url}/run",
                    json=_run_body("tally", user, sid, f"r{round_}-{i}"),
                    timeout=30,
                )
                for i, url in enumerate((one, two))
            ]
            for answer in (f.result() for f in futures):
                if answer.status_code == 200:
                    acknowledged.append(answer.json())
                else:
                    refused.append(answer)

    assert refused, "the two runs never overlapped: the test proves nothing"
    for answer in refused:
        assert answer.status_code == 409, answer.text
        assert answer.headers["content-type"] == "application/json"
        detail = answer.json()["detail"]
        assert "another run" in detail, detail
        assert "send the message again" in detail, detail

    stored = _session(three, "tally", user, sid)
    runs = _complete_invocations(stored["events"])
    # Exactly the acknowledged runs are stored, each with every event it was answered with.
    assert len(runs) == len(acknowledged)
    stored_ids = {e["id"] for e in stored["events"]}
    for answer in acknowledged:
        assert {e["id"] for e in answer} <= stored_ids
    # No lost update: each acknowledged run counted once.
    assert stored["state"] == {"count": len(acknowledged)}
    texts = [run[-1]["content"]["parts"][0]["text"] for run in runs]
    assert texts == [f"counted {n}" for n in range(1, len(runs) + 1)]
    # The session stays usable from any replica afterwards.
    after = httpx.post(f"{one}/run", json=_run_body("tally", user, sid, "after"), timeout=30)
    assert after.status_code == 200, after.text
    assert _session(two, "tally", user, sid)["state"] == {"count": len(acknowledged) + 1}


def test_w5_a_run_frees_its_session_before_its_answer_ends(
    launch: Launch, postgres_url: str, user: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that read a whole answer may send its next message to any replica at once.

    Two servers in this process, each with a store of its own on the test database; freeing a
    claim is made slow, so a server that freed its run's session only after the response
    ended would let the client's next request in while the session was still claimed."""
    release = SqlSessionService.release_run

    async def slow_release(self: SqlSessionService, **ids: Any) -> None:
        await asyncio.sleep(0.3)
        await release(self, **ids)

    monkeypatch.setattr(SqlSessionService, "release_run", slow_release)
    with launch(db=postgres_url) as one, launch(db=postgres_url) as two:
        sid = one.post(f"/apps/chat/users/{user}/sessions").json()["id"]
        for i, (first, second) in enumerate(((one, two), (two, one))):
            body = {**_run_body("chat", user, sid, f"n{i}"), "streaming": True}
            streamed = first.post("/run_sse", json=body, timeout=30)
            assert streamed.status_code == 200, streamed.text
            assert streamed.text.count("data: ") >= 3
            ran = second.post("/run", json=_run_body("chat", user, sid, f"m{i}"), timeout=30)
            assert ran.status_code == 200, ran.text  # not 409: the claims are gone
        session = one.get(f"/apps/chat/users/{user}/sessions/{sid}").json()
        assert session["state"]["note_count"] == 4


def test_w5_a_state_change_on_another_replica_waits_for_the_run(
    replicas: list[str], user: str
) -> None:
    one, two, _ = replicas
    sid = _create(one, "tally", user)
    path = f"/apps/tally/users/{user}/sessions/{sid}"
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(
            httpx.post, f"{one}/run", json=_run_body("tally", user, sid, "slow"), timeout=30
        )
        deadline = time.monotonic() + 10
        while not _session(two, "tally", user, sid)["events"]:  # the run has begun
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.01)
        patched = httpx.patch(f"{two}{path}", json={"stateDelta": {"count": 100}}, timeout=10)
        assert patched.status_code == 409, patched.text
        assert "another run" in patched.json()["detail"]
        assert running.result().status_code == 200
    _complete_invocations(_session(two, "tally", user, sid)["events"])
    assert _session(two, "tally", user, sid)["state"] == {"count": 1}
    again = httpx.patch(f"{two}{path}", json={"stateDelta": {"count": 100}}, timeout=10)
    assert again.status_code == 200, again.text
