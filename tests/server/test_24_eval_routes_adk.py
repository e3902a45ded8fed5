"""Issue 24 item 4: rondo's eval-set routes answer like a live google-adk 2.13 dev server.

google-adk 2.13 serves `/dev/apps/{app}/eval...` only from `adk web` (its `api_server` is the
production-only `ApiServer`), so the reference runs `adk web`. Both servers get the same
requests on copies of the same app folder; statuses and JSON (clocks masked) must agree, and
the eval-set files they leave behind must hold the same data.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._require import require
from tests.server._adk import adk_python
from tests.server._live import APPS, free_port, serve

pytestmark = pytest.mark.integration

_CLOCKS = {"creationTimestamp", "creation_timestamp"}


def masked(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: masked(v, k) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [masked(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return f"<{key}>" if key in _CLOCKS else value


def _can_score(python: str) -> bool:
    # ADK's run and metrics routes need its `eval` extra (pandas, Vertex AI's SDK, rouge-score).
    found = subprocess.run([python, "-c", "import pandas, vertexai, rouge_score"], check=False)
    return found.returncode == 0


@pytest.fixture
def adk(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path]]:
    python = adk_python()
    require(python, what="ADK", reason="google-adk not found (set RONDO_ADK_PYTHON)")
    assert python is not None
    require(
        _can_score(python),
        what="ADK",
        reason="google-adk's eval extra is missing (./dev test installs google-adk[eval])",
    )
    agents = tmp_path / "adk"
    shutil.copytree(Path(__file__).parent / "adk_apps", agents)
    port = free_port()
    process = subprocess.Popen(
        [python, "-m", "google.adk.cli", "web", "--port", str(port), str(agents)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                httpx.get(f"{url}/health", timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("adk web did not start") from None
                time.sleep(0.3)
        with httpx.Client(base_url=url, timeout=30) as client:
            yield client, agents
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture
def rondo(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path]]:
    from rondo.server import create_app

    agents = tmp_path / "rondo"
    shutil.copytree(APPS / "chat", agents / "chat")
    shutil.copy(APPS / "echo_model.py", agents / "echo_model.py")
    with (
        serve(create_app(agents, db="memory", loopback_only=True)) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        yield client, agents


_E = "/dev/apps/chat"
_CASE = {
    "evalId": "c1",
    "conversation": [
        {
            "invocationId": "i1",
            "userContent": {"role": "user", "parts": [{"text": "milk"}]},
            "finalResponse": {"role": "model", "parts": [{"text": "added milk"}]},
        }
    ],
    "sessionInput": {"appName": "chat", "userId": "u", "state": {"my_key": 1}},
}

SCENARIO: list[tuple[str, str, Any]] = [
    ("GET", f"{_E}/eval-sets", None),
    ("POST", f"{_E}/eval-sets", {"evalSet": {"eval_set_id": "smoke", "eval_cases": []}}),
    ("POST", f"{_E}/eval-sets", {"evalSet": {"eval_set_id": "smoke", "eval_cases": []}}),
    ("POST", f"{_E}/eval-sets", {"evalSet": {"eval_set_id": "bad-id", "eval_cases": []}}),
    ("POST", f"{_E}/eval_sets/legacy", None),
    ("GET", f"{_E}/eval-sets", None),
    ("GET", f"{_E}/eval_sets", None),
    ("GET", f"{_E}/eval_sets/smoke/evals", None),
    ("GET", f"{_E}/eval_sets/nope/evals", None),
    ("GET", f"{_E}/eval-sets/smoke/eval-cases/c1", None),
    ("PUT", f"{_E}/eval-sets/smoke/eval-cases/c1", _CASE),
    ("DELETE", f"{_E}/eval-sets/smoke/eval-cases/c1", None),
    ("GET", f"{_E}/eval-results", None),
    ("GET", f"{_E}/eval_results", None),
    ("GET", f"{_E}/eval-results/none_such", None),
]


def _send(client: httpx.Client, method: str, path: str, body: Any) -> httpx.Response:
    return (
        client.request(method, path, json=body)
        if body is not None
        else client.request(method, path)
    )


def test_24_eval_routes_answer_like_live_adk_web(
    adk: tuple[httpx.Client, Path], rondo: tuple[httpx.Client, Path]
) -> None:
    (theirs_http, theirs_dir), (ours_http, ours_dir) = adk, rondo
    for method, path, body in SCENARIO:
        theirs = _send(theirs_http, method, path, body)
        ours = _send(ours_http, method, path, body)
        step = f"{method} {path}"
        assert ours.status_code == theirs.status_code, (step, theirs.text, ours.text)
        if theirs.status_code < 400:
            assert masked(ours.json()) == masked(theirs.json()), step
    for name in ("smoke.evalset.json", "legacy.evalset.json"):
        theirs_file = json.loads((theirs_dir / "chat" / name).read_text())
        ours_file = json.loads((ours_dir / "chat" / name).read_text())
        assert masked(ours_file) == masked(theirs_file), name


_MASKED = {
    "creationTimestamp",
    "creation_timestamp",
    "invocationId",
    "id",
    "sessionId",
    "evalSetResultId",
    "evalSetResultName",
    "lastUpdateTime",
}
# What ADK's actual invocations carry that rondo's do not: agent details, split timings.
_ADK_ONLY = {"appDetails", "duration", "modelDuration", "toolDuration", "sessionDetails"}


def comparable(value: Any, key: str | None = None) -> Any:
    """Ids and clocks masked, ADK-only fields dropped, durations reduced to their presence."""
    if isinstance(value, dict):
        kept = {k: v for k, v in value.items() if k not in _ADK_ONLY}  # pyright: ignore[reportUnknownVariableType]
        if kept.get("metricName") == "invocation_duration_v1":
            return {"metricName": "invocation_duration_v1", "evalStatus": kept["evalStatus"]}
        if kept.get("metricName") == "inference_call_count_v1":
            kept.pop("score", None)  # ADK counts calls with usage or a model version
        return {k: comparable(v, k) for k, v in kept.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [comparable(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return f"<{key}>" if key in _MASKED else value


_METRICS = [
    {"metricName": "tool_trajectory_avg_score", "threshold": 1.0},
    {"metricName": "response_match_score", "threshold": 0.8},
]


def _turn(client: httpx.Client) -> str:
    sid = client.post("/apps/chat/users/u/sessions", json={"state": {"k": 1}}).json()["id"]
    message = {"role": "user", "parts": [{"text": "milk"}]}
    body = {"appName": "chat", "userId": "u", "sessionId": sid, "newMessage": message}
    assert client.post("/run", json=body).status_code == 200
    return sid


def test_24_add_session_run_and_metrics_answer_like_live_adk_web(
    adk: tuple[httpx.Client, Path], rondo: tuple[httpx.Client, Path]
) -> None:
    (theirs_http, theirs_dir), (ours_http, ours_dir) = adk, rondo
    sessions = {id(theirs_http): _turn(theirs_http), id(ours_http): _turn(ours_http)}

    def scenario(client: httpx.Client) -> list[tuple[str, str, Any]]:
        sid = sessions[id(client)]
        return [
            ("POST", f"{_E}/eval-sets", {"evalSet": {"eval_set_id": "s1", "eval_cases": []}}),
            (
                "POST",
                f"{_E}/eval-sets/s1/add-session",
                {"evalId": "a", "sessionId": sid, "userId": "u"},
            ),
            (
                "POST",
                f"{_E}/eval-sets/s1/add-session",
                {"evalId": "a", "sessionId": sid, "userId": "u"},
            ),
            (
                "POST",
                f"{_E}/eval-sets/s1/add-session",
                {"evalId": "b", "sessionId": "none", "userId": "u"},
            ),
            (
                "POST",
                f"{_E}/eval-sets/nope/add-session",
                {"evalId": "b", "sessionId": sid, "userId": "u"},
            ),
            (
                "POST",
                f"{_E}/eval_sets/s1/add_session",
                {"evalId": "c", "sessionId": sid, "userId": "u"},
            ),
            ("GET", f"{_E}/eval_sets/s1/evals", None),
            ("POST", f"{_E}/eval-sets/s1/run", {"evalCaseIds": ["a"], "evalMetrics": _METRICS}),
            (
                "POST",
                f"{_E}/eval_sets/s1/run_eval",
                {"evalIds": ["c"], "evalMetrics": _METRICS[:1]},
            ),
            ("POST", f"{_E}/eval-sets/nope/run", {"evalMetrics": _METRICS}),
            ("POST", f"{_E}/eval-sets/s1/run", {}),
        ]

    for (method, path, theirs_body), (_, _, ours_body) in zip(
        scenario(theirs_http), scenario(ours_http), strict=True
    ):
        theirs = _send(theirs_http, method, path, theirs_body)
        ours = _send(ours_http, method, path, ours_body)
        step = f"{method} {path}"
        assert ours.status_code == theirs.status_code, (step, theirs.text, ours.text)
        if theirs.status_code < 400:
            assert comparable(ours.json()) == comparable(theirs.json()), step
    # The cases added from the sessions are stored alike.
    theirs_file = json.loads((theirs_dir / "chat" / "s1.evalset.json").read_text())
    ours_file = json.loads((ours_dir / "chat" / "s1.evalset.json").read_text())
    assert comparable(camel_keys(ours_file)) == comparable(camel_keys(theirs_file))
    # Both runs are listed and read back alike.
    theirs_ids = theirs_http.get(f"{_E}/eval-results").json()["evalResultIds"]
    ours_ids = ours_http.get(f"{_E}/eval-results").json()["evalResultIds"]
    assert len(ours_ids) == len(theirs_ids) == 2
    theirs_results = sorted(
        (theirs_http.get(f"{_E}/eval-results/{i}").json() for i in theirs_ids),
        key=lambda r: r["evalCaseResults"][0]["evalId"],
    )
    ours_results = sorted(
        (ours_http.get(f"{_E}/eval-results/{i}").json() for i in ours_ids),
        key=lambda r: r["evalCaseResults"][0]["evalId"],
    )
    assert comparable(ours_results) == comparable(theirs_results)
    # metrics-info: every metric rondo lists, ADK lists with the same range and threshold rule.
    theirs_info = {
        m["metricName"]: m for m in theirs_http.get(f"{_E}/metrics-info").json()["metricsInfo"]
    }
    ours_info = ours_http.get(f"{_E}/metrics-info").json()["metricsInfo"]
    assert len(ours_info) >= 10
    for metric in ours_info:
        reference = theirs_info[metric["metricName"]]
        assert set(metric) == set(reference), metric["metricName"]
        assert metric["metricValueInfo"] == reference["metricValueInfo"], metric["metricName"]
        assert metric["requiresThreshold"] == reference["requiresThreshold"], metric["metricName"]


def camel_keys(value: Any) -> Any:
    from pydantic.alias_generators import to_camel

    if isinstance(value, dict):
        return {to_camel(k): camel_keys(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, list):
        return [camel_keys(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


# A hand-written case whose tool call, tool response and state have snake_case keys of their own.
_FREE_FORM_SET = {
    "eval_set_id": "free",
    "eval_cases": [
        {
            "eval_id": "c",
            "conversation": [
                {
                    "invocation_id": "i1",
                    "user_content": {"role": "user", "parts": [{"text": "milk"}]},
                    "final_response": {"role": "model", "parts": [{"text": "noted"}]},
                    "intermediate_data": {
                        "invocation_events": [
                            {
                                "author": "chat",
                                "content": {
                                    "role": "model",
                                    "parts": [
                                        {
                                            "function_call": {
                                                "name": "remember",
                                                "args": {"note_text": "milk", "by_who": {"a_b": 1}},
                                            }
                                        },
                                        {
                                            "function_response": {
                                                "name": "remember",
                                                "response": {"note_count": 1},
                                            }
                                        },
                                    ],
                                },
                            }
                        ]
                    },
                }
            ],
            "session_input": {"app_name": "chat", "user_id": "u", "state": {"my_key": 1}},
            "final_session_state": {"last_note": "milk"},
        }
    ],
}


def test_24_eval_case_keys_of_tool_calls_answer_like_live_adk_web(
    adk: tuple[httpx.Client, Path], rondo: tuple[httpx.Client, Path]
) -> None:
    """A case read back keeps its tool calls' and responses' own keys (ADK types them as
    free-form dicts), and the dev UI's edit (a PUT of what it read) changes nothing."""
    answers: list[list[Any]] = []
    for client, folder in (adk, rondo):
        (folder / "chat" / "free.evalset.json").write_text(json.dumps(_FREE_FORM_SET))
        read = client.get(f"{_E}/eval_sets/free/evals/c")
        assert read.status_code == 200, read.text
        case = read.json()
        put = client.put(
            f"{_E}/eval_sets/free/evals/c",
            json={
                k: case[k] for k in ("evalId", "conversation", "sessionInput", "creationTimestamp")
            },
        )
        assert put.status_code == 200, put.text
        again = client.get(f"{_E}/eval-sets/free/eval-cases/c").json()
        answers.append([masked(case), masked(again)])
    theirs, ours = answers
    assert ours == theirs
    # After the PUT both files hold the same case, snake_case as ADK writes it.
    adk_file, rondo_file = (
        json.loads((folder / "chat" / "free.evalset.json").read_text())
        for _, folder in (adk, rondo)
    )
    assert masked(rondo_file["eval_cases"]) == masked(adk_file["eval_cases"])
    call = ours[1]["conversation"][0]["intermediateData"]["invocationEvents"][0]["content"]
    assert call["parts"][0]["functionCall"]["args"] == {"note_text": "milk", "by_who": {"a_b": 1}}
    assert call["parts"][1]["functionResponse"]["response"] == {"note_count": 1}
