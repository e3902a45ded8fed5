"""SPEC H: human-in-the-loop confirmation, pause and resume."""

from __future__ import annotations

from typing import Any

from rondo import Agent, Content, Event, FunctionCall, FunctionTool, Part, Runner, ToolContext
from rondo.lifecycle import HITLDecided, HITLPending, RunEnd, ToolCallEnd
from rondo.testing import ScriptedModel, check_stream


def _bank(model: ScriptedModel, log: list[int]) -> Runner:
    def transfer_money(amount: int) -> dict[str, Any]:
        """Send money."""
        log.append(amount)
        return {"ok": True, "amount": amount}

    agent = Agent(
        name="bank",
        model=model,
        tools=[FunctionTool(transfer_money, require_confirmation=True)],
    )
    return Runner(agent=agent, app_name="app")


async def _records(runner: Runner, message: Any, session_id: str = "s") -> list[Event]:
    return [
        e async for e in runner.run_async(user_id="u", session_id=session_id, new_message=message)
    ]


async def test_h1_confirmation_request_pauses_the_run() -> None:
    log: list[int] = []
    model = ScriptedModel([FunctionCall(name="transfer_money", args={"amount": 5}, id="call-1")])
    runner = _bank(model, log)
    events = await _records(runner, "send 5")

    assert [e.author for e in events] == ["bank", "bank", "bank"]
    call_event, response_event, confirm_event = events
    assert call_event.get_function_calls()[0].id == "call-1"
    # The tool's response comes first: the confirmation-required error, skip_summarization.
    response = response_event.get_function_responses()[0]
    assert response.id == "call-1"
    assert response.response == {"error": "confirmation required"}
    assert "call-1" in response_event.actions.requested_tool_confirmations
    assert response_event.actions.skip_summarization is True
    # Then the adk_request_confirmation call: a new id, long-running, the original call in args.
    confirm = confirm_event.get_function_calls()[0]
    assert confirm.name == "adk_request_confirmation"
    assert confirm.id
    assert confirm.id != "call-1"
    assert confirm_event.long_running_tool_ids == {confirm.id}
    assert confirm.args["originalFunctionCall"] == {
        "id": "call-1",
        "name": "transfer_money",
        "args": {"amount": 5},
    }
    assert confirm.args["toolConfirmation"]["confirmed"] is False
    assert "hint" in confirm.args["toolConfirmation"]
    assert confirm_event.is_final_response()
    assert log == []  # nothing ran
    assert model.calls == 1  # the run paused instead of calling the model again


async def test_h2_approval_re_dispatches_the_original_call_once() -> None:
    log: list[int] = []
    model = ScriptedModel(
        [FunctionCall(name="transfer_money", args={"amount": 5}, id="call-1"), "sent", "again"]
    )
    runner = _bank(model, log)
    first = await _records(runner, "send 5")
    confirm_id = first[-1].get_function_calls()[0].id
    answer = Part.model_validate(
        {
            "function_response": {
                "name": "adk_request_confirmation",
                "id": confirm_id,
                "response": {"confirmed": True},
            }
        }
    )
    second = await _records(runner, [answer])
    assert log == [5]
    tool_event = second[0]
    assert tool_event.get_function_responses()[0].id == "call-1"
    assert tool_event.get_function_responses()[0].response == {"ok": True, "amount": 5}
    assert second[-1].text == "sent"
    # The confirmation protocol never reaches the model (C4).
    names = {
        p.function_call.name
        for c in model.requests[1].contents
        for p in c.parts
        if p.function_call is not None
    }
    assert "adk_request_confirmation" not in names
    # A client that re-sends the same approval does not run the tool twice.
    await _records(runner, [answer])
    assert log == [5]


async def test_h2_refusal_never_reaches_the_handler() -> None:
    log: list[int] = []
    model = ScriptedModel(
        [FunctionCall(name="transfer_money", args={"amount": 5}, id="call-1"), "ok, cancelled"]
    )
    runner = _bank(model, log)
    first = await _records(runner, "send 5")
    pending = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert pending is not None
    second = await _records(runner, [pending.pending[0].reject("too much")])
    assert log == []
    refusal = second[0].get_function_responses()[0]
    assert refusal.id == "call-1"
    assert "rejected" in refusal.response["error"]
    assert "too much" in refusal.response["error"]
    assert first[-1].get_function_calls()[0].name == "adk_request_confirmation"


