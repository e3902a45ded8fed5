"""Issue 26 item 8 (SPEC W3): the probe that held stays — auth, paths, users, bodies, races.

Over real HTTP on every store: a missing or wrong token is a 401; no spelling of another
user's path (percent-encoded, doubled slashes, dot segments, case) reaches their data; a token
cannot read, run, change or delete another user's sessions, artifacts or pending calls; bodies
over the limit get 413, declared or chunked; and concurrent runs on one session never
interleave (one runs, the others get 409).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.server._attack import ALICE, BOB, Hostile, hostile, message, store
from tests.server._live import raw_request

__all__ = ["hostile", "store"]

SECRET = "bob-secret-ledger"


def _bob_session(http: httpx.Client) -> None:
    made = http.post("/apps/chat/users/bob/sessions/s1", json={"k": SECRET}, headers=BOB)
    assert made.status_code == 200, made.text
    assert (
        http.post("/run", json=message("chat", "bob", "s1", SECRET), headers=BOB).status_code == 200
    )


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer"}, {"Authorization": "Basic dG9rLWFsaWNl"},
     {"Authorization": "Bearer tok-mallory"}, {"Authorization": "Bearer tok-alice tok-bob"}],
    ids=["none", "empty", "basic", "unknown", "two"],
)  # fmt: skip
def test_w3_attack_without_a_valid_token_every_route_is_401(
    hostile: Hostile, headers: dict[str, str]
) -> None:
    with hostile() as http:
        for method, path in [
            ("GET", "/list-apps"),
            ("GET", "/apps/chat/users/bob/sessions"),
            ("POST", "/apps/chat/users/bob/sessions/s1"),
            ("POST", "/run"),
            ("POST", "/run_sse"),
            ("GET", "/dev/apps/chat/debug/trace/session/s1"),
        ]:
            answer = http.request(method, path, headers=headers, json={})
            assert answer.status_code == 401, (method, path, answer.text)
        assert http.get("/health", headers=headers).status_code == 200


PATH_VARIANTS = [
    "/apps/chat/users/bob/sessions/s1",
    "/apps/chat/users/%62ob/sessions/s1",
    "/apps/chat/users/bob%2F..%2Falice/sessions/s1",
    "//apps/chat/users/bob/sessions/s1",
    "/apps/chat/users/bob/sessions/s1/",
    "/apps/chat/users/alice/../bob/sessions/s1",
    "/apps/chat/users/./bob/sessions/s1",
    "/apps/chat/users/BOB/sessions/s1",
    "/apps/chat/users/bob%00/sessions/s1",
    "/apps/chat/users/bob/sessions/s1/artifacts",
    "/apps/chat/users/bob/sessions/s1/pending",
    "/apps/chat/users/bob/sessions",
    "/apps/%63hat/users/bob/sessions/s1",
]


def test_w3_attack_no_spelling_of_a_path_reaches_another_users_data(hostile: Hostile) -> None:
    with hostile() as http:
        _bob_session(http)
        url = str(http.base_url).rstrip("/")
        for path in PATH_VARIANTS:
            for method in ("GET", "DELETE", "PATCH"):
                status, _headers, body = raw_request(url, method, path, headers=ALICE)
                assert status >= 300, (method, path, status, body[:200])
                assert SECRET.encode() not in body, (method, path)
        # And bob's session is as he left it.
        mine = http.get("/apps/chat/users/bob/sessions/s1", headers=BOB).json()
        assert mine["state"]["k"] == SECRET
        assert len(mine["events"]) == 4


def test_w3_attack_a_token_cannot_act_as_another_user(hostile: Hostile) -> None:
    with hostile() as http:
        _bob_session(http)
        attempts: list[tuple[str, str, Any]] = [
            ("POST", "/run", message("chat", "bob", "s1", "mine now")),
            ("POST", "/run_sse", message("chat", "bob", "s1", "mine now")),
            ("POST", "/run_lifecycle", message("chat", "bob", "s1", "mine now")),
            ("PATCH", "/apps/chat/users/bob/sessions/s1", {"stateDelta": {"k": "stolen"}}),
            ("DELETE", "/apps/chat/users/bob/sessions/s1", None),
            ("POST", "/apps/chat/users/bob/sessions/s2", {}),
            ("GET", "/apps/chat/users/bob/sessions/s1/artifacts/notes.txt", None),
            ("GET", "/apps/chat/users/bob/sessions/s1/artifacts/notes.txt/versions", None),
            ("POST", "/apps/chat/users/bob/sessions/s1/pending/call-1", {"decision": "approve"}),
        ]
        for method, path, body in attempts:
            answer = http.request(method, path, json=body, headers=ALICE)
            assert answer.status_code in (403, 404), (method, path, answer.text)
            assert SECRET not in answer.text
        mine = http.get("/apps/chat/users/bob/sessions/s1", headers=BOB).json()
        assert mine["state"]["k"] == SECRET
        assert len(mine["events"]) == 4
        assert http.get("/apps/chat/users/bob/sessions/s2", headers=BOB).status_code == 404


@pytest.fixture
def small_limit(hostile: Hostile) -> Iterator[httpx.Client]:
    with hostile(max_body_bytes=2000) as http:
        yield http


def test_w3_attack_bodies_over_the_limit_get_413(small_limit: httpx.Client) -> None:
    http = small_limit
    big = message("chat", "alice", "s1", "x" * 5000)
    assert http.post("/run", json=big, headers=ALICE).status_code == 413
    url = str(http.base_url).rstrip("/")

    def chunks() -> Iterator[bytes]:
        yield b'{"appName": "chat", "userId": "alice", "sessionId": "s1", "x": "'
        for _ in range(100):
            yield b"y" * 100
        yield b'"}'

    status, _headers, body = raw_request(
        url, "POST", "/run", body=chunks(), headers={**ALICE, "Content-Type": "application/json"}
    )
    assert status == 413, body
    assert http.post("/apps/chat/users/alice/sessions/s1", headers=ALICE).status_code == 200


def test_w3_attack_concurrent_runs_on_one_session_never_interleave(hostile: Hostile) -> None:
    with hostile() as http:
        assert http.post("/apps/slow/users/alice/sessions/s1", headers=ALICE).status_code == 200
        url = str(http.base_url)

        def run(n: int) -> int:
            with httpx.Client(base_url=url, timeout=60) as client:
                body = message("slow", "alice", "s1", f"run {n}")
                return client.post("/run", json=body, headers=ALICE).status_code

        with ThreadPoolExecutor(6) as pool:
            statuses = list(pool.map(run, range(6)))
        assert set(statuses) <= {200, 409}
        assert statuses.count(200) >= 1
        events = http.get("/apps/slow/users/alice/sessions/s1", headers=ALICE).json()["events"]
    # Each run that went through is its message and its answer, side by side.
    texts = [e["content"]["parts"][0]["text"] for e in events]
    assert len(texts) == 2 * statuses.count(200)
    for asked, answered in zip(texts[::2], texts[1::2], strict=True):
        assert answered == f"done: {asked}"
