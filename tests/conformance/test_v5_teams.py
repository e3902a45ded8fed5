"""SPEC V5 (teams and harness), T7 (agent as tool), C2 (isolation scope), S3 (finish_task)."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from rondo import Agent, AgentTool, FunctionCall, Harness, Runner, Team
from rondo.lifecycle import (
    NodeEnd,
    NodeStart,
    ReasonDelta,
    ReasonEnd,
    RunEnd,
    RunStart,
    TaskEvent,
    ToolCallEnd,
)
from rondo.models import ModelRequest, ModelResponse
from rondo.testing import ScriptedModel, check_stream
from rondo.tools.agent_tool import NO_REPLIES
from rondo.types import Content, Part


async def _stream(runner: Runner, text: str) -> list[Any]:
    events = [e async for e in runner.stream_async(user_id="u", session_id="s", new_message=text)]
    check_stream(events)
    return events


async def test_v5_sequential_team_frames_each_member_with_nodes() -> None:
    writer = Agent(name="writer", model=ScriptedModel(["draft"]))
    editor_m = ScriptedModel(["edited draft"])
    editor = Agent(name="editor", model=editor_m)
    team = Team(name="desk", members=[writer, editor])
    events = await _stream(Runner(agent=team, app_name="app"), "write a story")
    frames = [(type(e).__name__, e.node) for e in events if isinstance(e, NodeStart | NodeEnd)]
    assert frames == [
        ("NodeStart", "writer"),
        ("NodeEnd", "writer"),
        ("NodeStart", "editor"),
        ("NodeEnd", "editor"),
    ]
    node_events = [e for e in events if isinstance(e, NodeStart | NodeEnd)]
    assert {e.agent_name for e in node_events} == {"desk"}
    assert {e.run_id for e in node_events} == {events[0].run_id}
    ends = [e for e in events if isinstance(e, NodeEnd)]
    assert [e.text for e in ends] == ["draft", "edited draft"]
    # Members' own events flow through and carry their node.
    reason_ends = [e for e in events if isinstance(e, ReasonEnd)]
    assert [(e.agent_name, e.node) for e in reason_ends] == [
        ("writer", "writer"),
        ("editor", "editor"),
    ]
    # The second member sees the first one's answer as context.
    seen = " ".join(p.text or "" for c in editor_m.requests[0].contents for p in c.parts)
    assert "[writer] said: draft" in seen
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert end.text == "edited draft"


async def test_v5_parallel_members_interleave_and_stay_attributable() -> None:
    fast_started = asyncio.Event()
    fast_finished = asyncio.Event()

    async def slow(request: ModelRequest) -> list[ModelResponse]:
        await fast_started.wait()
        await fast_finished.wait()
        return [ModelResponse(content=Content.model("slow part"), partial=True)]

    def fast(request: ModelRequest) -> list[ModelResponse]:
        fast_started.set()
        return [
            ModelResponse(content=Content.model("fast "), partial=True),
            ModelResponse(content=Content.model("part"), partial=True),
        ]

    def fast_done(ctx: Any) -> None:
        fast_finished.set()

    team = Team(
        name="crew",
        mode="parallel",
        members=[
            Agent(name="slow", model=ScriptedModel([slow])),
            Agent(name="fast", model=ScriptedModel([fast]), after_agent_callback=fast_done),
        ],
    )
    events = await _stream(Runner(agent=team, app_name="app"), "go")
    starts = [e.node for e in events if isinstance(e, NodeStart)]
    assert starts == ["slow", "fast"]
    ends = [e.node for e in events if isinstance(e, NodeEnd)]
    assert ends == ["fast", "slow"]  # interleaved, not nested
    deltas = [e for e in events if isinstance(e, ReasonDelta) and e.kind == "text_delta"]
    assert {(d.agent_name, d.node) for d in deltas} == {("fast", "fast"), ("slow", "slow")}
    for event in events:
        if isinstance(event, ReasonDelta | ReasonEnd):
            assert event.node == event.agent_name


async def test_v5_supervisor_routes_to_members() -> None:
    researcher = Agent(name="researcher", model=ScriptedModel(["facts: water boils at 100C"]))
    sup_model = ScriptedModel(
        [
            FunctionCall(name="researcher", args={"request": "find the boiling point"}),
            "Water boils at 100C.",
        ]
    )
    team = Team(name="lab", mode="supervisor", model=sup_model, members=[researcher])
    events = await _stream(Runner(agent=team, app_name="app"), "when does water boil?")
    starts = [e for e in events if isinstance(e, NodeStart)]
    assert [(e.node, e.agent_name) for e in starts] == [("researcher", "lab")]
    member_ends = [e for e in events if isinstance(e, ReasonEnd) and e.agent_name == "researcher"]
    assert member_ends[0].node == "researcher"
    supervisor_ends = [
        e for e in events if isinstance(e, ReasonEnd) and e.agent_name != "researcher"
    ]
    assert {e.node for e in supervisor_ends} == {"supervisor"}
    tool_end = next(e for e in events if isinstance(e, ToolCallEnd))
    assert tool_end.result == {"result": "facts: water boils at 100C"}
    assert isinstance(events[-1], RunEnd)
    assert events[-1].text == "Water boils at 100C."


async def test_v5_harness_task_events_are_wrapped_with_parent_correlation() -> None:
    helper = Agent(name="helper", description="does sums", model=ScriptedModel(["42"]))
    main_m = ScriptedModel(
        [
            FunctionCall(
                name="task",
                args={"agent_name": "helper", "description": "sum", "prompt": "6 * 7?"},
            ),
            "The answer is 42.",
        ]
    )
    harness = Harness("lead", main_m, agents=[helper])
    events = await _stream(Runner(agent=harness, app_name="app"), "what is 6*7?")
    wrapped = [e for e in events if isinstance(e, TaskEvent)]
    assert wrapped
    run_id = events[0].run_id
    assert {w.parent_run_id for w in wrapped} == {run_id}
    assert {w.task_index for w in wrapped} == {1}
    assert {w.is_multitask for w in wrapped} == {False}
    assert len({w.task_id for w in wrapped}) == 1
    child_run_ids = {w.event.run_id for w in wrapped}
    assert run_id not in child_run_ids  # the sub-agent has its own run id
    assert wrapped[0].event.type == "run_start"
    assert wrapped[-1].event.type == "run_end"
    # The wrapped child events sit inside the parent's task call.
    kinds = [e.type for e in events]
    first = kinds.index("task_event")
    assert kinds.index("tool_call_start") < first < kinds.index("tool_call_end")
    tool_end = next(e for e in events if isinstance(e, ToolCallEnd))
    assert tool_end.result is not None
    assert tool_end.result["result"] == "42"
    # The unwrapped RunEnd is the parent's.
    assert isinstance(events[-1], RunEnd)
    assert events[-1].text == "The answer is 42."


async def test_v5_multitask_runs_concurrently_and_a_failure_is_a_result() -> None:
    gate = asyncio.Event()

    async def first(request: ModelRequest) -> str:
        await gate.wait()
        return "first done"

    def second(request: ModelRequest) -> str:
        gate.set()
        return "second done"

    broken = Agent(name="broken", model=ScriptedModel([RuntimeError("model down")]))
    main_m = ScriptedModel(
        [
            FunctionCall(
                name="multitask",
                args={
                    "tasks": [
                        {"agent_name": "one", "prompt": "a"},
                        {"agent_name": "two", "prompt": "b"},
                        {"agent_name": "broken", "prompt": "c"},
                    ]
                },
            ),
            "all done",
        ]
    )
    harness = Harness(
        "lead",
        main_m,
        agents=[
            Agent(name="one", model=ScriptedModel([first])),
            Agent(name="two", model=ScriptedModel([second])),
            broken,
        ],
    )
    events = await _stream(Runner(agent=harness, app_name="app"), "do three things")
    tool_end = next(e for e in events if isinstance(e, ToolCallEnd))
    assert tool_end.result is not None
    results = tool_end.result["results"]
    assert [r["agent"] for r in results] == ["one", "two", "broken"]
    assert results[0]["result"] == "first done"
    assert "model down" in results[2]["error"]
    wrapped = [e for e in events if isinstance(e, TaskEvent)]
    assert {w.is_multitask for w in wrapped} == {True}
    assert {w.task_index for w in wrapped} == {1, 2, 3}
    assert isinstance(events[-1], RunEnd)
    assert events[-1].text == "all done"


async def test_t7_agent_tool_runs_in_its_own_session_and_returns_state() -> None:
    from rondo import ToolContext

    def remember(fact: str, tool_context: ToolContext) -> dict[str, Any]:
        """Store a fact."""
        tool_context.state["fact"] = fact
        return {"stored": True}

    inner_m = ScriptedModel([FunctionCall(name="remember", args={"fact": "sky is blue"}), "noted"])
    inner = Agent(name="notes", model=inner_m, description="takes notes", tools=[remember])
    outer_m = ScriptedModel([FunctionCall(name="notes", args={"request": "note it"}), "ok"])
    outer = Agent(name="outer", model=outer_m, tools=[AgentTool(inner)])
    runner = Runner(agent=outer, app_name="app")
    events = [e async for e in runner.run_async(user_id="u", session_id="s", new_message="hi")]
    assert events[1].get_function_responses()[0].response == {"result": "noted"}
    # The inner agent's events are not in the caller's session; its state comes back.
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert {e.author for e in session.events} == {"user", "outer"}
    assert session.state["fact"] == "sky is blue"
    assert inner_m.requests[0].contents[0].parts[0].text == "note it"


class Review(BaseModel):
    bugs: int


async def test_c2_s3_task_agent_runs_scoped_and_finishes_with_finish_task() -> None:
    child_m = ScriptedModel([FunctionCall(name="finish_task", args={"bugs": 3})])
    child = Agent(
        name="reviewer", model=child_m, mode="task", description="reviews", output_schema=Review
    )
    parent_m = ScriptedModel(
        [FunctionCall(name="reviewer", args={"request": "review foo.py"}), "3 bugs found"]
    )
    parent = Agent(name="lead", model=parent_m, sub_agents=[child])
    runner = Runner(agent=parent, app_name="app")
    events = [e async for e in runner.run_async(user_id="u", session_id="s", new_message="go")]
    # The task agent is a tool of its parent, not a transfer target (X1).
    declared = {d.name for d in parent_m.requests[0].config.tools}
    assert "reviewer" in declared
    assert "transfer_to_agent" not in declared
    # C2: it sees only its task input (synthesized, with the no-replies line), not the
    # parent's history.
    child_contents = child_m.requests[0].contents
    assert len(child_contents) == 1
    assert child_contents[0].parts[0].text == f"review foo.py\n\n{NO_REPLIES}"
    assert "finish_task" in {d.name for d in child_m.requests[0].config.tools}
    # Its records are stored in the same session under an isolation scope = the call id.
    call_id = events[0].get_function_calls()[0].id
    scoped = [e for e in events if e.author == "reviewer"]
    assert scoped
    assert {e.isolation_scope for e in scoped} == {call_id}
    # S3: finish_task's arguments are the result handed back to the parent.
    parent_response = next(
        r for e in events for r in e.get_function_responses() if r.name == "reviewer"
    )
    assert parent_response.response == {"bugs": 3}
    # The parent's next request has its own call and response, not the scoped events.
    parent_parts = [p for c in parent_m.requests[1].contents for p in c.parts]
    assert not any(p.function_call and p.function_call.name == "finish_task" for p in parent_parts)
    assert events[-1].text == "3 bugs found"


async def test_c2_single_turn_agent_answers_in_text() -> None:
    child_m = ScriptedModel(["a haiku about rain"])
    child = Agent(name="poet", model=child_m, mode="single_turn")
    parent_m = ScriptedModel(
        [FunctionCall(name="poet", args={"request": "write a haiku about rain"}), "here it is"]
    )
    parent = Agent(name="lead", model=parent_m, sub_agents=[child])
    result = await parent.run("a haiku please")
    response = next(
        r for e in result.events for r in e.get_function_responses() if r.name == "poet"
    )
    assert response.response == {"result": "a haiku about rain"}
    # single_turn skips the identity instruction (P5).
    assert "internal name" not in (child_m.requests[0].config.system_instruction or "")
    assert [Part(text=f"write a haiku about rain\n\n{NO_REPLIES}")] == child_m.requests[0].contents[
        0
    ].parts


async def test_v5_members_emit_their_own_start_and_no_end_of_their_own() -> None:
    """Seed 002 §4.E: NodeStart → member RunStart → member events → NodeEnd; one RunEnd."""
    for mode in ("sequential", "parallel", "supervisor"):
        members = [
            Agent(name="writer", model=ScriptedModel(["draft"])),
            Agent(name="editor", model=ScriptedModel(["edited"])),
        ]
        model = None
        if mode == "supervisor":
            model = ScriptedModel(
                [
                    [
                        FunctionCall(name="writer", args={"request": "write"}),
                        FunctionCall(name="editor", args={"request": "edit"}),
                    ],
                    "done",
                ]
            )
        team = Team(name="desk", members=members, mode=mode, model=model)  # type: ignore[arg-type]
        events = await _stream(Runner(agent=team, app_name="app"), "go")
        starts = [e for e in events if isinstance(e, RunStart)]
        assert [(s.agent_name, s.node) for s in starts] == [
            ("desk", None),
            ("writer", "writer"),
            ("editor", "editor"),
        ], mode
        assert [e for e in events if isinstance(e, RunEnd)] == [events[-1]], mode
        for member in ("writer", "editor"):
            kinds = [
                e.type
                for e in events
                if getattr(e, "node", None) == member and e.type in ("node_start", "run_start")
            ]
            assert kinds == ["node_start", "run_start"], (mode, member)
