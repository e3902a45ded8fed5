"""SPEC D1: an interrupted invocation resumes from the session log with no new message.

The interruption here is in-process (the consumer stops, or its task is cancelled) at each
step boundary; tests/integration/test_d1_crash.py does the same with SIGKILL on SQL stores.
"""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from typing import Any

import pytest

from rondo import Agent, Event, FunctionCall, FunctionTool, Runner, ToolContext
from rondo.flow.contents import INTERRUPTED_CALL_ERROR
from rondo.flow.functions import INTERRUPTED_HOLD_ERROR
from rondo.resume import find_resume_point
from rondo.sessions.memory import InMemorySessionService
from rondo.testing import ScriptedModel

SCRIPT: list[Any] = [
    FunctionCall(name="charge", args={"amount": 5}, id="call-1"),
    FunctionCall(name="charge", args={"amount": 7}, id="call-2"),
    "done",
]


class Ledger:
    """A tool with a side effect that is exactly-once by its idempotency key."""

    def __init__(self) -> None:
        self.runs: list[str] = []  # every time the tool body ran, by call id
        self.charged: dict[str, int] = {}  # the effect, keyed by function_call_id

    def tool(self, *, idempotent: bool = True) -> FunctionTool:
        async def charge(amount: int, tool_context: ToolContext) -> dict[str, Any]:
            """Charge an amount."""
            key = tool_context.function_call_id or ""
            self.runs.append(key)
            self.charged.setdefault(key, amount)
            return {"charged": self.charged[key]}

        return FunctionTool(charge, idempotent=idempotent)


def make_runner(
    service: InMemorySessionService, model: ScriptedModel, tool: FunctionTool
) -> Runner:
    return Runner(
        agent=Agent(name="agent", model=model, tools=[tool]),
        app_name="app",
        session_service=service,
    )


async def run_until(runner: Runner, stop: int, message: str | None = "go") -> list[Event]:
    """Run and stop consuming after `stop` events (the run stops there, R7)."""
    seen: list[Event] = []
    async with aclosing(
        runner.run_async(user_id="u", session_id="s", new_message=message)
    ) as events:
        async for event in events:
            seen.append(event)
            if len(seen) >= stop:
                break
    return seen


async def resume(runner: Runner) -> list[Event]:
    return [e async for e in runner.run_async(user_id="u", session_id="s")]


async def stored(service: InMemorySessionService) -> list[Event]:
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    return list(session.events)


@pytest.mark.parametrize("stop", [1, 2, 3])
async def test_d1_resume_after_each_boundary_repeats_no_model_call_and_no_tool(
    stop: int,
) -> None:
    """Stopped after the model event (1), after its tool event (2), after the next model
    event (3): the resume completes the run with the remaining model calls only."""
    service = InMemorySessionService()
    ledger = Ledger()
    first = ScriptedModel(SCRIPT)
    before = await run_until(make_runner(service, first, ledger.tool()), stop)
    run_id = before[0].run_id
    invocation_id = before[0].invocation_id
    # A fresh process: a new model holding the rest of the script, the same tool effects.
    rest = ScriptedModel(SCRIPT[first.calls :])
    after = await resume(make_runner(service, rest, ledger.tool()))
    assert first.calls + rest.calls == 3  # every model call happened exactly once
    assert after[-1].text == "done"
    assert {e.run_id for e in after} == {run_id}
    assert {e.invocation_id for e in after} == {invocation_id}
    assert ledger.runs == ["call-1", "call-2"]  # stored results were not re-run
    events = await stored(service)
    assert [e.author for e in events] == ["user", *["agent"] * 5]
    assert sum(1 for e in events if e.author == "user") == 1  # no new user event


