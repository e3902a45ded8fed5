"""Issue 24 item 4 (rondo side): add a session as an eval case, run the set, read the result
(ADK's shape and rondo's report with tokens and dollars), list the metrics."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests._require import require_module
from tests.server._live import APPS, serve

require_module("rouge_score", what="EVAL", install="pip install 'rondo-agents[eval]'")

_E = "/dev/apps/chat"
_METRICS = [
    {"metricName": "tool_trajectory_avg_score", "threshold": 1.0},
    {"metricName": "response_match_score", "threshold": 0.8},
]


@pytest.fixture
def rondo(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path]]:
    from rondo.server import create_app

    agents = tmp_path / "agents"
    shutil.copytree(APPS / "chat", agents / "chat")
    shutil.copy(APPS / "echo_model.py", agents / "echo_model.py")
    with (
        serve(create_app(agents, db="memory", loopback_only=True)) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        yield client, agents


def _session_with_a_turn(client: httpx.Client) -> str:
    session = client.post("/apps/chat/users/u/sessions", json={}).json()
    ran = client.post(
        "/run",
        json={
            "appName": "chat",
            "userId": "u",
            "sessionId": session["id"],
            "newMessage": {"role": "user", "parts": [{"text": "milk"}]},
        },
    )
    assert ran.status_code == 200
    return session["id"]


def test_24_add_session_run_and_read_the_result(rondo: tuple[httpx.Client, Path]) -> None:
    client, agents = rondo
    sid = _session_with_a_turn(client)
    assert (
        client.post(
            f"{_E}/eval-sets", json={"evalSet": {"eval_set_id": "s", "eval_cases": []}}
        ).status_code
        == 200
    )
    added = client.post(
        f"{_E}/eval-sets/s/add-session", json={"evalId": "c", "sessionId": sid, "userId": "u"}
    )
    assert added.status_code == 200
    case = client.get(f"{_E}/eval-sets/s/eval-cases/c").json()
    turn = case["conversation"][0]
    assert turn["userContent"]["parts"] == [{"text": "milk"}]
    assert turn["finalResponse"]["parts"] == [{"text": "Stub reply: noted 'milk'"}]
    calls = [e for e in turn["intermediateData"]["invocationEvents"] if "content" in e]
    assert calls[0]["content"]["parts"][0]["functionCall"]["args"] == {"note": "milk"}
    again = client.post(
        f"{_E}/eval-sets/s/add-session", json={"evalId": "c", "sessionId": sid, "userId": "u"}
    )
    assert again.status_code == 400
    missing = client.post(
        f"{_E}/eval-sets/s/add-session", json={"evalId": "d", "sessionId": "nope", "userId": "u"}
    )
    assert missing.status_code == 404

    ran = client.post(f"{_E}/eval-sets/s/run", json={"evalMetrics": _METRICS})
    assert ran.status_code == 200, ran.text
    (result,) = ran.json()["runEvalResults"]
    assert result["evalId"] == "c"
    assert result["finalEvalStatus"] == 1
    scored = {m["metricName"]: m for m in result["overallEvalMetricResults"]}
    assert scored["tool_trajectory_avg_score"]["score"] == 1.0
    assert scored["response_match_score"]["score"] == 1.0
    assert scored["tool_call_count_v1"]["evalStatus"] == 4
    assert scored["tool_call_count_v1"]["score"] == 1.0
    # The eval ran on the server's own sessions, where the UI can open it.
    shown = client.get(f"/apps/chat/users/u/sessions/{result['sessionId']}")
    assert shown.status_code == 200

    ids = client.get(f"{_E}/eval-results").json()["evalResultIds"]
    assert len(ids) == 1
    stored = client.get(f"{_E}/eval-results/{ids[0]}").json()
    assert stored["evalSetId"] == "s"
    assert stored["evalCaseResults"][0]["evalId"] == "c"
    report = client.get(f"{_E}/eval-results/{ids[0]}/report").json()
    assert report["cases"][0]["usage"]["cost"] == "no usage reported"  # the echo model reports none
    assert (agents / "chat" / ".adk" / "eval_history").is_dir()


def test_24_a_failing_case_and_rondo_report(rondo: tuple[httpx.Client, Path]) -> None:
    client, _ = rondo
    sid = _session_with_a_turn(client)
    client.post(f"{_E}/eval-sets", json={"evalSet": {"eval_set_id": "s", "eval_cases": []}})
    client.post(
        f"{_E}/eval-sets/s/add-session", json={"evalId": "c", "sessionId": sid, "userId": "u"}
    )
    case = client.get(f"{_E}/eval-sets/s/eval-cases/c").json()
    case["conversation"][0]["finalResponse"] = {
        "role": "model",
        "parts": [{"text": "something else entirely"}],
    }
    assert client.put(f"{_E}/eval-sets/s/eval-cases/c", json=case).status_code == 200
    ran = client.post(f"{_E}/eval-sets/s/run-report", json={"evalMetrics": _METRICS})
    assert ran.status_code == 200, ran.text
    report = ran.json()["report"]
    (only,) = report["cases"]
    assert only["passed"] is False
    assert only["invocations"][0]["expected_text"] == "something else entirely"
    assert only["invocations"][0]["actual_text"] == "Stub reply: noted 'milk'"
    assert "usage" in report
    adk = client.get(f"{_E}/eval-results/{ran.json()['eval_result_id']}").json()
    assert adk["evalCaseResults"][0]["finalEvalStatus"] == 2


def test_24_run_errors(rondo: tuple[httpx.Client, Path]) -> None:
    client, _ = rondo
    assert (
        client.post(f"{_E}/eval-sets/nope/run", json={"evalMetrics": _METRICS}).status_code == 400
    )
    client.post(f"{_E}/eval-sets", json={"evalSet": {"eval_set_id": "s", "eval_cases": []}})
    assert client.post(f"{_E}/eval-sets/s/run", json={}).status_code == 422
    assert (
        client.post(
            f"{_E}/eval-sets/nope/add-session",
            json={"evalId": "c", "sessionId": "x", "userId": "u"},
        ).status_code
        == 404
    )


def test_24_metrics_info(rondo: tuple[httpx.Client, Path]) -> None:
    client, _ = rondo
    info = client.get(f"{_E}/metrics-info").json()["metricsInfo"]
    names = [m["metricName"] for m in info]
    assert "tool_trajectory_avg_score" in names
    assert "final_response_match_v2" in names
    efficiency = next(m for m in info if m["metricName"] == "token_usage_v1")
    assert efficiency["requiresThreshold"] is False


def test_24_run_options_of_adks_dev_ui(
    rondo: tuple[httpx.Client, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ADK's run dialog may send besides the metrics: its Live mode (not run by rondo:
    400, never a standard run passed off as live), a user simulator (rondo's llm-backed one
    is taken, ADK's audio one refused), and a missing eval extra answered as ADK does (400
    saying it "is not installed", the one run error ADK's UI shows)."""
    import rondo.server.eval_runs as eval_runs
    from rondo.errors import ConfigurationError

    client, _ = rondo
    sid = _session_with_a_turn(client)
    client.post(f"{_E}/eval-sets", json={"evalSet": {"eval_set_id": "s", "eval_cases": []}})
    client.post(
        f"{_E}/eval-sets/s/add-session", json={"evalId": "c", "sessionId": sid, "userId": "u"}
    )
    run = f"{_E}/eval-sets/s/run"
    base = {"eval_case_ids": ["c"], "eval_metrics": _METRICS}
    live = client.post(run, json={**base, "live_model_config": {}})
    assert live.status_code == 400
    assert "live_model_config" in live.json()["detail"]
    audio = {"type": "llm_audio", "audio_model": "a-live-model"}
    refused = client.post(run, json={**base, "user_simulator_config": audio})
    assert refused.status_code == 400
    assert "llm_backed" in refused.json()["detail"]
    bad = {"type": "llm_backed", "max_allowed_invocations": "many"}
    assert client.post(run, json={**base, "user_simulator_config": bad}).status_code == 400
    assert client.get(f"{_E}/eval-results").json()["evalResultIds"] == []
    simulated = {"type": "llm_backed", "model": "gemini-2.5-flash", "max_allowed_invocations": 3}
    taken = client.post(run, json={**base, "user_simulator_config": simulated})
    assert taken.status_code == 200
    assert taken.json()["runEvalResults"][0]["finalEvalStatus"] == 1

    def missing() -> None:
        raise ConfigurationError("response_match_score needs the rouge-score package")

    monkeypatch.setattr(eval_runs, "require_rouge", missing)
    no_extra = client.post(run, json=base)
    assert no_extra.status_code == 400
    assert "not installed" in no_extra.json()["detail"]
    # Without ROUGE in the metrics, the run needs no extra.
    only_tools = client.post(run, json={**base, "eval_metrics": _METRICS[:1]})
    assert only_tools.status_code == 200
    assert len(client.get(f"{_E}/eval-results").json()["evalResultIds"]) == 2