async def test_h2_only_the_latest_user_message_counts() -> None:
    log: list[int] = []
    model = ScriptedModel(
        [FunctionCall(name="transfer_money", args={"amount": 5}, id="call-1"), "hello"]
    )
    runner = _bank(model, log)
    await _records(runner, "send 5")
    # New user text instead of an answer: the old request is not approved by it.
    await _records(runner, "actually, never mind")
    assert log == []


async def test_h2_a_tool_asking_itself_sees_the_confirmation() -> None:
    seen: list[Any] = []

    def delete_file(path: str, tool_context: ToolContext) -> dict[str, Any]:
        """Delete a file after asking."""
        if tool_context.tool_confirmation is None:
            tool_context.request_confirmation(hint=f"delete {path}?", payload={"path": path})
            return {"status": "waiting for approval"}
        seen.append(tool_context.tool_confirmation)
        return {"deleted": tool_context.tool_confirmation.confirmed}

    model = ScriptedModel([FunctionCall(name="delete_file", args={"path": "/tmp/x"}), "done"])
    runner = Runner(agent=Agent(name="fs", model=model, tools=[delete_file]), app_name="app")
    first = await _records(runner, "delete it")
    # Its own return value is the recorded response.
    assert first[1].get_function_responses()[0].response == {"status": "waiting for approval"}
    confirm = first[2].get_function_calls()[0]
    assert confirm.args["toolConfirmation"]["hint"] == "delete /tmp/x?"
    assert confirm.args["toolConfirmation"]["payload"] == {"path": "/tmp/x"}
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    await _records(runner, [session.pending[0].approve({"path": "/tmp/x"})])
    assert len(seen) == 1
    assert seen[0].confirmed is True
    assert seen[0].payload == {"path": "/tmp/x"}


async def test_h3_pending_is_visible_and_resume_keeps_the_run_id() -> None:
    log: list[int] = []
    model = ScriptedModel(
        [FunctionCall(name="transfer_money", args={"amount": 7}, id="call-1"), "sent 7"]
    )
    runner = _bank(model, log)
    paused = [
        e async for e in runner.stream_async(user_id="u", session_id="s", new_message="send 7")
    ]
    check_stream(paused)
    assert any(isinstance(e, HITLPending) for e in paused)
    end = paused[-1]
    assert isinstance(end, RunEnd)
    assert end.is_abnormal is False
    assert [p.tool_name for p in end.pending] == ["transfer_money"]
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert len(session.pending) == 1
    pending = session.pending[0]
    assert pending.kind == "confirmation"
    assert pending.args == {"amount": 7}

    resumed = [
        e
        async for e in runner.stream_async(
            user_id="u", session_id="s", new_message=[pending.approve()]
        )
    ]
    check_stream(resumed)
    assert resumed[0].run_id == paused[0].run_id
    decided = [e for e in resumed if isinstance(e, HITLDecided)]
    assert [(d.decision, d.call_id, d.tool_name) for d in decided] == [
        ("approve", "call-1", "transfer_money")
    ]
    # Solon order on resume: decisions first, then the action, without a new reason first.
    kinds = [e.type for e in resumed]
    assert kinds.index("hitl_decided") < kinds.index("action_start") < kinds.index("reason_start")
    assert log == [7]
    after = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert after is not None
    assert after.pending == []


async def test_h3_skip_records_the_observation_without_calling_the_tool() -> None:
    log: list[int] = []
    model = ScriptedModel(
        [FunctionCall(name="transfer_money", args={"amount": 9}, id="call-1"), "skipped"]
    )
    runner = _bank(model, log)
    await _records(runner, "send 9")
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    events = [
        e
        async for e in runner.stream_async(
            user_id="u",
            session_id="s",
            new_message=[session.pending[0].skip({"note": "done by hand"})],
        )
    ]
    check_stream(events)
    assert log == []
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert ends[0].result == {"result": {"note": "done by hand"}}
    decided = next(e for e in events if isinstance(e, HITLDecided))
    assert decided.decision == "skip"


