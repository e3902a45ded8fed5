"""Issue 20 item 5: where google-adk's observable behaviour on `/run_live` and the issue text
differ, google-adk's wins — close codes, what is echoed, what is stored.

`adk_capture/20-run-live.jsonl` is what google-adk 2.13's api_server answered (captured with
`adk_capture/run_live_capture.py`) for an agent on `gemini-live-2.5-flash-preview` whose model
was a fake Gemini Live endpoint. Here rondo's server serves the same agent against the same
fake endpoint, through the real google-genai SDK, and the same client plays the same
scenarios. Every socket ends as google-adk's did, and every frame google-adk sent or stored
has a counterpart in rondo's, in the same order, holding the same keys and values (rondo's
may hold more: its run id, the transcript as content)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests._require import require_module
from tests.server._live import REFERENCE, serve

require_module("google.genai", what="GEMINI", install="pip install 'rondo-agents[gemini]'")
require_module("cryptography.x509", what="GEMINI", install="pip install cryptography")
require_module("websockets.sync.client", what="SERVER", install="pip install websockets")

from tests.live._gemini_fake import self_signed, serve_conversation  # noqa: E402
from tests.server.adk_capture.run_live_capture import APP, drive  # noqa: E402

pytestmark = pytest.mark.integration

AGENT = '''
from rondo import Agent

def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

root_agent = Agent(name="bot", model="gemini-live-2.5-flash-preview", instruction="Be brief.",
                   tools=[add])
'''


def normalized(frame: Any) -> Any:
    """A frame as compared: without the model version (rondo's records do not carry it) and
    the flags google-adk writes when false on a text record (rondo leaves false flags out,
    except on a finished transcription, where it writes `partial: false` as google-adk)."""
    if not isinstance(frame, dict):
        return frame
    data: dict[str, Any] = {k: v for k, v in frame.items() if k != "modelVersion"}
    transcribed = "inputTranscription" in data or "outputTranscription" in data
    for flag in ("interrupted", "partial"):
        if data.get(flag) is False and not (flag == "partial" and transcribed):
            del data[flag]
    return data


def holds(expected: Any, got: Any) -> bool:
    """`got` has every key and value of `expected` (recursively; lists item by item)."""
    if isinstance(expected, dict):
        return isinstance(got, dict) and all(
            key in got and holds(value, got[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(holds(e, g) for e, g in zip(expected, got, strict=True))
        )
    return bool(expected == got)


def unmatched(expected: list[Any], got: list[Any]) -> list[Any]:
    """The expected frames with no counterpart in `got`, matched in order."""
    rest = iter([normalized(g) for g in got])
    missing: list[Any] = []
    for frame in map(normalized, expected):
        if not any(holds(frame, candidate) for candidate in rest):
            missing.append(frame)
            rest = iter([normalized(g) for g in got])  # report every missing frame
    return missing


@pytest.fixture(scope="module")
def rondo_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    from rondo.server import create_app

    folder = tmp_path_factory.mktemp("live_parity")
    cert, key = self_signed(folder)
    app = folder / "agents" / APP
    app.mkdir(parents=True)
    (app / "agent.py").write_text(AGENT)
    with serve_conversation(cert, key) as gemini, pytest.MonkeyPatch.context() as env:
        env.setenv("SSL_CERT_FILE", str(cert))
        env.setenv("GOOGLE_API_KEY", "k")
        env.setenv("GOOGLE_GEMINI_BASE_URL", gemini)
        env.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
        server = create_app(app.parent, db="memory", loopback_only=True)
        with serve(server) as url:
            return drive(url)


def test_20_run_live_ends_echoes_and_stores_as_google_adk(
    rondo_results: list[dict[str, Any]],
) -> None:
    lines = (REFERENCE / "20-run-live.jsonl").read_text().splitlines()
    reference = {r["scenario"]: r for r in map(json.loads, lines)}
    ours = {r["scenario"]: r for r in rondo_results}
    assert list(ours) == list(reference)
    for name, adk in reference.items():
        mine = ours[name]
        if "end" in adk:
            assert mine["end"] == adk["end"], name
            continue
        key = "frames" if "frames" in adk else "events"
        missing = unmatched(adk[key], mine[key])
        assert not missing, f"{name}: google-adk's {missing} not in rondo's {mine[key]}"


def test_20_run_live_transcriptions_say_finished_as_google_adk(
    rondo_results: list[dict[str, Any]],
) -> None:
    (audio,) = [r for r in rondo_results if r["scenario"] == "audio turn"]
    heard = [
        (f["inputTranscription"]["finished"], f["partial"])
        for f in audio["frames"]
        if "inputTranscription" in f
    ]
    assert heard == [(False, True), (True, False)]
    (stored,) = [r for r in rondo_results if r["scenario"] == "stored text and tool"]
    updates = [e["liveSessionResumptionUpdate"] for e in stored["events"] if "live" in str(e)]
    assert updates == [{"newHandle": "handle-1", "resumable": True}]
