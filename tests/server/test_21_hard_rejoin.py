"""Issue 21.7, the hard way: two replicas on one PostgreSQL (each a server of its own: its
own journal, connection pool and event loop).

The client drops a run's stream after a given frame — a record, a lifecycle event, a token
delta — on the replica running it, and rejoins on the other replica with the last id it
read: the non-partial frames read before and after are exactly the run's, none lost, none
twice, byte for byte what the running replica streamed, in both formats. The ids and kinds
are those of an uninterrupted run of the same agent. A rewind computed from a stale read of
the session is refused while, and after, the other replica appends to it.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.server._live import APPS, serve

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

Frame = tuple[str, dict[str, Any]]
ROUTES = {"adk": "/run_sse", "lifecycle": "/run_lifecycle"}


@pytest.fixture(scope="module")
def replicas(postgres_url: str) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    from rondo.server import create_app

    with (
        serve(create_app(APPS, db=postgres_url, loopback_only=True)) as one,
        serve(create_app(APPS, db=postgres_url, loopback_only=True)) as two,
        httpx.Client(base_url=one, timeout=60) as a,
        httpx.Client(base_url=two, timeout=60) as b,
    ):
        yield a, b


def _body(app: str, user: str, sid: str, text: str, **extra: Any) -> dict[str, Any]:
    message = {"role": "user", "parts": [{"text": text}]}
    return {"appName": app, "userId": user, "sessionId": sid, "newMessage": message, **extra}


def _read(lines: Iterator[str]) -> Iterator[Frame]:
    fields: dict[str, str] = {}
    for line in lines:
        if line:
            name, _, value = line.partition(": ")
            fields[name] = value
        elif fields:
            assert set(fields) - {"event"} == {"id", "data"}, fields
            yield fields["id"], json.loads(fields["data"])
            fields = {}


def _frames(text: str) -> list[Frame]:
    return list(_read(iter(text.split("\n"))))


def _partial(frame: Frame) -> bool:
    data = frame[1]
    return bool(data.get("partial")) or data.get("type") == "reason_delta"


def _whole(frames: list[Frame]) -> list[Frame]:
    return [f for f in frames if not _partial(f)]


def _kind(frame: Frame) -> str:
    data = frame[1]
    if "type" in data:
        return str(data["type"])
    parts = (data.get("content") or {}).get("parts") or [{}]
    return ",".join(sorted(parts[0]))


def _drop_and_rejoin(
    a: httpx.Client, b: httpx.Client, user: str, fmt: str, after: int, by_header: bool
) -> tuple[list[Frame], list[Frame], list[Frame], str]:
    """Run `steps` on `a`, read `after` frames, drop; rejoin on `b`. Returns the frames
    read before, after, the run's whole stream from the replica that ran it, and the
    stream's path."""
    sid = a.post(f"/apps/steps/users/{user}/sessions").json()["id"]
    before: list[Frame] = []
    body = _body("steps", user, sid, "go", streaming=True)
    with a.stream("POST", ROUTES[fmt], json=body) as live:
        for frame in _read(live.iter_lines()):
            before.append(frame)
            if len(before) == after:
                break
    data = before[0][1]
    path = f"/apps/steps/users/{user}/sessions/{sid}/runs/{data.get('runId') or data['run_id']}"
    cursor = before[-1][0]
    if by_header:
        rest = b.get(path + "/stream", headers={"Last-Event-ID": cursor})
    else:
        rest = b.get(path + "/stream", params={"after": cursor})
    assert rest.status_code == 200, rest.text
    return before, _frames(rest.text), _frames(a.get(path + "/stream").text), path + "/stream"


@pytest.mark.parametrize(
    ("fmt", "points"),
    [
        ("adk", (1, 2, 3, 4, 5, 6, 7, 9)),  # after each record; mid-answer (a token delta)
        ("lifecycle", (1, 2, 4, 7, 10, 13, 17, 20, 23, 26, 29, 31)),
    ],
)
def test_21_7_drop_anywhere_and_rejoin_on_the_other_replica(
    replicas: tuple[httpx.Client, httpx.Client], fmt: str, points: tuple[int, ...]
) -> None:
    a, b = replicas
    user = f"h-{uuid.uuid4().hex[:8]}"
    sid = a.post(f"/apps/steps/users/{user}/sessions").json()["id"]
    uninterrupted = _frames(
        a.post(ROUTES[fmt], json=_body("steps", user, sid, "go", streaming=True)).text
    )
    shape = [(f[0], _kind(f)) for f in _whole(uninterrupted)]
    assert len(uninterrupted) > max(points)  # every drop point is mid-stream
    for n, after in enumerate(points):
        before, rest, whole, path = _drop_and_rejoin(a, b, user, fmt, after, n % 2 == 0)
        assert rest == _whole(rest), after  # the other replica sends no token deltas
        assert _whole(before) + rest == _whole(whole), after  # 0 lost, 0 twice, same bytes
        assert [(f[0], _kind(f)) for f in _whole(whole)] == shape, after
        # The other replica streams the whole run the same way, in the format it was
        # started in.
        assert _frames(b.get(path).text) == _whole(whole), after


def test_21_7_stale_rewind_under_concurrent_appends_is_refused(
    replicas: tuple[httpx.Client, httpx.Client],
) -> None:
    a, b = replicas
    user = f"h-{uuid.uuid4().hex[:8]}"
    base = f"/apps/slow/users/{user}/sessions"
    sid = a.post(base).json()["id"]
    first = a.post("/run", json=_body("slow", user, sid, "one")).json()
    invocation = first[0]["invocationId"]
    seen = int(b.get(f"{base}/{sid}").headers["ETag"].strip('"'))

    # While replica one appends (a run holds the session), replica two's rewind is refused.
    running = a.post("/run_sse", json=_body("slow", user, sid, "long one", background=True))
    run_id = running.json()["runId"]
    busy = b.post(f"{base}/{sid}/rewind", json={"invocationId": invocation})
    assert busy.status_code == 409, busy.text
    cancelled = b.post(f"{base}/{sid}/runs/{run_id}/cancel")
    assert cancelled.json()["status"] == "cancelled"

    # The session moved on since `seen`: a rewind computed from it is refused on both.
    for replica in (a, b):
        stale = replica.post(
            f"{base}/{sid}/rewind",
            json={"invocationId": invocation, "expectedVersion": seen},
        )
        assert stale.status_code == 409, stale.text
    fresh = int(a.get(f"{base}/{sid}").headers["ETag"].strip('"'))

    # Two rewinds from the same read, one per replica, at once: exactly one is applied.
    answers: list[int] = []

    def rewind(replica: httpx.Client) -> None:
        body = {"invocationId": invocation, "expectedVersion": fresh}
        answers.append(replica.post(f"{base}/{sid}/rewind", json=body).status_code)

    threads = [threading.Thread(target=rewind, args=(r,)) for r in (a, b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(answers) == [200, 409]
    after = a.get(f"{base}/{sid}")
    assert after.headers["ETag"] == f'"{fresh + 1}"'  # one rewind record, not two
    assert after.json()["events"] == []  # as before the first invocation