async def test_h3_empty_message_resumes_the_same_run() -> None:
    model = ScriptedModel(
        [FunctionCall(name="transfer_money", args={"amount": 3}, id="call-1"), "sent 3"]
    )
    log: list[int] = []
    runner = _bank(model, log)
    first = await _records(runner, "send 3")
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    # Another component stores the human's decision; the client resumes with no message.
    answer = Event(
        author="user", content=Content(role="user", parts=[session.pending[0].approve()])
    )
    await runner.session_service.append_event(session, answer)
    second = await _records(runner, None)
    assert log == [3]
    assert second[0].run_id == first[0].run_id


async def test_h1_a_pause_has_the_solon_shape_without_a_tool_call_that_never_started() -> None:
    """Seed 002 §6.B: ReasonEnd → HITLPending → RunEnd; no ActionStart, ToolCallStart,
    ToolCallEnd or ActionEnd for the call that waits (the records keep H1's shape)."""
    log: list[int] = []
    model = ScriptedModel(
        [FunctionCall(name="transfer_money", args={"amount": 4}, id="call-1"), "sent 4"]
    )
    runner = _bank(model, log)
    paused = [
        e async for e in runner.stream_async(user_id="u", session_id="s", new_message="send 4")
    ]
    check_stream(paused)
    assert [e.type for e in paused] == [
        "run_start",
        "context_size",
        "reason_start",
        "reason_end",
        "hitl_pending",
        "run_end",
    ]
    pending = paused[4]
    assert isinstance(pending, HITLPending)
    (waiting,) = pending.pending
    # The confirmation id and the original call id, side by side.
    assert waiting.call_id != "call-1"
    assert waiting.original_call_id == "call-1"
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert len(session.events) == 4  # user, call, "confirmation required", confirmation call

    resumed = [
        e
        async for e in runner.stream_async(
            user_id="u", session_id="s", new_message=[session.pending[0].approve()]
        )
    ]
    check_stream(resumed)
    assert [e.type for e in resumed][:6] == [
        "run_start",
        "hitl_decided",
        "action_start",
        "tool_call_start",
        "tool_call_end",
        "action_end",
    ]
    decided = resumed[1]
    assert isinstance(decided, HITLDecided)
    assert decided.call_id == waiting.original_call_id
    # The call starts once, on resume.
    starts = [e for e in [*paused, *resumed] if e.type == "tool_call_start"]
    assert [s.call_id for s in starts] == ["call-1"]
    assert log == [4]


async def test_h1_in_a_mixed_batch_only_the_waiting_call_is_left_out() -> None:
    ran: list[str] = []

    def lookup(account: str) -> dict[str, Any]:
        """Reads an account."""
        ran.append(account)
        return {"balance": 10}

    def transfer_money(amount: int) -> dict[str, Any]:
        """Send money."""
        ran.append(str(amount))
        return {"ok": True}

    model = ScriptedModel(
        [
            [
                FunctionCall(name="lookup", args={"account": "a"}, id="read"),
                FunctionCall(name="transfer_money", args={"amount": 2}, id="pay"),
            ],
        ]
    )
    agent = Agent(
        name="bank",
        model=model,
        tools=[lookup, FunctionTool(transfer_money, require_confirmation=True)],
    )
    runner = Runner(agent=agent, app_name="app")
    events = [e async for e in runner.stream_async(user_id="u", session_id="s", new_message="x")]
    check_stream(events)
    tool_events = [e for e in events if e.type in ("tool_call_start", "tool_call_end")]
    assert [(e.type, e.call_id) for e in tool_events] == [
        ("tool_call_start", "read"),
        ("tool_call_end", "read"),
    ]
    kinds = [e.type for e in events]
    assert kinds.index("action_end") < kinds.index("hitl_pending") < kinds.index("run_end")
    assert ran == ["a"]
