"""Issue 21.7 and SPEC D1: SIGKILL the replica running the runs — two real `rondo api-server`
processes on one PostgreSQL, with a short claim lease (`--claim-ttl`).

The background run is resumed by the surviving replica once the dead one's claim lapses: the
same run id, no model call repeated, the call in flight sent again under its call id; its
lifecycle stream is rejoined on the survivor from the last frame read on the dead replica, in
order, nothing twice, through the resumed part to its end. The run that asked to stop with
its client (`onDisconnect: "cancel"`) is not resumed: it reads `failed` once the lease
lapses — never `running` forever — and its session takes the next message.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server._live import APPS, free_port, wait_for_health

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

LEASE = 3  # seconds: renewed every second, a stall of two is tolerated
Frame = tuple[str, dict[str, Any]]


def _replica(db: str, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    """`rondo api-server` in a process of its own (the command a user runs)."""
    port = free_port()
    command = [sys.executable, "-m", "rondo.cli", "api-server", str(APPS), "--db", db]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--claim-ttl", str(LEASE), "--log-level", "warning"],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, process)
    except BaseException:
        process.kill()
        raise
    return process, url


def _body(app: str, user: str, sid: str, text: str, **extra: Any) -> dict[str, Any]:
    message = {"role": "user", "parts": [{"text": text}]}
    return {"appName": app, "userId": user, "sessionId": sid, "newMessage": message, **extra}


def _read(lines: Iterator[str]) -> Iterator[Frame]:
    """`(id, data)` of the frames of an SSE stream, as they arrive."""
    fields: dict[str, str] = {}
    for line in lines:
        if line:
            name, _, value = line.partition(": ")
            fields[name] = value
            continue
        if fields:
            yield fields["id"], json.loads(fields["data"])
            fields = {}


def _frames(text: str) -> list[Frame]:
    return list(_read(iter(text.split("\n"))))


def _key(frame_id: str) -> tuple[int, int]:
    n, k = frame_id.split(".")
    return int(n), int(k)


def _status(http: httpx.Client, path: str, *until: str, seconds: float) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        found = http.get(path).json()
        if found["status"] in until or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_21_7_a_killed_replicas_runs_resume_elsewhere_or_end_failed(
    postgres_url: str, tmp_path: Path
) -> None:
    user = f"d1-{uuid.uuid4().hex[:8]}"
    doomed, one = _replica(postgres_url, tmp_path)
    survivor, two = _replica(postgres_url, tmp_path)
    try:
        with (
            httpx.Client(base_url=one, timeout=30) as a,
            httpx.Client(base_url=two, timeout=30) as b,
        ):
            sessions = f"/apps/patient/users/{user}/sessions"
            sid = a.post(sessions).json()["id"]
            body = _body("patient", user, sid, "job", background=True)
            run_id = a.post("/run_lifecycle", json=body).json()["runId"]
            path = f"{sessions}/{sid}/runs/{run_id}"
            before: list[Frame] = []
            with a.stream("GET", path + "/stream") as live:  # until its tool runs
                for frame in _read(live.iter_lines()):
                    before.append(frame)
                    if frame[1]["type"] == "tool_call_start":
                        break
            # Kept for the other replica before the kill (its writer may lag a moment).
            deadline = time.monotonic() + 10
            kept = b.get(path).json()
            while _key(kept["lastEventId"]) < _key(before[-1][0]):
                assert time.monotonic() < deadline, kept
                time.sleep(0.05)
                kept = b.get(path).json()
            assert kept["status"] == "running"
            assert kept["format"] == "lifecycle"

            # A run that stops with its client, on the same replica, cut by the kill too.
            slow = f"/apps/slow/users/{user}/sessions"
            sid2 = a.post(slow).json()["id"]
            cancel = _body("slow", user, sid2, "long one", onDisconnect="cancel")
            with a.stream("POST", "/run_sse", json=cancel) as attached:
                run2 = next(_read(attached.iter_lines()))[1]["runId"]
                doomed.send_signal(signal.SIGKILL)
                doomed.wait(10)

            # The background run: resumed by the survivor, to its end.
            done = _status(b, path, "completed", "failed", seconds=LEASE + 30)
            assert done["status"] == "completed", done
            events = b.get(f"{sessions}/{sid}").json()["events"]
            assert {e["runId"] for e in events} == {run_id}
            calls = [
                p["functionCall"]
                for e in events
                for p in (e.get("content") or {}).get("parts", [])
                if "functionCall" in p
            ]
            assert len(calls) == 1  # the model's call was not made again
            answer = events[-1]["content"]["parts"][0]["text"]
            assert calls[0]["id"] in answer  # the tool ran (again) under the same call id
            assert len(events) == 4  # the message, the call, its result, the answer

            # Its lifecycle stream, rejoined on the survivor after the last frame read.
            rest = _frames(b.get(path + "/stream", headers={"Last-Event-ID": before[-1][0]}).text)
            ids = [_key(i) for i, _ in before + rest]
            assert ids == sorted(set(ids))
            resumed = [d for _, d in rest if d["type"] == "run_start"]
            assert [d["resumed"] for d in resumed] == [True]
            assert rest[-1][1]["type"] == "run_end"
            assert rest[-1][1]["text"] == answer
            whole = _frames(b.get(path + "/stream").text)
            assert whole[: len(before)] == [f for f in before if f[1]["type"] != "reason_delta"]
            assert whole[len(before) :] == rest

            # The run that was to stop with its client: failed once the lease lapsed.
            path2 = f"{slow}/{sid2}/runs/{run2}"
            ended = _status(b, path2, "failed", "completed", "cancelled", seconds=LEASE + 30)
            assert ended["status"] == "failed", ended
            nxt = b.post("/run", json=_body("slow", user, sid2, "next"))
            assert nxt.status_code == 200, nxt.text
    finally:
        for process in (doomed, survivor):
            if process.poll() is None:
                process.terminate()
                process.wait(10)
