"""SPEC L1–L3 with `ScriptedLiveModel`: the live loop, its tool path, reconnects, records."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from rondo import (
    Agent,
    Content,
    Event,
    FunctionCall,
    FunctionTool,
    LiveRequestQueue,
    Plugin,
    RunConfig,
    Runner,
)
from rondo.errors import ConfigurationError, ModelConnectionError, ScriptExhaustedError
from rondo.lifecycle import (
    HITLPending,
    ReasonDelta,
    ReasonEnd,
    ReasonStart,
    RunEnd,
    RunStart,
    Transcript,
)
from rondo.models.live import LiveConnectError, LiveConnectionLost, LiveResponse, Transcription
from rondo.run_config import CompactionConfig, SessionResumptionConfig
from rondo.testing import ScriptedLiveModel, ScriptedModel

USER, SESSION = "u", "s"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def runner_for(model: Any, **agent_kwargs: Any) -> Runner:
    agent_kwargs.setdefault("tools", [add])
    return Runner(agent=Agent("bot", model=model, instruction="Be brief.", **agent_kwargs))


async def live(
    runner: Runner,
    sends: list[Any],
    *,
    until: Callable[[Event], bool],
    run_config: RunConfig | None = None,
    session_id: str = SESSION,
) -> list[Event]:
    """Run a live call like a person would: send the next of `sends` when the previous turn
    ended (or the call reconnected); close the queue once `until` holds for an event."""
    queue = LiveRequestQueue()
    waiting = list(sends)

    def send_next() -> None:
        if waiting:
            item = waiting.pop(0)
            queue.send_content(Content.user(item) if isinstance(item, str) else item)

    send_next()
    seen: list[Event] = []
    async for event in runner.run_live(
        user_id=USER, session_id=session_id, live_request_queue=queue, run_config=run_config
    ):
        seen.append(event)
        if until(event):
            queue.close()
        elif event.turn_complete or (
            event.custom_metadata and "reconnected" in event.custom_metadata["live"]
        ):
            send_next()
    return seen


def final_text(text: str) -> Callable[[Event], bool]:
    return lambda e: not e.partial and e.text == text


async def stored(runner: Runner, session_id: str = SESSION) -> list[Event]:
    session = await runner.session_service.get_session(
        app_name=runner.app_name, user_id=USER, session_id=session_id
    )
    assert session is not None
    return list(session.events)


async def test_l1_text_turns_are_records_over_one_connection() -> None:
    model = ScriptedLiveModel(["Hello.", "Goodbye."])
    runner = runner_for(model)
    events = await live(runner, ["hi", "bye"], until=final_text("Goodbye."))
    assert len(model.connects) == 1
    finals = [e.text for e in events if not e.partial and e.text]
    assert finals == ["Hello.", "Goodbye."]
    assert any(e.partial and e.text == "Hello." for e in events)
    log = await stored(runner)
    assert [(e.author, e.text) for e in log if e.text] == [
        ("user", "hi"),
        ("bot", "Hello."),
        ("user", "bye"),
        ("bot", "Goodbye."),
    ]
    assert all(not e.partial for e in log)
    # The user's messages are stored, not yielded back (as in run_async).
    assert all(e.author != "user" for e in events)


async def test_l1_request_built_once_with_history_and_never_resent() -> None:
    text = ScriptedModel(["Earlier answer."])
    runner = runner_for(text)
    await runner.run_to_result(user_id=USER, session_id=SESSION, new_message="earlier question")
    model = ScriptedLiveModel(["Now.", "Again."])
    runner.agent.model = model  # pyright: ignore[reportAttributeAccessIssue]
    await live(runner, ["one", "two"], until=final_text("Again."))
    assert len(model.connects) == 1
    request, _ = model.connects[0]
    assert request.config.system_instruction is not None
    assert "Be brief." in request.config.system_instruction
    assert [t.name for t in request.config.tools] == ["add"]
    assert [c.text for c in request.contents] == ["earlier question", "Earlier answer."]
    # Later turns go out as single messages, not as the history again.
    sent = [r.content.text for r in model.received if r.content is not None]
    assert sent == ["one", "two"]


async def test_l1_live_turns_run_no_compaction() -> None:
    model = ScriptedLiveModel(["ok"])
    runner = runner_for(model)
    config = RunConfig(compaction=CompactionConfig(token_threshold=1, retention_events=1))
    await live(runner, ["x" * 200], until=final_text("ok"), run_config=config)
    log = await stored(runner)
    assert all(e.actions.compaction is None for e in log)


async def test_l1_function_call_takes_the_tool_path_and_answers_on_the_connection() -> None:
    seen: list[str] = []

    class Watch(Plugin):
        async def before_tool(self, tool: Any, args: dict[str, Any], tool_context: Any) -> None:
            seen.append(f"plugin.before_tool {tool.name}")

        async def after_tool(
            self, tool: Any, args: dict[str, Any], tool_context: Any, result: Any
        ) -> None:
            seen.append(f"plugin.after_tool {tool.name} {result}")

        async def before_model(self, ctx: Any, request: Any) -> None:
            seen.append("plugin.before_model")

    model = ScriptedLiveModel([FunctionCall(name="add", args={"a": 2, "b": "3"}), "It is 5."])
    agent = Agent(
        "bot",
        model=model,
        tools=[add],
        before_tool_callback=lambda tool, args, tc: seen.append(f"before_tool {args}"),
        after_tool_callback=lambda tool, args, tc, result: seen.append(f"after_tool {result}"),
        before_model_callback=lambda ctx, req: seen.append("before_model"),
        after_model_callback=lambda ctx, resp: seen.append("after_model"),
        before_agent_callback=lambda ctx: seen.append("before_agent"),
        after_agent_callback=lambda ctx: seen.append("after_agent"),
    )
    runner = Runner(agent=agent, plugins=[Watch()])
    events = await live(runner, ["add 2 and 3"], until=final_text("It is 5."))
    calls = [e for e in events if e.get_function_calls()]
    responses = [e for e in events if e.get_function_responses()]
    assert len(calls) == 1
    assert len(responses) == 1
    # Validated in lax mode by the ordinary path: "3" became 3.
    assert responses[0].get_function_responses()[0].response == {"result": 5}
    sent = [r.content for r in model.received if r.content is not None]
    assert sent[1].parts[0].function_response is not None
    assert sent[1].parts[0].function_response.response == {"result": 5}
    assert sent[1].parts[0].function_response.id == calls[0].get_function_calls()[0].id
    # L1: exactly these hooks fire in live; the model hooks never do.
    assert seen == [
        "before_agent",
        "plugin.before_tool add",
        "before_tool {'a': 2, 'b': '3'}",
        "plugin.after_tool add {'result': 5}",
        "after_tool {'result': 5}",
        "after_agent",
    ]


async def test_l1_parallel_calls_run_concurrently_and_answer_together() -> None:
    both = asyncio.Event()
    started: list[str] = []

    async def slow(name: str) -> str:
        started.append(name)
        if len(started) == 2:
            both.set()
        await both.wait()  # deadlocks unless both calls run at once
        return name.upper()

    model = ScriptedLiveModel(
        [
            [
                FunctionCall(name="slow", args={"name": "a"}),
                FunctionCall(name="slow", args={"name": "b"}),
            ],
            "done",
        ]
    )
    runner = runner_for(model, tools=[slow])
    events = await asyncio.wait_for(live(runner, ["go"], until=final_text("done")), 30)
    (merged,) = [e for e in events if e.get_function_responses()]
    assert [r.response for r in merged.get_function_responses()] == [
        {"result": "A"},
        {"result": "B"},
    ]


async def test_l1_streaming_tool_pushes_chunks_in_the_background() -> None:
    calls: list[str] = []

    async def ticker(n: int) -> AsyncIterator[str]:
        for i in range(n):
            yield f"tick {i}"

    model = ScriptedLiveModel([FunctionCall(name="ticker", args={"n": 3}), "watching"])
    runner = runner_for(
        model,
        tools=[ticker],
        before_tool_callback=lambda tool, args, tc: calls.append(tool.name),
    )
    events = await live(runner, ["start"], until=final_text("watching"))
    # The call is answered at once: the tool runs on in the background.
    (response,) = [e for e in events if e.get_function_responses()]
    assert "background" in response.get_function_responses()[0].response["status"]
    for _ in range(100):
        pushed = [r.content.text for r in model.received if r.content is not None]
        if "Function ticker returned: tick 2" in pushed:
            break
        await asyncio.sleep(0.01)
    pushed = [r.content.text for r in model.received if r.content is not None]
    assert [p for p in pushed if p.startswith("Function ticker")] == [
        "Function ticker returned: tick 0",
        "Function ticker returned: tick 1",
        "Function ticker returned: tick 2",
    ]
    assert calls == []  # the seed: a streaming tool skips the tool hook chain


async def test_l1_tool_records_wait_for_the_running_transcription() -> None:
    model = ScriptedLiveModel(
        [
            [
                LiveResponse(output_transcription=Transcription(text="Let me ")),
                FunctionCall(name="add", args={"a": 1, "b": 1}),
                LiveResponse(output_transcription=Transcription(text="add.", finished=True)),
            ],
            "Two.",
        ]
    )
    runner = runner_for(model)
    events = await live(runner, ["add"], until=final_text("Two."))
    order = [
        "transcript"
        if e.output_transcription and not e.partial
        else "call"
        if e.get_function_calls()
        else "response"
        if e.get_function_responses()
        else None
        for e in events
    ]
    order = [o for o in order if o]
    assert order == ["transcript", "call", "response"]
    # The tool still answered before the transcription ended (the model was not kept waiting).
    assert model.received[1].content is not None


async def test_l1_transcripts_are_stored_as_records() -> None:
    model = ScriptedLiveModel(
        [
            [
                LiveResponse(input_transcription=Transcription(text="what is ")),
                LiveResponse(input_transcription=Transcription(text="up", finished=True)),
                LiveResponse(output_transcription=Transcription(text="Not ")),
                LiveResponse(output_transcription=Transcription(text="much.")),
            ]
        ]
    )
    runner = runner_for(model)
    queue = LiveRequestQueue()
    queue.send_activity_start()
    queue.send_activity_end()
    events: list[Event] = []
    async for event in runner.run_live(user_id=USER, session_id=SESSION, live_request_queue=queue):
        events.append(event)
        if event.turn_complete:
            queue.close()
    log = await stored(runner)
    transcripts = [
        (e.author, e.input_transcription or e.output_transcription)
        for e in log
        if e.input_transcription or e.output_transcription
    ]
    assert transcripts == [("user", "what is up"), ("bot", "Not much.")]
    # The history reads as the conversation: the user's words, then the model's, once each.
    assert [(e.author, e.text) for e in log if e.text] == [
        ("user", "what is up"),
        ("bot", "Not much."),
    ]
    assert [e.input_transcription for e in events if e.partial and e.author == "user"] == [
        "what is ",
        "up",
    ]
    assert [e.output_transcription for e in events if e.partial and e.author == "bot"] == [
        "Not ",
        "much.",
    ]


async def test_l1_a_text_model_cannot_run_live() -> None:
    runner = runner_for(ScriptedModel(["hi"]))
    with pytest.raises(ConfigurationError, match="cannot run live"):
        await live(runner, ["hi"], until=lambda e: True)


async def test_l1_a_live_model_cannot_run_a_text_turn() -> None:
    runner = runner_for(ScriptedLiveModel(["hi"]))
    with pytest.raises(ConfigurationError, match="run_live"):
        await runner.run_to_result(user_id=USER, session_id=SESSION, new_message="hi")


async def test_l2_reconnect_with_a_handle_resumes_the_provider_session() -> None:
    model = ScriptedLiveModel(
        [
            [
                LiveResponse(resumption_handle="h-1"),
                "first",
            ],
            [LiveConnectionLost("closed 1008", reason="policy_1008")],
            "after",
        ]
    )
    runner = runner_for(model)
    config = RunConfig(session_resumption=SessionResumptionConfig())
    events = await live(runner, ["a", "b", "c"], until=final_text("after"), run_config=config)
    assert [c.resumption_handle for _, c in model.connects] == [None, "h-1"]
    (marker,) = [
        e for e in events if e.custom_metadata and "reconnected" in e.custom_metadata["live"]
    ]
    assert marker.custom_metadata is not None
    assert dict(marker.custom_metadata["live"]) == {
        "reconnected": True,
        "resumed": True,
        "reason": "policy_1008",
        "handle": "h-1",
    }
    assert marker in await stored(runner)


async def test_l2_reconnect_without_a_handle_only_reconnects_and_primes_from_the_log() -> None:
    model = ScriptedLiveModel(["first", ConnectionResetError("reset by peer"), "after"])
    runner = runner_for(model)
    events = await live(runner, ["a", "b", "c"], until=final_text("after"))
    (marker,) = [e for e in events if e.custom_metadata]
    assert marker.custom_metadata is not None
    assert marker.custom_metadata["live"]["resumed"] is False
    assert marker.custom_metadata["live"]["reason"] == "connection_reset"
    assert len(model.connects) == 2
    # The new provider session starts from what the log holds now.
    second, config = model.connects[1]
    assert config.resumption_handle is None
    assert "first" in [c.text for c in second.contents]


async def test_l2_go_away_reconnects() -> None:
    model = ScriptedLiveModel(["one", LiveResponse(go_away=True), "two"])
    runner = runner_for(model)
    events = await live(runner, ["a", "b", "c"], until=final_text("two"))
    assert len(model.connects) == 2
    assert any(
        e.custom_metadata and e.custom_metadata["live"]["reason"] == "go_away" for e in events
    )


async def test_l2_an_unrecoverable_error_ends_the_run() -> None:
    model = ScriptedLiveModel(["one", RuntimeError("bad frame")])
    runner = runner_for(model)
    with pytest.raises(RuntimeError, match="bad frame"):
        await live(runner, ["a", "b"], until=lambda e: False)
    assert len(model.connects) == 1


async def test_l2_a_failed_first_connect_ends_the_run() -> None:
    model = ScriptedLiveModel(["one"], connect_errors=[OSError("refused")])
    with pytest.raises(LiveConnectError, match="could not open") as caught:
        await live(runner_for(model), ["a"], until=lambda e: False)
    assert isinstance(caught.value, ModelConnectionError)


async def test_l2_a_failed_reconnect_ends_the_run() -> None:
    model = ScriptedLiveModel(["one", EOFError()], connect_errors=[None, OSError("refused again")])
    with pytest.raises(LiveConnectError, match="could not reopen"):
        await live(runner_for(model), ["a", "b"], until=lambda e: False)
    assert len(model.connects) == 2


async def test_l2_reconnects_are_bounded() -> None:
    model = ScriptedLiveModel(["one", *[BrokenPipeError()] * 5])
    config = RunConfig(max_live_reconnects=2)
    with pytest.raises(LiveConnectError, match="dropped 3 times"):
        await live(
            runner_for(model),
            ["a", "b", "c", "d", "e", "f"],
            until=lambda e: False,
            run_config=config,
        )


async def test_l2_a_dropped_call_resumes_from_the_log_with_its_handle() -> None:
    first = ScriptedLiveModel([[LiveResponse(resumption_handle="h-7"), "hello"]])
    runner = runner_for(first)
    config = RunConfig(session_resumption=SessionResumptionConfig())
    await live(runner, ["hi"], until=final_text("hello"), run_config=config)
    second = ScriptedLiveModel(["welcome back"])
    runner.agent.model = second  # pyright: ignore[reportAttributeAccessIssue]
    await live(runner, ["again"], until=final_text("welcome back"), run_config=config)
    request, connect = second.connects[0]
    assert connect.resumption_handle == "h-7"
    assert [c.text for c in request.contents] == ["hi", "hello"]


async def test_l3_confirmation_pauses_inside_the_live_call() -> None:
    ran: list[int] = []

    def pay(amount: int) -> str:
        ran.append(amount)
        return f"paid {amount}"

    tool = FunctionTool(pay, require_confirmation=True)
    model = ScriptedLiveModel([FunctionCall(name="pay", args={"amount": 9}), "Paid."])
    runner = runner_for(model, tools=[tool])
    queue = LiveRequestQueue()
    queue.send_content(Content.user("pay 9"))
    events: list[Event] = []
    async for event in runner.run_live(user_id=USER, session_id=SESSION, live_request_queue=queue):
        events.append(event)
        if event.long_running_tool_ids:
            session = await runner.session_service.get_session(
                app_name=runner.app_name, user_id=USER, session_id=SESSION
            )
            assert session is not None
            (pending,) = session.pending
            assert pending.kind == "confirmation"
            assert pending.original_call is not None
            assert ran == []
            assert len(model.connections) == 1
            assert not model.connections[0].closed
            queue.send_content(Content(role="user", parts=[pending.approve()]))
        if final_text("Paid.")(event):
            queue.close()
    assert ran == [9]
    sent = [r.content for r in model.received if r.content is not None]
    answers = [p.function_response for c in sent for p in c.parts if p.function_response]
    assert [a.response for a in answers] == [{"result": "paid 9"}]
    session = await runner.session_service.get_session(
        app_name=runner.app_name, user_id=USER, session_id=SESSION
    )
    assert session is not None
    assert session.pending == []
    assert len(model.connects) == 1


async def test_l3_lifecycle_stream_for_a_live_call() -> None:
    model = ScriptedLiveModel(["Hi!", FunctionCall(name="add", args={"a": 1, "b": 2}), "3."])
    runner = runner_for(model)
    queue = LiveRequestQueue()
    queue.send_content(Content.user("hello"))
    queue.send_content(Content.user("add"))
    kinds: list[str] = []
    async for item in runner.stream_live(
        user_id=USER, session_id=SESSION, live_request_queue=queue
    ):
        kinds.append(item.type)
        if isinstance(item, ReasonEnd) and item.event is not None and item.event.text == "3.":
            queue.close()
    assert kinds[0] == RunStart.model_fields["type"].default
    assert kinds[-1] == RunEnd.model_fields["type"].default
    assert kinds.count(ReasonStart.model_fields["type"].default) == 2
    assert ReasonDelta.model_fields["type"].default in kinds
    assert "tool_call_start" in kinds
    assert "tool_call_end" in kinds
    assert HITLPending.model_fields["type"].default not in kinds


async def test_l1_scripted_live_model_says_when_its_script_ran_out() -> None:
    model = ScriptedLiveModel(["only"])
    with pytest.raises(ScriptExhaustedError, match="1 turns"):
        await live(runner_for(model), ["a", "b"], until=lambda e: False)


async def test_l3_save_live_blob_stores_the_turns_audio_as_artifacts() -> None:
    from rondo import Blob
    from rondo.artifacts.memory import InMemoryArtifactService
    from rondo.types import Part

    said = Blob(mime_type="audio/pcm;rate=24000", data=b"\x07\x08")
    model = ScriptedLiveModel(
        [[LiveResponse(content=Content(role="model", parts=[Part(inline_data=said)]))]]
    )
    artifacts = InMemoryArtifactService()
    runner = Runner(agent=Agent("bot", model=model), artifact_service=artifacts)
    queue = LiveRequestQueue()
    queue.send_realtime(Blob(mime_type="audio/pcm;rate=16000", data=b"\x01\x02\x03"))
    queue.send_activity_end()
    events: list[Event] = []
    config = RunConfig(save_live_blob=True)
    async for event in runner.run_live(
        user_id=USER, session_id=SESSION, live_request_queue=queue, run_config=config
    ):
        events.append(event)
        if event.turn_complete:
            queue.close()
    (final,) = [e for e in events if e.turn_complete]
    names = sorted(final.actions.artifact_delta)
    assert [n.rsplit("_", 1)[1] for n in names] == ["input.pcm", "output.pcm"]
    heard = await artifacts.load_artifact(
        app_name=runner.app_name, user_id=USER, session_id=SESSION, filename=names[0]
    )
    assert heard is not None
    assert heard.inline_data is not None
    assert heard.inline_data.data == b"\x01\x02\x03"
    spoken = await artifacts.load_artifact(
        app_name=runner.app_name, user_id=USER, session_id=SESSION, filename=names[1]
    )
    assert spoken is not None
    assert spoken.inline_data == said


async def test_l3_save_live_blob_without_an_artifact_service_is_a_configuration_error() -> None:
    runner = runner_for(ScriptedLiveModel(["x"]))
    with pytest.raises(ConfigurationError, match="artifact_service"):
        await live(runner, ["a"], until=lambda e: True, run_config=RunConfig(save_live_blob=True))


async def test_l3_spans_per_live_turn_and_tool_call() -> None:
    from tests._otel import sdk

    otel = sdk()
    otel.spans.clear()
    model = ScriptedLiveModel(["Hi.", FunctionCall(name="add", args={"a": 1, "b": 2}), "3."])
    runner = runner_for(model)
    await live(runner, ["hello", "add"], until=final_text("3."))
    spans = otel.finished()
    names = [s.name for s in spans]
    assert names.count("live_turn bot") == 2
    assert names.count("execute_tool add") == 1
    (agent,) = [s for s in spans if s.name == "invoke_agent bot"]
    for span in spans:
        if span.name in ("live_turn bot", "execute_tool add"):
            assert span.parent is not None
            assert span.parent.span_id == agent.context.span_id


async def test_20_a_turn_ends_as_in_google_adk_its_text_then_turn_complete() -> None:
    model = ScriptedLiveModel(
        [
            ["Hel", "lo."],
            # Gemini 2.5 Live completes the turn of a tool call before the call is answered.
            [FunctionCall(name="add", args={"a": 1, "b": 2}), LiveResponse(turn_complete=True)],
            "3.",
        ]
    )
    runner = runner_for(model)
    events = await live(runner, ["hi", "add"], until=final_text("3."))
    finals = [e for e in events if not e.partial]
    shapes = [
        "text " + e.text
        if e.text
        else "call"
        if e.get_function_calls()
        else "response"
        if e.get_function_responses()
        else "turn_complete"
        if e.turn_complete
        else "?"
        for e in finals
    ]
    assert shapes == [
        "text Hello.",
        "turn_complete",
        "call",
        "response",
        "turn_complete",
        "text 3.",
        "turn_complete",
    ]
    # The record that ends the turn holds no text: the text is the record before it.
    assert all(e.content is None for e in finals if e.turn_complete)
    log = await stored(runner)
    assert [e.turn_complete for e in log if e.turn_complete] == [True, True, True]


async def test_20_stream_live_shows_transcripts_and_a_pending_confirmation() -> None:
    def pay(amount: int) -> str:
        return f"paid {amount}"

    model = ScriptedLiveModel(
        [
            [
                LiveResponse(input_transcription=Transcription(text="pay ")),
                LiveResponse(input_transcription=Transcription(text="nine", finished=True)),
                LiveResponse(output_transcription=Transcription(text="Paying.", finished=True)),
                FunctionCall(name="pay", args={"amount": 9}),
            ],
        ]
    )
    runner = runner_for(model, tools=[FunctionTool(pay, require_confirmation=True)])
    queue = LiveRequestQueue()
    queue.send_activity_end()
    seen: list[Any] = []
    async for item in runner.stream_live(
        user_id=USER, session_id=SESSION, live_request_queue=queue
    ):
        seen.append(item)
        if isinstance(item, HITLPending):
            queue.close()
    transcripts = [(t.role, t.text, t.finished) for t in seen if isinstance(t, Transcript)]
    assert transcripts == [
        ("user", "pay ", False),
        ("user", "nine", False),
        ("user", "pay nine", True),
        ("model", "Paying.", False),
        ("model", "Paying.", True),
    ]
    (pending,) = [i for i in seen if isinstance(i, HITLPending)]
    assert [(p.tool_name, p.kind) for p in pending.pending] == [("pay", "confirmation")]
    # The pause came while the call was open: nothing ended the connection before it.
    assert len(model.connects) == 1


async def test_20_which_callbacks_fire_in_live_is_the_documented_table() -> None:
    """docs/live.md "Which callbacks fire in live", hook by hook, agent and plugin."""
    fired: list[str] = []

    class Every(Plugin):
        async def on_user_message(self, ctx: Any, message: Any) -> None:
            fired.append("plugin.on_user_message")

        async def before_run(self, ctx: Any) -> None:
            fired.append("plugin.before_run")

        async def after_run(self, ctx: Any) -> None:
            fired.append("plugin.after_run")

        async def on_event(self, ctx: Any, event: Any) -> None:
            fired.append("plugin.on_event")

        async def before_agent(self, ctx: Any) -> None:
            fired.append("plugin.before_agent")

        async def after_agent(self, ctx: Any) -> None:
            fired.append("plugin.after_agent")

        async def before_model(self, ctx: Any, request: Any) -> None:
            fired.append("plugin.before_model")

        async def after_model(self, ctx: Any, response: Any) -> None:
            fired.append("plugin.after_model")

        async def on_model_error(self, ctx: Any, request: Any, error: Any) -> None:
            fired.append("plugin.on_model_error")

        async def before_tool(self, tool: Any, args: Any, tool_context: Any) -> None:
            fired.append(f"plugin.before_tool {tool.name}")

        async def after_tool(self, tool: Any, args: Any, tool_context: Any, result: Any) -> None:
            fired.append(f"plugin.after_tool {tool.name}")

        async def on_tool_error(self, tool: Any, args: Any, tool_context: Any, error: Any) -> None:
            fired.append(f"plugin.on_tool_error {tool.name}")

    def fail() -> str:
        """Always fails."""
        raise ValueError("no")

    async def ticker() -> AsyncIterator[str]:
        yield "tick"

    model = ScriptedLiveModel(
        [
            FunctionCall(name="add", args={"a": 1, "b": 2}),
            "3.",
            FunctionCall(name="fail", args={}),
            FunctionCall(name="ticker", args={}),
            "done",
        ]
    )
    agent = Agent(
        "bot",
        model=model,
        tools=[add, fail, ticker],
        before_agent_callback=lambda ctx: fired.append("before_agent"),
        after_agent_callback=lambda ctx: fired.append("after_agent"),
        before_model_callback=lambda ctx, req: fired.append("before_model"),
        after_model_callback=lambda ctx, resp: fired.append("after_model"),
        on_model_error_callback=lambda ctx, req, err: fired.append("on_model_error"),
        before_tool_callback=lambda tool, args, tc: fired.append(f"before_tool {tool.name}"),
        after_tool_callback=lambda tool, args, tc, r: fired.append(f"after_tool {tool.name}"),
        on_tool_error_callback=lambda tool, args, tc, e: fired.append(f"on_tool_error {tool.name}"),
    )
    runner = Runner(agent=agent, plugins=[Every()])
    events = await live(runner, ["add", "fail"], until=final_text("done"))
    hooks = [f for f in fired if f != "plugin.on_event"]
    assert hooks == [
        "plugin.before_run",
        "plugin.before_agent",
        "before_agent",
        "plugin.before_tool add",
        "before_tool add",
        "plugin.after_tool add",
        "after_tool add",
        "plugin.before_tool fail",
        "before_tool fail",
        "plugin.on_tool_error fail",
        "on_tool_error fail",
        "plugin.after_tool fail",  # the error answered as the call's result, as in text mode
        "after_tool fail",
        "plugin.after_agent",
        "after_agent",
        "plugin.after_run",
    ]
    # on_event: once per event the call yields, partial pieces included.
    assert fired.count("plugin.on_event") == len(events)
