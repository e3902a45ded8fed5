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


@pytest.fixture
def adk(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path]]:
    python = adk_python()
    require(python, what="ADK", reason="google-adk not found (set RONDO_ADK_PYTHON)")
    assert python is not None
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
