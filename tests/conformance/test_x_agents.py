"""SPEC X: agent transfer, workflow agents and the agent tree."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rondo import (
    Agent,
    ConfigurationError,
    Content,
    DuplicateAgentNameError,
    Event,
    FunctionCall,
    LoopAgent,
    ParallelAgent,
    Runner,
    SequentialAgent,
    ToolContext,
    TransferError,
)
from rondo.models import ModelRequest
from rondo.testing import ScriptedModel, check_stream
from rondo.tools import exit_loop


def _enum(request: ModelRequest) -> list[str]:
    decl = next(d for d in request.config.tools if d.name == "transfer_to_agent")
    return decl.parameters["properties"]["agent_name"]["enum"]


async def _run(runner: Runner, text: str, session_id: str = "s") -> list[Event]:
    return [e async for e in runner.run_async(user_id="u", session_id=session_id, new_message=text)]


async def test_x1_transfer_targets_children_parent_and_peers() -> None:
    child_m = ScriptedModel(["child answer"])
    peer_task = Agent(name="peer_task", model=ScriptedModel([]), mode="task")
    child = Agent(name="child", model=child_m)
    grandchild = Agent(name="grand", model=ScriptedModel([]))
    peer = Agent(name="peer", model=ScriptedModel([]), sub_agents=[grandchild])
    root_m = ScriptedModel([FunctionCall(name="transfer_to_agent", args={"agent_name": "child"})])
    root = Agent(name="root", model=root_m, sub_agents=[child, peer, peer_task])
    events = await _run(Runner(agent=root, app_name="app"), "help")
    # The root may go to its (non-task) children; it has no parent or peers.
    assert sorted(_enum(root_m.requests[0])) == ["child", "peer"]
    # The child's targets: its parent and its peers (task agents excluded).
    assert sorted(_enum(child_m.requests[0])) == ["peer", "root"]
    # Transfer happens after the tool response; the target continues the same invocation.
    assert [e.author for e in events] == ["root", "root", "child"]
    assert events[1].actions.transfer_to_agent == "child"
    assert len({e.invocation_id for e in events}) == 1
    assert events[-1].text == "child answer"


async def test_x1_disallow_transfer_to_parent_and_peers() -> None:
    child_m = ScriptedModel(["hi"])
    child = Agent(
        name="child",
        model=child_m,
        disallow_transfer_to_parent=True,
        disallow_transfer_to_peers=True,
    )
    other = Agent(name="other", model=ScriptedModel([]))
    root = Agent(
        name="root",
        model=ScriptedModel([FunctionCall(name="transfer_to_agent", args={"agent_name": "child"})]),
        sub_agents=[child, other],
    )
    await _run(Runner(agent=root, app_name="app"), "x")
    assert not any(d.name == "transfer_to_agent" for d in child_m.requests[0].config.tools)


async def test_x1_illegal_target_is_an_error_response_listing_legal_ones() -> None:
    model = ScriptedModel(
        [FunctionCall(name="transfer_to_agent", args={"agent_name": "nobody"}), "sorry"]
    )
    root = Agent(name="root", model=model, sub_agents=[Agent(name="helper", model=model)])
    events = await _run(Runner(agent=root, app_name="app"), "x")
    error = events[1].get_function_responses()[0].response["error"]
    assert "nobody" in error
    assert "helper" in error
    assert events[-1].text == "sorry"


async def test_x1_transfer_set_by_code_to_an_unknown_agent_ends_the_run() -> None:
    def route(tool_context: ToolContext) -> dict[str, Any]:
        """Routes somewhere."""
        tool_context.actions.transfer_to_agent = "ghost"
        return {}

    root = Agent(name="root", model=ScriptedModel([FunctionCall(name="route")]), tools=[route])
    with pytest.raises(TransferError, match="ghost"):
        await _run(Runner(agent=root, app_name="app"), "x")


async def test_x2_sequential_runs_children_in_order() -> None:
    a = Agent(name="a", model=ScriptedModel(["from a"]), output_key="a_out")
    b_model = ScriptedModel(["from b"])
    b = Agent(name="b", model=b_model, instruction="Previous: {a_out}")
    seq = SequentialAgent(name="seq", sub_agents=[a, b])
    events = await _run(Runner(agent=seq, app_name="app"), "go")
    assert [(e.author, e.text) for e in events] == [("a", "from a"), ("b", "from b")]
    assert "Previous: from a" in (b_model.requests[0].config.system_instruction or "")


async def test_x2_parallel_branches_are_isolated_and_interleaved() -> None:
    gate = asyncio.Event()
    order: list[str] = []

    async def slow(request: ModelRequest) -> str:
        order.append("slow-start")
        await gate.wait()
        return "slow done"

    def fast(request: ModelRequest) -> str:
        order.append("fast")
        gate.set()
        return "fast done"

    slow_agent = Agent(name="slow", model=ScriptedModel([slow]))
    fast_agent = Agent(name="fast", model=ScriptedModel([fast]))
    par = ParallelAgent(name="par", sub_agents=[slow_agent, fast_agent])
    root = SequentialAgent(name="root", sub_agents=[par])
    events = await _run(Runner(agent=root, app_name="app"), "go")
    # The fast branch finished first although it was listed second: events interleave.
    assert [e.author for e in events] == ["fast", "slow"]
    assert {e.branch for e in events} == {"par.slow", "par.fast"}
    assert order == ["slow-start", "fast"]


async def test_x2_parallel_children_do_not_see_each_other() -> None:
    first_m = ScriptedModel(["one"])
    second_m = ScriptedModel(["two"])
    par = ParallelAgent(
        name="par",
        sub_agents=[Agent(name="first", model=first_m), Agent(name="second", model=second_m)],
    )
    runner = Runner(agent=par, app_name="app")
    await _run(runner, "go")
    first_m.extend(["again one"])
    second_m.extend(["again two"])
    await _run(runner, "go again")
    texts = [p.text for c in second_m.requests[1].contents for p in c.parts if p.text]
    assert not any("one" in t for t in texts)


async def test_x2_loop_stops_on_escalate_or_max_iterations() -> None:
    worker_m = ScriptedModel(["draft 1", "draft 2", FunctionCall(name="exit_loop"), "unused"])
    worker = Agent(name="worker", model=worker_m, tools=[exit_loop])
    loop = LoopAgent(name="loop", sub_agents=[worker], max_iterations=10)
    events = await _run(Runner(agent=loop, app_name="app"), "go")
    assert events[-1].actions.escalate is True
    assert worker_m.calls == 3

    counter_m = ScriptedModel(["a", "b", "c", "d"])
    bounded = LoopAgent(
        name="bounded", sub_agents=[Agent(name="counter", model=counter_m)], max_iterations=2
    )
    events = await _run(Runner(agent=bounded, app_name="app"), "go")
    assert [e.text for e in events] == ["a", "b"]


def test_x3_agent_tree_names_are_unique_and_user_is_reserved() -> None:
    leaf = Agent(name="leaf", model=ScriptedModel([]))
    mid = Agent(name="mid", model=ScriptedModel([]), sub_agents=[leaf])
    root = Agent(name="root", model=ScriptedModel([]), sub_agents=[mid])
    assert root.find_agent("leaf") is leaf
    assert root.find_sub_agent("root") is None
    assert leaf.parent_agent is mid
    assert leaf.root_agent is root
    with pytest.raises(DuplicateAgentNameError):
        Agent(
            name="top",
            model=ScriptedModel([]),
            sub_agents=[Agent(name="twin", model=None), Agent(name="twin", model=None)],
        )
    with pytest.raises(ConfigurationError, match="reserved"):
        Agent(name="user", model=ScriptedModel([]))
    with pytest.raises(ConfigurationError, match="one parent"):
        Agent(name="other_root", model=ScriptedModel([]), sub_agents=[leaf])


async def test_x3_next_message_goes_to_the_last_agent_that_may_transfer_back() -> None:
    child_m = ScriptedModel(["child 1", "child 2"])
    child = Agent(name="child", model=child_m)
    root_m = ScriptedModel([FunctionCall(name="transfer_to_agent", args={"agent_name": "child"})])
    root = Agent(name="root", model=root_m, sub_agents=[child])
    runner = Runner(agent=root, app_name="app")
    await _run(runner, "first")
    events = await _run(runner, "second")
    assert [e.author for e in events] == ["child"]
    assert root_m.calls == 1

    # A child that may not transfer back: the next message goes to the root.
    locked_m = ScriptedModel(["locked 1"])
    locked = Agent(name="locked", model=locked_m, disallow_transfer_to_parent=True)
    root2_m = ScriptedModel(
        [FunctionCall(name="transfer_to_agent", args={"agent_name": "locked"}), "root again"]
    )
    root2 = Agent(name="root2", model=root2_m, sub_agents=[locked])
    runner2 = Runner(agent=root2, app_name="app")
    await _run(runner2, "first")
    events = await _run(runner2, "second")
    assert [e.author for e in events] == ["root2"]


async def test_x2_a_before_agent_answer_ends_only_that_child_of_a_sequence() -> None:
    """As in ADK: the callback's content is the child's answer; the next child runs."""
    first = Agent(
        name="first",
        model=ScriptedModel([]),
        before_agent_callback=lambda ctx: Content.model("answered by the callback"),
    )
    second_m = ScriptedModel(["second speaks"])
    second = Agent(name="second", model=second_m)
    seq = SequentialAgent(name="seq", sub_agents=[first, second])
    events = await _run(Runner(agent=seq, app_name="app"), "go")
    assert [(e.author, e.text) for e in events] == [
        ("first", "answered by the callback"),
        ("second", "second speaks"),
    ]


async def test_x2_a_loop_ended_by_exit_loop_has_a_valid_lifecycle_stream() -> None:
    worker_m = ScriptedModel([FunctionCall(name="exit_loop"), "unused"])
    worker = Agent(name="worker", model=worker_m, tools=[exit_loop])
    after = Agent(name="after", model=ScriptedModel([]))  # would raise if it ran
    loop = LoopAgent(name="loop", sub_agents=[worker, after], max_iterations=5)
    runner = Runner(agent=loop, app_name="app")
    events = [e async for e in runner.stream_async(user_id="u", session_id="s", new_message="go")]
    check_stream(events)
    kinds = [e.type for e in events]
    assert kinds[-3:] == ["tool_call_end", "action_end", "run_end"]
    assert worker_m.calls == 1
