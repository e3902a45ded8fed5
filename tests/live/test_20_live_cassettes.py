"""Issue 20 item 4: cassettes cover live exchanges — a live call recorded frame by frame, both
ways, replays offline with the same events; `rondo run --record/--replay` runs a live agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rondo import Agent, Content, Event, FunctionCall, LiveRequestQueue, RunConfig, Runner
from rondo.cli import app
from rondo.models import register_provider
from rondo.models.live import LiveConnectionLost, LiveResponse, Transcription
from rondo.run_config import SessionResumptionConfig
from rondo.testing import CassetteMismatchError, ScriptedLiveModel, record, replay
from rondo.types import Blob

CONFIG = RunConfig(session_resumption=SessionResumptionConfig())


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def scripted() -> ScriptedLiveModel:
    return ScriptedLiveModel(
        [
            [
                LiveResponse(resumption_handle="h-1"),
                LiveResponse(input_transcription=Transcription(text="hi", finished=True)),
                "Hello.",
            ],
            FunctionCall(name="add", args={"a": 2, "b": 3}),
            "It is 5.",
            [LiveConnectionLost("closed 1008", reason="policy_1008")],
            "Back.",
        ],
        name="scripted-live",
    )


async def call(model: Any) -> list[Event]:
    """The same call each time: a text turn, audio, a tool turn, a dropped connection."""
    runner = Runner(agent=Agent("bot", model=model, tools=[add]), app_name="cassettes")
    queue = LiveRequestQueue()
    sends: list[Any] = [
        Content.user("hi"),
        Content.user("add"),
        Content.user("drop"),
        Content.user("again"),
    ]
    queue.send_realtime(Blob(mime_type="audio/pcm;rate=16000", data=bytes(320)))
    queue.send_content(sends.pop(0))
    events: list[Event] = []
    async for event in runner.run_live(
        user_id="u", session_id="s", live_request_queue=queue, run_config=CONFIG
    ):
        events.append(event)
        reconnected = event.custom_metadata and "reconnected" in event.custom_metadata["live"]
        if (event.turn_complete or reconnected) and sends:
            queue.send_content(sends.pop(0))
        elif not event.partial and event.text == "Back.":
            queue.close()
    return events


def seen(events: list[Event]) -> list[str]:
    """The events as a caller sees them, without what differs from run to run: ids, times,
    and the call ids rondo gives calls the model sent without one (numbered in order)."""
    volatile = {"id", "timestamp", "invocation_id", "run_id"}
    calls: dict[str, str] = {}
    out: list[str] = []
    for event in events:
        text = json.dumps(event.model_dump(mode="json", exclude=volatile), sort_keys=True)
        for call_id in (c.id for c in event.get_function_calls()):
            if call_id:
                calls.setdefault(call_id, f"call#{len(calls) + 1}")
        for call_id, number in calls.items():
            text = text.replace(call_id, number)
        out.append(text)
    return out


async def test_20_a_live_call_replays_from_its_cassette_with_the_same_events(
    tmp_path: Path,
) -> None:
    path = tmp_path / "live.jsonl"
    recorded = await call(record(scripted(), path))
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    frames = [f for line in lines for f in line["live"]["frames"]]
    # Both ways: what was sent (the audio as its digest) and what came back, and the drop.
    assert {"sent", "received", "error"} <= {k for f in frames for k in f}
    sent_blobs = [f["sent"]["blob"] for f in frames if "blob" in f.get("sent", {})]
    assert sent_blobs[0]["mime_type"] == "audio/pcm;rate=16000"
    assert "data" not in sent_blobs[0]
    assert [f["lost"] for f in frames if "error" in f] == ["policy_1008"]
    assert len({line["exchange"] for line in lines}) == 2  # two connections

    model = replay(path)
    replayed = await call(model)
    assert seen(replayed) == seen(recorded)
    assert any(e.custom_metadata and e.custom_metadata["live"].get("resumed") for e in replayed)
    model.check_finished()


async def test_20_a_live_replay_that_sends_something_else_is_a_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    await call(record(scripted(), path))
    runner = Runner(agent=Agent("bot", model=replay(path), tools=[add]), app_name="cassettes")
    queue = LiveRequestQueue()
    queue.send_content(Content.user("something else"))
    with pytest.raises(CassetteMismatchError, match="request 1 differs"):
        async for _ in runner.run_live(
            user_id="u", session_id="s", live_request_queue=queue, run_config=CONFIG
        ):
            pass


AGENT = """\
from rondo import Agent


def add(a: int, b: int) -> int:
    \"\"\"Add two numbers.\"\"\"
    return a + b


root_agent = Agent(name="voice", model="clilive:talker", tools=[add])
"""


def test_20_rondo_run_records_and_replays_a_live_agent(tmp_path: Path) -> None:
    script = [FunctionCall(name="add", args={"a": 2, "b": 3}), "It is 5."]
    register_provider("clilive", lambda name: ScriptedLiveModel(script, name=name))
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT, encoding="utf-8")
    cassette = tmp_path / "voice.jsonl"
    cli = CliRunner()
    base = ["run", str(agent), "add 2 and 3", "--db", "memory", "--jsonl"]
    first = cli.invoke(app, [*base, "--record", str(cassette)])
    assert first.exit_code == 0, first.output
    # Offline: the provider is gone; the cassette answers.
    register_provider("clilive", lambda name: pytest.fail("the replay dialled the model"))
    second = cli.invoke(app, [*base, "--replay", str(cassette)])
    assert second.exit_code == 0, second.output

    def events(output: str) -> list[tuple[str, Any]]:
        shown = [json.loads(line) for line in output.splitlines()]
        return [(e["type"], e.get("result") or e.get("text")) for e in shown]

    assert events(second.stdout) == events(first.stdout)
    kinds = [kind for kind, _ in events(first.stdout)]
    assert kinds[0] == "run_start"
    assert kinds[-1] == "run_end"
    assert ("tool_call_end", {"result": 5}) in events(first.stdout)
    assert json.loads(first.stdout.splitlines()[-1])["text"] == "It is 5."


async def test_20_a_gemini_live_call_over_the_real_sdk_replays_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded through google-genai against a fake Gemini Live endpoint on loopback; the
    replay needs neither the endpoint nor the SDK's connection."""
    from tests._require import require_module

    require_module("google.genai", what="GEMINI", install="pip install 'rondo-agents[gemini]'")
    from rondo.models.gemini_live import GeminiLiveModel
    from tests.live._gemini_fake import self_signed, serve_conversation

    async def talk(model: Any) -> list[Event]:
        runner = Runner(agent=Agent("bot", model=model, tools=[add]), app_name="cassettes")
        queue = LiveRequestQueue()
        sends = ["hi", "add"]
        queue.send_content(Content.user(sends.pop(0)))
        events: list[Event] = []
        async for event in runner.run_live(
            user_id="u", session_id="s", live_request_queue=queue, run_config=CONFIG
        ):
            events.append(event)
            if not event.partial and event.text == "It is 5.":
                queue.close()
            elif event.turn_complete and sends:
                queue.send_content(Content.user(sends.pop(0)))
        return events

    path = tmp_path / "gemini.jsonl"
    cert, key = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    with serve_conversation(cert, key) as base_url:
        live = GeminiLiveModel("gemini-live-2.5-flash-preview", api_key="k", base_url=base_url)
        recorded = await talk(record(live, path))
    replayed = await talk(replay(path))  # the endpoint is gone
    assert seen(replayed) == seen(recorded)
    assert [e.text for e in replayed if not e.partial and e.text] == ["hi", "Hello.", "It is 5."]