async def test_d1_in_flight_call_is_redispatched_with_the_same_call_id() -> None:
    """Cancelled while the tool runs: the resume runs it again under the same
    function_call_id, so a tool keyed by it has its effect exactly once."""
    service = InMemorySessionService()
    started = asyncio.Event()
    keys: list[str] = []
    effects: dict[str, int] = {}
    hang = True

    async def charge(amount: int, tool_context: ToolContext) -> dict[str, Any]:
        """Charge an amount."""
        key = tool_context.function_call_id or ""
        keys.append(key)
        effects.setdefault(key, amount)  # the side effect, idempotent by key
        if hang:
            started.set()
            await asyncio.Event().wait()
        return {"charged": effects[key]}

    model = ScriptedModel([SCRIPT[0], "done"])
    runner = make_runner(service, model, FunctionTool(charge))
    task = asyncio.ensure_future(
        resume_or_run(runner, "go")  # the first run, cancelled mid-tool
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    hang = False
    after = await resume(make_runner(service, ScriptedModel(["done"]), FunctionTool(charge)))
    assert keys == ["call-1", "call-1"]
    assert effects == {"call-1": 5}
    responses = after[0].get_function_responses()
    assert [r.id for r in responses] == ["call-1"]
    assert responses[0].response == {"charged": 5}
    assert after[-1].text == "done"


async def resume_or_run(runner: Runner, message: str | None) -> list[Event]:
    return [e async for e in runner.run_async(user_id="u", session_id="s", new_message=message)]


async def test_d1_model_call_in_flight_is_made_again() -> None:
    """Cancelled during the first model call: only the user's message is stored; the resume
    makes that call (it never completed) and does not store the message again."""
    service = InMemorySessionService()
    called = asyncio.Event()

    async def hang(_request: Any) -> str:
        called.set()
        await asyncio.Event().wait()
        return "never"

    runner = make_runner(service, ScriptedModel([hang]), Ledger().tool())
    task = asyncio.ensure_future(resume_or_run(runner, "go"))
    await called.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    model = ScriptedModel(["hello"])
    after = await resume(make_runner(service, model, Ledger().tool()))
    assert [e.text for e in after] == ["hello"]
    events = await stored(service)
    assert [e.author for e in events] == ["user", "agent"]
    assert events[1].invocation_id == events[0].invocation_id
    assert events[1].run_id == events[0].run_id
    # The request the resumed call sent is the one the interrupted call had.
    assert model.requests[0].contents[-1].text == "go"


async def test_d1_non_idempotent_call_pauses_instead_of_running_again() -> None:
    service = InMemorySessionService()
    ledger = Ledger()
    await run_until(make_runner(service, ScriptedModel(SCRIPT), ledger.tool(idempotent=False)), 1)
    paused = await resume(make_runner(service, ScriptedModel([]), ledger.tool(idempotent=False)))
    assert ledger.runs == []
    held = paused[0].get_function_responses()
    assert [(r.id, r.response) for r in held] == [("call-1", {"error": INTERRUPTED_HOLD_ERROR})]
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    [pending] = session.pending
    assert pending.kind == "confirmation"
    assert pending.original_call_id == "call-1"
    assert pending.run_id == paused[0].run_id
    return None


@pytest.mark.parametrize("decision", ["approve", "reject", "skip"])
async def test_d1_held_call_decisions(decision: str) -> None:
    """approve → the tool runs again (same call id); reject → it never runs; skip → the
    given result is recorded as its response, the tool is not called."""
    service = InMemorySessionService()
    ledger = Ledger()
    await run_until(make_runner(service, ScriptedModel(SCRIPT), ledger.tool(idempotent=False)), 1)
    await resume(make_runner(service, ScriptedModel([]), ledger.tool(idempotent=False)))
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    [pending] = session.pending
    part = {
        "approve": pending.approve(),
        "reject": pending.reject("no"),
        "skip": pending.skip({"charged": 5, "receipt": "r-1"}),
    }[decision]
    runner = make_runner(service, ScriptedModel(["ok"]), ledger.tool(idempotent=False))
    after = [e async for e in runner.run_async(user_id="u", session_id="s", new_message=[part])]
    assert after[-1].text == "ok"
    [answer] = after[0].get_function_responses()
    assert answer.id == "call-1"
    if decision == "approve":
        assert ledger.runs == ["call-1"]
        assert answer.response == {"charged": 5}
    elif decision == "reject":
        assert ledger.runs == []
        assert "rejected" in answer.response["error"]
    else:
        assert ledger.runs == []
        assert answer.response == {"result": {"charged": 5, "receipt": "r-1"}}


async def test_d1_a_new_message_answers_the_interrupted_calls_instead() -> None:
    """C6/G2: sending a message instead of resuming starts a new invocation; the model sees
    the interrupted call answered by the synthetic error, and the tool is not run."""
    service = InMemorySessionService()
    ledger = Ledger()
    await run_until(make_runner(service, ScriptedModel(SCRIPT), ledger.tool()), 1)
    model = ScriptedModel(["fine"])
    after = await resume_or_run(make_runner(service, model, ledger.tool()), "something else")
    assert after[-1].text == "fine"
    assert ledger.runs == []
    responses = [
        p.function_response
        for c in model.requests[0].contents
        for p in c.parts
        if p.function_response is not None
    ]
    assert [(r.id, r.response) for r in responses] == [
        ("call-1", {"error": INTERRUPTED_CALL_ERROR})
    ]


async def test_d1_a_finished_run_is_not_resumed() -> None:
    service = InMemorySessionService()
    await resume_or_run(make_runner(service, ScriptedModel(["hi"]), Ledger().tool()), "go")
    model = ScriptedModel(["again"])
    await resume(make_runner(service, model, Ledger().tool()))
    events = await stored(service)
    # An empty message on a finished run is a new invocation, as before (no resume point).
    assert events[-1].invocation_id != events[1].invocation_id


async def test_d1_resumed_lifecycle_stream_keeps_the_run_id_and_the_contract() -> None:
    from rondo.lifecycle import RunEnd, RunStart, ToolCallEnd
    from rondo.run_config import RunConfig
    from rondo.testing import check_stream

    service = InMemorySessionService()
    ledger = Ledger()
    before = await run_until(make_runner(service, ScriptedModel(SCRIPT), ledger.tool()), 1)
    runner = make_runner(service, ScriptedModel(SCRIPT[1:]), ledger.tool())
    stream = [
        e
        async for e in runner.stream_async(
            user_id="u", session_id="s", run_config=RunConfig(streaming_mode="none")
        )
    ]
    check_stream(stream)
    start = stream[0]
    assert isinstance(start, RunStart)
    assert start.resumed
    assert start.run_id == before[0].run_id
    assert [e.call_id for e in stream if isinstance(e, ToolCallEnd)] == ["call-1", "call-2"]
    end = stream[-1]
    assert isinstance(end, RunEnd)
    assert end.text == "done"


async def test_d1_parallel_calls_rerun_in_call_order_and_hold_only_the_non_idempotent() -> None:
    service = InMemorySessionService()
    ledger = Ledger()
    safe = ledger.tool()

    async def send(to: str, tool_context: ToolContext) -> str:
        """Send a message (not idempotent)."""
        ledger.runs.append(f"send:{tool_context.function_call_id}")
        return "sent"

    unsafe = FunctionTool(send, idempotent=False)
    calls = [
        FunctionCall(name="send", args={"to": "a"}, id="c-send"),
        FunctionCall(name="charge", args={"amount": 1}, id="c-charge"),
    ]

    def runner(model: ScriptedModel) -> Runner:
        return Runner(
            agent=Agent(name="agent", model=model, tools=[unsafe, safe]),
            app_name="app",
            session_service=service,
        )

    await run_until(runner(ScriptedModel([calls])), 1)
    paused = await resume(runner(ScriptedModel([])))
    assert ledger.runs == ["c-charge"]
    merged = paused[0].get_function_responses()
    assert [r.id for r in merged] == ["c-send", "c-charge"]  # call order (T2)
    assert merged[0].response == {"error": INTERRUPTED_HOLD_ERROR}
    assert merged[1].response == {"charged": 1}
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert [p.original_call_id for p in session.pending] == ["c-send"]


async def test_d1_a_confirmation_not_yet_requested_is_requested_on_resume() -> None:
    """Stopped after a tool event that asks for a confirmation, before the request was
    stored: the resume stores the request (the run pauses), it does not call the model."""
    service = InMemorySessionService()
    ran: list[str] = []

    def pay(amount: int) -> str:
        """Pay."""
        ran.append("pay")
        return "paid"

    tool = FunctionTool(pay, require_confirmation=True)
    call = FunctionCall(name="pay", args={"amount": 3}, id="c-pay")
    runner = make_runner(service, ScriptedModel([call]), tool)
    await run_until(runner, 2)  # the model event and the "confirmation required" response
    model = ScriptedModel([])
    resumed = await resume(make_runner(service, model, tool))
    assert model.calls == 0
    assert ran == []
    [request] = resumed
    assert request.get_function_calls()[0].name == "adk_request_confirmation"
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert [p.original_call_id for p in session.pending] == ["c-pay"]


def pipeline(
    service: InMemorySessionService, ledger: Ledger, first: Any, second: Any, *, charging: str
) -> Runner:
    """A sequence `first` → `second`; the agent named `charging` has the ledger's tool."""
    from rondo import SequentialAgent

    return Runner(
        agent=SequentialAgent(
            name="pipeline",
            sub_agents=[
                Agent(
                    name=name,
                    model=model,
                    tools=[ledger.tool()] if name == charging else [],
                )
                for name, model in (("first", first), ("second", second))
            ],
        ),
        app_name="app",
        session_service=service,
    )


async def test_d1_resume_inside_a_sequence_continues_it_and_runs_the_agents_after() -> None:
    service = InMemorySessionService()
    ledger = Ledger()
    first = ScriptedModel([FunctionCall(name="charge", args={"amount": 5}, id="call-1"), "paid"])
    second = ScriptedModel(["receipt sent"])
    runner = pipeline(service, ledger, first, second, charging="first")
    seen = await run_until(runner, 1)  # the model's call is stored; the tool never ran
    assert seen[0].get_function_calls()[0].id == "call-1"
    assert ledger.runs == []
    resumed = [e async for e in runner.run_async(user_id="u", session_id="s")]
    # `first` continues where it stopped, then `second` runs, as in an uninterrupted run.
    assert [(e.author, e.text) for e in resumed] == [
        ("first", ""),
        ("first", "paid"),
        ("second", "receipt sent"),
    ]
    assert ledger.runs == ["call-1"]
    assert first.calls == 2
    assert second.calls == 1
    assert {e.invocation_id for e in resumed} == {seen[0].invocation_id}


async def test_d1_resume_in_a_later_agent_of_a_sequence_does_not_rerun_the_earlier_ones() -> None:
    service = InMemorySessionService()
    ledger = Ledger()
    first = ScriptedModel(["planned"])
    second = ScriptedModel([FunctionCall(name="charge", args={"amount": 7}, id="call-2"), "ok"])
    runner = pipeline(service, ledger, first, second, charging="second")
    seen = await run_until(runner, 2)  # first's answer, second's call; the tool never ran
    assert [e.author for e in seen] == ["first", "second"]
    resumed = [e async for e in runner.run_async(user_id="u", session_id="s")]
    assert [(e.author, e.text) for e in resumed] == [("second", ""), ("second", "ok")]
    assert first.calls == 1  # not run again
    assert ledger.runs == ["call-2"]


async def test_d1_resume_inside_a_loop_keeps_its_round_count() -> None:
    from rondo import LoopAgent

    service = InMemorySessionService()
    ledger = Ledger()
    # Each round: `work` charges, `check` answers. Two rounds at most.
    work = ScriptedModel(
        [
            FunctionCall(name="charge", args={"amount": 1}, id="r1"),
            "worked 1",
            FunctionCall(name="charge", args={"amount": 2}, id="r2"),
            "worked 2",
        ]
    )
    check = ScriptedModel(["checked 1", "checked 2", "checked 3"])
    runner = Runner(
        agent=LoopAgent(
            name="loop",
            max_iterations=2,
            sub_agents=[
                Agent(name="work", model=work, tools=[ledger.tool()]),
                Agent(name="check", model=check),
            ],
        ),
        app_name="app",
        session_service=service,
    )
    # Round 1 completes; round 2 stops after `work`'s call is stored.
    seen = await run_until(runner, 5)
    assert [e.text for e in seen][-2:] == ["checked 1", ""]
    resumed = [e async for e in runner.run_async(user_id="u", session_id="s")]
    assert [(e.author, e.text) for e in resumed] == [
        ("work", ""),
        ("work", "worked 2"),
        ("check", "checked 2"),
    ]  # round 2 finishes and the loop stops at max_iterations=2
    assert ledger.runs == ["r1", "r2"]
    assert check.calls == 2


async def test_d1_a_cut_between_two_agents_of_a_sequence_runs_the_next_one() -> None:
    service = InMemorySessionService()
    first = ScriptedModel(["planned"])
    second = ScriptedModel(["receipt sent"])
    runner = pipeline(service, Ledger(), first, second, charging="")
    seen = await run_until(runner, 1)  # first's final answer stored; second never started
    assert [(e.author, e.text) for e in seen] == [("first", "planned")]
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    point = find_resume_point(session.events, session.pending, runner.agent)
    assert point is not None
    assert (point.boundary, point.agent_name) == ("after_agent", "first")

    resumed = [e async for e in runner.run_async(user_id="u", session_id="s")]
    assert [(e.author, e.text) for e in resumed] == [("second", "receipt sent")]
    assert first.calls == 1  # finished: not run again
    assert {e.invocation_id for e in resumed} == {seen[0].invocation_id}
    # Finished now: an empty message finds nothing to resume.
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert find_resume_point(session.events, session.pending, runner.agent) is None


async def test_d1_a_cut_at_the_end_of_an_inner_sequence_goes_on_in_the_outer_one() -> None:
    from rondo import SequentialAgent

    service = InMemorySessionService()
    models = {name: ScriptedModel([f"{name} done"]) for name in ("a", "x", "b")}
    inner = SequentialAgent(
        name="inner", sub_agents=[Agent(name=n, model=models[n]) for n in ("a", "x")]
    )
    outer = SequentialAgent(name="outer", sub_agents=[inner, Agent(name="b", model=models["b"])])
    runner = Runner(agent=outer, app_name="app", session_service=service)
    await run_until(runner, 2)  # a and x answered: the inner sequence is done, b not started
    resumed = [e async for e in runner.run_async(user_id="u", session_id="s")]
    assert [(e.author, e.text) for e in resumed] == [("b", "b done")]
    assert (models["a"].calls, models["x"].calls) == (1, 1)


async def test_d1_a_sequence_waiting_on_an_answer_is_not_cut() -> None:
    from rondo import SequentialAgent

    service = InMemorySessionService()

    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    asking = Agent(
        name="asking",
        model=ScriptedModel([FunctionCall(name="pay", args={"amount": 1}, id="c1")]),
        tools=[FunctionTool(pay, require_confirmation=True)],
    )
    after = Agent(name="after", model=ScriptedModel(["after"]))
    runner = Runner(
        agent=SequentialAgent(name="pipeline", sub_agents=[asking, after]),
        app_name="app",
        session_service=service,
    )
    await resume_or_run(runner, "go")
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert session.pending  # paused (H3), not cut
    assert find_resume_point(session.events, session.pending, runner.agent) is None


async def test_d1_a_cut_after_an_agent_inside_a_loop_runs_the_rest_of_the_loop() -> None:
    from rondo import LoopAgent

    service = InMemorySessionService()
    first = ScriptedModel(["a1", "a2"])
    second = ScriptedModel(["b1", "b2"])
    runner = Runner(
        agent=LoopAgent(
            name="loop",
            max_iterations=2,
            sub_agents=[Agent(name="a", model=first), Agent(name="b", model=second)],
        ),
        app_name="app",
        session_service=service,
    )
    seen = await run_until(runner, 2)  # round 1 done: "a1", "b1"; round 2 never started
    assert [e.text for e in seen] == ["a1", "b1"]
    resumed = [e async for e in runner.run_async(user_id="u", session_id="s")]
    assert [(e.author, e.text) for e in resumed] == [("a", "a2"), ("b", "b2")]
    # Cut right after "a" in the last round: only "b" is left, then the loop is done.
    service2 = InMemorySessionService()
    runner2 = Runner(
        agent=LoopAgent(
            name="loop",
            max_iterations=1,
            sub_agents=[
                Agent(name="a", model=ScriptedModel(["a1"])),
                Agent(name="b", model=ScriptedModel(["b1"])),
            ],
        ),
        app_name="app",
        session_service=service2,
    )
    assert [e.text for e in await run_until(runner2, 1)] == ["a1"]
    rest = [e async for e in runner2.run_async(user_id="u", session_id="s")]
    assert [(e.author, e.text) for e in rest] == [("b", "b1")]
    # Finished now: nothing to resume.
    session = await service2.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert find_resume_point(session.events, session.pending, runner2.agent) is None


def hanging() -> Any:
    """A model response that never comes (the process dies while it is awaited)."""

    async def hang(_request: Any) -> str:
        await asyncio.Event().wait()
        return "never"

    return hang


async def test_d1_resume_loop_cut_after_subagent_final() -> None:
    """Issue 18: a loop whose round ends with a sequence is re-entered after that sequence
    (it is done: the next round starts, counted from the log), and a loop that escalated
    is done, so the sequence around it goes on."""
    from rondo import LoopAgent, SequentialAgent
    from rondo.tools import exit_loop

    service = InMemorySessionService()
    models = {n: ScriptedModel([f"{n}1", f"{n}2"]) for n in ("a", "x")}
    inner = SequentialAgent(
        name="inner", sub_agents=[Agent(name=n, model=models[n]) for n in ("a", "x")]
    )
    runner = Runner(
        agent=LoopAgent(name="loop", max_iterations=2, sub_agents=[inner]),
        app_name="app",
        session_service=service,
    )
    assert [e.text for e in await run_until(runner, 2)] == ["a1", "x1"]  # round 1 done
    resumed = [e async for e in runner.run_async(user_id="u", session_id="s")]
    assert [(e.author, e.text) for e in resumed] == [("a", "a2"), ("x", "x2")]
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert find_resume_point(session.events, session.pending, runner.agent) is None

    service2 = InMemorySessionService()
    after = ScriptedModel(["after"])
    stopper = Agent(
        name="stopper",
        model=ScriptedModel([FunctionCall(name="exit_loop", args={}, id="x1")]),
        tools=[exit_loop],
    )
    runner2 = Runner(
        agent=SequentialAgent(
            name="seq",
            sub_agents=[
                LoopAgent(name="loop", max_iterations=5, sub_agents=[stopper]),
                Agent(name="after", model=after),
            ],
        ),
        app_name="app",
        session_service=service2,
    )
    seen = await run_until(runner2, 2)  # the call, then the escalating tool response
    assert seen[-1].actions.escalate
    rest = [e async for e in runner2.run_async(user_id="u", session_id="s")]
    assert [(e.author, e.text) for e in rest] == [("after", "after")]


async def test_d1_resume_parallel_cut_after_subagent_final() -> None:
    """Issue 18: a parallel agent cut right after one branch's final answer runs the
    branches that did not finish (not the finished one), then the workflow after it; cut
    after its last branch finished, the workflow goes on after it."""
    from rondo import ParallelAgent, SequentialAgent

    def build(service: InMemorySessionService, models: dict[str, Any]) -> Runner:
        fan = ParallelAgent(
            name="fan", sub_agents=[Agent(name=n, model=models[n]) for n in ("a", "b", "c")]
        )
        return Runner(
            agent=SequentialAgent(name="seq", sub_agents=[fan, Agent(name="d", model=models["d"])]),
            app_name="app",
            session_service=service,
        )

    service = InMemorySessionService()
    first = {
        "a": ScriptedModel(["a done"]),
        "b": ScriptedModel([hanging()]),
        "c": ScriptedModel([hanging()]),
        "d": ScriptedModel(["never"]),
    }
    seen = await run_until(build(service, first), 1)  # a answered; b and c in flight
    assert [(e.author, e.text) for e in seen] == [("a", "a done")]
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    point = find_resume_point(session.events, session.pending, build(service, first).agent)
    assert point is not None
    assert (point.boundary, point.agent_name, point.done) == ("after_agent", "a", ("a",))

    second = {n: ScriptedModel([f"{n} done"]) for n in ("a", "b", "c", "d")}
    resumed = [e async for e in build(service, second).run_async(user_id="u", session_id="s")]
    assert sorted((e.author, e.text) for e in resumed[:2]) == [("b", "b done"), ("c", "c done")]
    assert [(e.author, e.text) for e in resumed[2:]] == [("d", "d done")]
    assert second["a"].calls == 0  # finished: not run again
    assert {e.branch for e in resumed[:2]} == {"fan.b", "fan.c"}
    assert {e.invocation_id for e in resumed} == {seen[0].invocation_id}
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert find_resume_point(session.events, session.pending, build(service, second).agent) is None

    # Every branch finished, `d` never started: only `d` runs.
    service2 = InMemorySessionService()
    models = {n: ScriptedModel([f"{n} done"]) for n in ("a", "b", "c", "d")}
    assert len(await run_until(build(service2, models), 3)) == 3
    rest = [e async for e in build(service2, models).run_async(user_id="u", session_id="s")]
    assert [(e.author, e.text) for e in rest] == [("d", "d done")]
    assert [models[n].calls for n in ("a", "b", "c", "d")] == [1, 1, 1, 1]


async def test_d1_resume_parallel_in_a_loop_cut_after_subagent_final() -> None:
    """A loop of one parallel agent, cut after its first round: the next round runs both
    branches, and the loop stops at max_iterations (the round counted once, not per branch)."""
    from rondo import LoopAgent, ParallelAgent

    service = InMemorySessionService()
    models = {n: ScriptedModel([f"{n}1", f"{n}2", f"{n}3"]) for n in ("a", "b")}
    runner = Runner(
        agent=LoopAgent(
            name="loop",
            max_iterations=2,
            sub_agents=[
                ParallelAgent(
                    name="fan", sub_agents=[Agent(name=n, model=models[n]) for n in ("a", "b")]
                )
            ],
        ),
        app_name="app",
        session_service=service,
    )
    assert sorted(e.text for e in await run_until(runner, 2)) == ["a1", "b1"]
    resumed = [e async for e in runner.run_async(user_id="u", session_id="s")]
    assert sorted(e.text for e in resumed) == ["a2", "b2"]
    assert (models["a"].calls, models["b"].calls) == (2, 2)
