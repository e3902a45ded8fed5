"""SPEC W3: safe by default. Each test tries the attack it names."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from tests.server._live import raw_request, sse_events
from tests.server.conftest import Launch

TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}
ALICE = {"Authorization": "Bearer tok-alice"}
BOB = {"Authorization": "Bearer tok-bob"}


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def _run(app: str, user: str, session: str, text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {
        "appName": app,
        "userId": user,
        "sessionId": session,
        "newMessage": _message(text),
        **extra,
    }


# -- binding and tokens -------------------------------------------------------------------


def test_w3_a_non_loopback_bind_without_tokens_refuses_to_start(tmp_path: Path) -> None:
    from rondo.cli.app import app

    result = CliRunner().invoke(app, ["api-server", str(tmp_path), "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "refusing to serve 0.0.0.0 without authentication" in result.output
    assert "--auth-tokens" in result.output


def test_w3_binds_that_may_start() -> None:
    from rondo.apps import CliError
    from rondo.cli.serve import check_bind

    for loopback in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        check_bind(loopback, None, False)
    check_bind("0.0.0.0", "tokens.json", False)
    check_bind("0.0.0.0", None, True)
    with pytest.raises(CliError):
        check_bind("192.168.1.10", None, False)


def test_w3_a_tokens_file_must_map_tokens_to_user_ids(tmp_path: Path) -> None:
    from rondo.errors import ConfigurationError
    from rondo.server import load_tokens

    good = tmp_path / "tokens.json"
    good.write_text(json.dumps(TOKENS))
    assert load_tokens(good).user_for("tok-bob") == "bob"
    assert load_tokens(good).user_for("tok-carol") is None
    for bad in ("[]", "{}", '{"t": 1}', '{"t": ""}', "not json"):
        (tmp_path / "bad.json").write_text(bad)
        with pytest.raises(ConfigurationError, match="tokens file"):
            load_tokens(tmp_path / "bad.json")
    with pytest.raises(ConfigurationError, match="cannot read"):
        load_tokens(tmp_path / "missing.json")


def test_w3_loopback_without_tokens_needs_no_auth(client: httpx.Client) -> None:
    assert client.get("/list-apps").status_code == 200
    assert client.post("/apps/chat/users/anyone/sessions").status_code == 200


def test_w3_every_request_needs_a_valid_token(launch: Launch) -> None:
    with launch(auth_tokens=TOKENS) as http:
        for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "tok-alice"}):
            for method, path in (
                ("GET", "/list-apps"),
                ("GET", "/version"),
                ("GET", "/apps/chat/users/alice/sessions"),
                ("POST", "/run"),
                ("POST", "/run_lifecycle"),
            ):
                answer = http.request(method, path, headers=headers, json={})
                assert answer.status_code == 401, (method, path, headers)
                assert answer.headers["www-authenticate"] == "Bearer"
                assert isinstance(answer.json()["detail"], str)
        assert http.get("/health").status_code == 200  # for load balancers
        assert http.get("/list-apps", headers=ALICE).status_code == 200


def test_w3_cross_user_access_is_refused(launch: Launch) -> None:
    with launch(auth_tokens=TOKENS) as http:
        bob_session = http.post(
            "/apps/chat/users/bob/sessions", json={"state": {"secret": 42}}, headers=BOB
        ).json()["id"]
        assert http.post("/run", json=_run("chat", "bob", bob_session), headers=BOB).is_success
        bob = f"/apps/chat/users/bob/sessions/{bob_session}"
        http.post(
            f"{bob}/artifacts", json={"filename": "f.txt", "artifact": {"text": "b"}}, headers=BOB
        )
        attempts = [
            ("GET", "/apps/chat/users/bob/sessions", None),
            ("POST", "/apps/chat/users/bob/sessions", {}),
            ("GET", bob, None),
            ("POST", "/apps/chat/users/bob/sessions/new-one", {}),
            ("PATCH", bob, {"stateDelta": {"secret": 0}}),
            ("DELETE", bob, None),
            ("GET", f"{bob}/artifacts", None),
            ("POST", f"{bob}/artifacts", {"filename": "x", "artifact": {"text": "x"}}),
            ("GET", f"{bob}/artifacts/f.txt", None),
            ("GET", f"{bob}/artifacts/f.txt/versions", None),
            ("GET", f"{bob}/artifacts/f.txt/versions/0", None),
            ("DELETE", f"{bob}/artifacts/f.txt", None),
            ("GET", f"{bob}/pending", None),
            ("GET", f"{bob}/usage", None),
            ("POST", f"{bob}/pending/some-call", {"decision": "approve"}),
            ("POST", "/run", _run("chat", "bob", bob_session)),
            ("POST", "/run_sse", _run("chat", "bob", bob_session)),
            ("POST", "/run_lifecycle", _run("chat", "bob", bob_session)),
        ]
        for method, path, body in attempts:
            answer = http.request(method, path, json=body, headers=ALICE)
            assert answer.status_code == 403, (method, path, answer.text)
            assert "another user" in answer.json()["detail"]
        # Alice's own paths never reach Bob's session, even with its id.
        mine = f"/apps/chat/users/alice/sessions/{bob_session}"
        assert http.get(mine, headers=ALICE).status_code == 404
        assert http.get(f"{mine}/usage", headers=ALICE).status_code == 404
        assert http.get(f"{mine}/artifacts/f.txt", headers=ALICE).status_code == 404
        assert http.get("/apps/chat/users/alice/sessions", headers=ALICE).json() == []
        # Bob's data is as he left it.
        session = http.get(bob, headers=BOB).json()
        assert session["state"]["secret"] == 42
        assert len(session["events"]) == 4
        assert http.get(f"{bob}/artifacts", headers=BOB).json() == ["f.txt"]


def test_w3_a_user_may_not_write_the_state_every_user_shares(launch: Launch) -> None:
    with launch(auth_tokens=TOKENS) as http:
        attempts = [
            ("POST", "/apps/chat/users/alice/sessions", {"state": {"app:motd": "pwned"}}),
            ("POST", "/apps/chat/users/alice/sessions/s2", {"app:motd": "pwned"}),
        ]
        http.post("/apps/chat/users/alice/sessions/s", headers=ALICE)
        attempts += [
            ("PATCH", "/apps/chat/users/alice/sessions/s", {"stateDelta": {"app:motd": "x"}}),
            ("POST", "/run", _run("chat", "alice", "s", stateDelta={"app:motd": "x"})),
            ("POST", "/run_lifecycle", _run("chat", "alice", "s", stateDelta={"app:motd": "x"})),
        ]
        for method, path, body in attempts:
            answer = http.request(method, path, json=body, headers=ALICE)
            assert answer.status_code == 403, (method, path, answer.text)
            assert "app:motd" in answer.json()["detail"]
        # Her own `user:` and session keys are hers to write.
        mine = http.patch(
            "/apps/chat/users/alice/sessions/s",
            json={"stateDelta": {"user:theme": "dark", "draft": 1}},
            headers=ALICE,
        )
        assert mine.status_code == 200
        bob = http.post("/apps/chat/users/bob/sessions", headers=BOB).json()
        assert "app:motd" not in bob["state"]
        assert "user:theme" not in bob["state"]


# -- browsers -----------------------------------------------------------------------------


def test_w3_cors_is_off_unless_an_origin_is_allowed(launch: Launch) -> None:
    preflight = {
        "Origin": "http://localhost:4200",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    with launch() as http:
        answer = http.options("/run_sse", headers=preflight)
        assert "access-control-allow-origin" not in answer.headers
        simple = http.get("/list-apps", headers={"Origin": "http://localhost:4200"})
        assert "access-control-allow-origin" not in simple.headers
        # Without CORS a page elsewhere must not even *start* a run (CORS only hides answers).
        foreign = http.post(
            "/apps/chat/users/u/sessions", headers={"Origin": "http://evil.example"}
        )
        assert foreign.status_code == 403
        assert "--allow-origin" in foreign.json()["detail"]
    with launch(allow_origins=["http://localhost:4200"]) as http:
        answer = http.options("/run_sse", headers=preflight)
        assert answer.status_code == 200
        assert answer.headers["access-control-allow-origin"] == "http://localhost:4200"
        allowed = http.post(
            "/apps/chat/users/u/sessions", headers={"Origin": "http://localhost:4200"}
        )
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "http://localhost:4200"
        other = http.options("/run_sse", headers={**preflight, "Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in other.headers


def test_w3_dns_rebinding_host_is_refused_on_loopback(client: httpx.Client) -> None:
    answer = client.get("/list-apps", headers={"Host": "attacker.example:8000"})
    assert answer.status_code == 403
    assert "loopback" in answer.json()["detail"]
    for host in ("localhost:1234", "127.0.0.1", "[::1]:80"):
        assert client.get("/list-apps", headers={"Host": host}).status_code == 200


# -- bodies -------------------------------------------------------------------------------


def test_w3_bodies_over_the_limit_get_413(launch: Launch) -> None:
    big = json.dumps(_run("chat", "u", "s", "x" * 5000)).encode()
    with launch(max_body_bytes=1000) as http:
        url = str(http.base_url)
        status, _, body = raw_request(
            url, "POST", "/run", body=big, headers={"Content-Type": "application/json"}
        )
        assert status == 413
        assert "1000 bytes" in json.loads(body)["detail"]

        def chunks() -> Iterator[bytes]:
            for i in range(0, len(big), 300):
                yield big[i : i + 300]

        status, _, body = raw_request(
            url, "POST", "/run", body=chunks(), headers={"Content-Type": "application/json"}
        )
        assert status == 413
        assert "too large" in json.loads(body)["detail"]
        small = http.post("/apps/chat/users/u/sessions", json={"state": {"k": 1}})
        assert small.status_code == 200


def test_w3_bad_json_is_422_in_fastapis_shape(client: httpx.Client) -> None:
    bad = client.post("/run", content=b"{nope", headers={"content-type": "application/json"})
    assert bad.status_code == 422
    detail = bad.json()["detail"]
    assert detail[0]["type"] == "json_invalid"
    missing = client.post("/run_lifecycle", json={"appName": "chat"})
    assert missing.status_code == 422
    assert {tuple(d["loc"]) for d in missing.json()["detail"]} == {
        ("body", "userId"),
        ("body", "sessionId"),
    }
    unknown_part = client.post(
        "/run",
        json={**_run("chat", "u", "s"), "newMessage": {"parts": [{"txt": "typo"}]}},
    )
    assert unknown_part.status_code == 422
    assert unknown_part.json()["detail"][0]["loc"] == ["body", "newMessage", "parts", 0, "txt"]
    bad_bytes = client.post(
        "/run",
        json={
            **_run("chat", "u", "s"),
            "newMessage": {"parts": [{"inlineData": {"mimeType": "image/png", "data": "@@"}}]},
        },
    )
    assert bad_bytes.status_code == 422
    assert "base64" in bad_bytes.json()["detail"][0]["msg"]


def test_w3_unknown_app_or_session_is_404_with_a_detail(client: httpx.Client) -> None:
    for method, path, body in (
        ("POST", "/run", _run("nope", "u", "s")),
        ("POST", "/run_sse", _run("nope", "u", "s")),
        ("POST", "/run_lifecycle", _run("nope", "u", "s")),
        ("GET", "/apps/nope/users/u/sessions", None),
        ("POST", "/apps/nope/users/u/sessions", None),
        ("POST", "/apps/..%2F..%2Fetc/users/u/sessions", None),
        ("POST", "/run", _run("chat", "u", "missing")),
        ("POST", "/run_sse", _run("chat", "u", "missing")),
        ("GET", "/apps/chat/users/u/sessions/missing", None),
        ("GET", "/apps/chat/users/u/sessions/missing/pending", None),
        ("GET", "/apps/chat/users/u/sessions/missing/artifacts", None),
    ):
        answer = client.request(method, path, json=body)
        assert answer.status_code == 404, (method, path, answer.text)
        assert isinstance(answer.json()["detail"], str)
        assert answer.json()["detail"]


# -- artifact names -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "..",
        "../x",
        "a/../../x",
        "%2e%2e/x",
        "%2E%2E%2Fx",
        "%2Fetc%2Fpasswd",
        "a%5C..%5Cb",
        "a%00b",
        "..%5Cx",
    ],
)
def test_w3_artifact_names_cannot_escape_their_session(
    launch: Launch, tmp_path: Path, name: str
) -> None:
    from rondo.artifacts.filesystem import FileArtifactService

    root = tmp_path / "artifacts"
    with launch(artifact_service=FileArtifactService(root)) as http:
        http.post("/apps/chat/users/u/sessions/s")
        url = str(http.base_url)
        base = "/apps/chat/users/u/sessions/s/artifacts/"
        for method in ("GET", "DELETE"):
            status, _, body = raw_request(url, method, base + name)
            assert 400 <= status < 500, (method, name, status, body)
            assert b"Traceback" not in body
        for path in ("/versions", "/versions/0"):
            status, _, _ = raw_request(url, "GET", base + name + path)
            assert 400 <= status < 500
    assert not root.exists() or all(p.is_relative_to(root) for p in root.rglob("*"))


def test_w3_saving_an_artifact_under_an_escaping_name_is_refused(
    launch: Launch, tmp_path: Path
) -> None:
    from rondo.artifacts.filesystem import FileArtifactService

    root = tmp_path / "store" / "artifacts"
    with launch(artifact_service=FileArtifactService(root)) as http:
        http.post("/apps/chat/users/u/sessions/s")
        for name in ("../x", "../../../../tmp/x", "/etc/passwd", "a\\b", "x\x00y", "", "a//b"):
            answer = http.post(
                "/apps/chat/users/u/sessions/s/artifacts",
                json={"filename": name, "artifact": {"text": "pwned"}},
            )
            assert answer.status_code == 400, (name, answer.text)
            assert "artifact name" in answer.json()["detail"]
        ok = http.post(
            "/apps/chat/users/u/sessions/s/artifacts",
            json={"filename": "reports/q1.txt", "artifact": {"text": "fine"}},
        )
        assert ok.json()["version"] == 0
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written
    assert all(p.is_relative_to(root) for p in written)


# -- failures -----------------------------------------------------------------------------


def test_w3_a_run_failing_mid_stream_ends_with_an_error_event(client: httpx.Client) -> None:
    client.post("/apps/flaky/users/u/sessions/s")
    answer = client.post("/run_sse", json=_run("flaky", "u", "s", streaming=True))
    assert answer.status_code == 200
    events = sse_events(answer.text)
    assert events[0]["partial"] is True
    last = events[-1]
    assert set(last) == {"error", "error_details"}
    assert last["error"].startswith("OSError:")
    assert last["error_details"]["error_type"] == "OSError"
    assert "/secret/path" not in answer.text  # the message stays in the server log
    lifecycle = client.post("/run_lifecycle", json=_run("flaky", "u", "s"))
    events = sse_events(lifecycle.text)
    assert events[0]["type"] == "run_start"
    assert events[-1]["type"] == "error"
    assert "/secret/path" not in lifecycle.text


def test_23_a_failed_run_stores_an_error_record(client: httpx.Client) -> None:
    """Issue 23 (5): a run whose model fails leaves a record with `errorCode` and
    `errorMessage`, so a reloaded conversation shows the failure with its message."""
    client.post("/apps/flaky/users/u/sessions/s")
    answer = client.post("/run_sse", json=_run("flaky", "u", "s", streaming=True))
    frame = sse_events(answer.text)[-1]
    session = client.get("/apps/flaky/users/u/sessions/s").json()
    last = session["events"][-1]
    assert last["errorCode"] == "OSError"
    assert frame["error"].startswith("OSError")
    # The model's text names a secret path: only the type is kept, as the stream says it.
    assert "OSError" in last["errorMessage"]
    assert "/secret/path" not in json.dumps(session)
    assert last["author"] == "flaky"
    assert last["invocationId"] == session["events"][0]["invocationId"]


def test_w3_no_traceback_ever_reaches_a_client(client: httpx.Client) -> None:
    client.post("/apps/flaky/users/u/sessions/s")
    failed = client.post("/run", json=_run("flaky", "u", "s"))
    assert failed.status_code == 500
    assert failed.json() == {
        "detail": "OSError: internal server error; the server log has the details"
    }
    broken = client.post("/run", json=_run("broken", "u", "s"))
    assert broken.status_code == 500
    assert "broken on purpose" in broken.json()["detail"]  # the app's own error, one line
    for answer in (failed, broken):
        assert "Traceback" not in answer.text
        assert 'File "' not in answer.text
    # The other apps are unaffected by the broken one.
    assert client.post("/apps/chat/users/u/sessions").status_code == 200
    assert "broken" in client.get("/list-apps").json()


# -- concurrency --------------------------------------------------------------------------


def test_w3_two_runs_on_one_session_give_one_409(client: httpx.Client) -> None:
    client.post("/apps/slow/users/u/sessions/s")
    answers: list[httpx.Response] = []

    def send(text: str) -> None:
        answers.append(client.post("/run", json=_run("slow", "u", "s", text)))

    threads = [threading.Thread(target=send, args=(t,)) for t in ("one", "two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(a.status_code for a in answers) == [200, 409]
    refused = next(a for a in answers if a.status_code == 409)
    assert "busy" in refused.json()["detail"]
    events = client.get("/apps/slow/users/u/sessions/s").json()["events"]
    assert [e["author"] for e in events] == ["user", "slow"]  # one whole run, nothing else
    # Once the run is over the session takes the next one.
    assert client.post("/run", json=_run("slow", "u", "s", "three")).status_code == 200


def test_w3_a_client_that_goes_away_frees_its_session(client: httpx.Client) -> None:
    client.post("/apps/slow/users/u/sessions/s")
    body = {**_run("slow", "u", "s", "long one"), "onDisconnect": "cancel"}
    with client.stream("POST", "/run_sse", json=body) as answer:
        assert answer.status_code == 200
        first = next(line for line in answer.iter_lines() if line.startswith("data: "))
        assert '"functionCall"' in first
        # Leave while the 30 s tool runs: the run was asked to stop then (SPEC W7), so the
        # server ends it and frees the session.
    deadline = time.monotonic() + 5
    while True:
        again = client.post("/run", json=_run("slow", "u", "s", "second"))
        if again.status_code != 409 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert again.status_code == 200, again.text
    assert again.json()[-1]["content"]["parts"][0]["text"] == "done: second"


def test_w3_two_servers_on_one_store_never_interleave_a_session(launch: Launch) -> None:
    from rondo.sessions.memory import InMemorySessionService

    store = InMemorySessionService()
    with launch(session_service=store) as one, launch(session_service=store) as two:
        one.post("/apps/slow/users/u/sessions/s")
        answers: list[httpx.Response] = []
        threads = [
            threading.Thread(
                target=lambda c=c, t=t: answers.append(
                    c.post("/run_sse", json=_run("slow", "u", "s", t))
                )
            )
            for c, t in ((one, "one"), (two, "two"))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        outcomes: list[str] = []
        for answer in answers:
            if answer.status_code == 409:
                outcomes.append("409")
                continue
            last = sse_events(answer.text)[-1]
            outcomes.append("error" if "error" in last else "ok")
        assert sorted(outcomes) in (["409", "ok"], ["error", "ok"])
        failed = answers[outcomes.index("error" if "error" in outcomes else "409")]
        assert (
            "StaleSessionError" in failed.text or "busy" in failed.text or failed.status_code == 409
        )


def test_w3_malformed_ids_and_bad_state_get_4xx_not_500(client: httpx.Client) -> None:
    """An id the store refuses (G3/R4: InvalidIdError) is a 400; a state value that is not
    JSON is a 422; either way a detail the client can act on, never a 500."""
    long_id = "s" * 200
    for method, path, body, status in (
        ("POST", f"/apps/chat/users/u/sessions/{long_id}", None, 400),
        ("GET", f"/apps/chat/users/u/sessions/{long_id}", None, 400),
        ("POST", "/apps/chat/users/u/sessions/a%20b", None, 400),
        ("POST", "/run", _run("chat", "u", "bad id!"), 400),
        ("POST", "/apps/chat/users/u/sessions", {"state": {"x": float("inf")}}, 422),
    ):
        content = json.dumps(body, allow_nan=True) if body is not None else None
        answer = client.request(
            method, path, content=content, headers={"content-type": "application/json"}
        )
        assert answer.status_code == status, (method, path, answer.text)
        detail = answer.json()["detail"]
        assert isinstance(detail, str)
        assert "Error" in detail or "invalid" in detail.lower(), detail
