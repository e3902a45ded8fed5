"""SPEC H3 inside workflow agents: a pause holds the whole run, an answer continues it.

A confirmation request (or a long-running call) in a sub-agent of a sequence, loop or parallel
agent pauses the run there: the agents after it do not run yet. The answer continues the same
run in that agent, and the workflow around it goes on from there — the agents before it do not
run again.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from rondo import (
    Agent,
    Content,
    Event,
    FunctionCall,
    FunctionTool,
    LongRunningFunctionTool,
    LoopAgent,
    ParallelAgent,
    Runner,
    SequentialAgent,
    Team,
)
from rondo.agents.base import BaseAgent
from rondo.lifecycle import NodeStart, ReasonStart, RunEnd
from rondo.sessions.base import Session
from rondo.testing import ScriptedModel, check_stream

Script = list[Any]


def _asking(name: str, script: Script, sent: list[int]) -> Agent:
    """An agent whose tool asks for confirmation before it sends money."""

    def transfer_money(amount: int) -> dict[str, Any]:
        """Send money."""
        sent.append(amount)
        return {"ok": True}

    return Agent(
        name=name,
        model=ScriptedModel(script),
        tools=[FunctionTool(transfer_money, require_confirmation=True)],
    )


def _talker(name: str, *answers: str) -> Agent:
    return Agent(name=name, model=ScriptedModel(list(answers)))


def _calls(agent: BaseAgent) -> int:
    model = getattr(agent, "model", None)
    assert isinstance(model, ScriptedModel)
    return model.calls


_TRANSFER = FunctionCall(name="transfer_money", args={"amount": 5}, id="call-1")


async def _run(runner: Runner, message: Any) -> list[Event]:
    stream = runner.run_async(user_id="u", session_id="s", new_message=message)
    return [e async for e in stream]


async def _session(runner: Runner) -> Session:
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    return session


async def _approve(runner: Runner) -> list[Event]:
    session = await _session(runner)
    assert [p.kind for p in session.pending] == ["confirmation"]
    return await _run(runner, [session.pending[0].approve()])


def _texts(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.author, e.text) for e in events if e.text]


async def test_h3_a_pause_in_a_sequence_holds_the_agents_after_it_until_the_answer() -> None:
    sent: list[int] = []
    first_agent = _talker("first", "first done")
    asking = _asking("asking", [_TRANSFER, "sent"], sent)
    after = _talker("after", "after done")
    runner = Runner(
        agent=SequentialAgent(name="pipeline", sub_agents=[first_agent, asking, after]),
        app_name="app",
    )

    paused = await _run(runner, "go")
    assert _texts(paused) == [("first", "first done")]
    assert paused[-1].get_function_calls()[0].name == "adk_request_confirmation"
    assert _calls(after) == 0  # nothing after the paused agent ran before the answer
    run_id = paused[-1].run_id

    continued = await _approve(runner)
    assert sent == [5]
    assert _texts(continued) == [("asking", "sent"), ("after", "after done")]
    assert _calls(first_agent) == 1  # the agent before the pause did not run again
    assert {e.run_id for e in continued} == {run_id}  # the same run, continued
    assert (await _session(runner)).pending == []


async def test_h3_a_pause_in_a_loop_continues_its_round_and_counts_the_rounds() -> None:
    # The asking agent is the loop's last: neither its refusal record nor its confirmation
    # request may count as the end of a round.
    sent: list[int] = []
    first_agent = _talker("first", "round 1", "round 2", "round 3")
    asking = _asking("asking", [_TRANSFER, "sent", "nothing more", "too many"], sent)
    runner = Runner(
        agent=LoopAgent(name="loop", max_iterations=2, sub_agents=[first_agent, asking]),
        app_name="app",
    )

    paused = await _run(runner, "go")
    assert _texts(paused) == [("first", "round 1")]

    continued = await _approve(runner)
    assert sent == [5]
    assert _texts(continued) == [
        ("asking", "sent"),
        ("first", "round 2"),
        ("asking", "nothing more"),
    ]
    assert _calls(first_agent) == 2  # two rounds in all, as max_iterations says


async def test_h3_a_pause_in_a_parallel_branch_continues_that_branch_then_the_sequence() -> None:
    sent: list[int] = []
    asking = _asking("asking", [_TRANSFER, "sent"], sent)
    sibling = _talker("sibling", "sibling done")
    after = _talker("after", "after done")
    fan_out = ParallelAgent(name="fan_out", sub_agents=[asking, sibling])
    runner = Runner(
        agent=SequentialAgent(name="pipeline", sub_agents=[fan_out, after]), app_name="app"
    )

    paused = await _run(runner, "go")
    assert _texts(paused) == [("sibling", "sibling done")]  # the other branch finishes
    assert _calls(after) == 0

    continued = await _approve(runner)
    assert _texts(continued) == [("asking", "sent"), ("after", "after done")]
    assert _calls(sibling) == 1  # the finished branch did not run again
    # The continued agent stays on its own branch.
    assert {e.branch for e in continued if e.author == "asking"} == {"fan_out.asking"}


async def test_h3_an_answer_stored_by_other_code_continues_the_sequence_too() -> None:
    sent: list[int] = []
    asking = _asking("asking", [_TRANSFER, "sent"], sent)
    after = _talker("after", "after done")
    runner = Runner(
        agent=SequentialAgent(name="pipeline", sub_agents=[_talker("first", "ok"), asking, after]),
        app_name="app",
    )
    await _run(runner, "go")
    session = await _session(runner)
    answer = Event(
        author="user", content=Content(role="user", parts=[session.pending[0].approve()])
    )
    await runner.session_service.append_event(session, answer)

    continued = await _run(runner, None)
    assert sent == [5]
    assert _texts(continued) == [("asking", "sent"), ("after", "after done")]


async def test_h3_a_new_message_instead_of_the_answer_starts_over() -> None:
    # Only an answer continues the paused run; new text is a new run from the root.
    sent: list[int] = []
    first_agent = _talker("first", "first done", "first again")
    asking = _asking("asking", [_TRANSFER, "fine"], sent)
    runner = Runner(
        agent=SequentialAgent(name="pipeline", sub_agents=[first_agent, asking]),
        app_name="app",
    )
    paused = await _run(runner, "go")
    again = await _run(runner, "never mind")
    assert sent == []
    assert _texts(again)[0] == ("first", "first again")
    assert again[0].run_id != paused[0].run_id


async def test_h3_a_paused_sequence_streams_a_pending_run_end_and_its_answer_a_normal_one() -> None:
    sent: list[int] = []
    asking = _asking("asking", [_TRANSFER, "sent"], sent)
    runner = Runner(
        agent=SequentialAgent(name="pipeline", sub_agents=[asking, _talker("after", "done")]),
        app_name="app",
    )
    paused = [i async for i in runner.stream_async(user_id="u", session_id="s", new_message="go")]
    check_stream(paused)
    end = paused[-1]
    assert isinstance(end, RunEnd)
    assert [p.tool_name for p in end.pending] == ["transfer_money"]
    assert not end.is_abnormal
    assert not any(isinstance(i, ReasonStart) and i.agent_name == "after" for i in paused)

    session = await _session(runner)
    answer = [session.pending[0].approve()]
    continued = [
        i async for i in runner.stream_async(user_id="u", session_id="s", new_message=answer)
    ]
    check_stream(continued)
    end = continued[-1]
    assert isinstance(end, RunEnd)
    assert end.text == "done"
    assert end.pending == []
    assert end.run_id == paused[-1].run_id


async def test_h3_a_long_running_call_in_a_sequence_holds_it_until_its_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def start_job(name: str) -> None:
        """Start a job; its result arrives later."""

    worker = Agent(
        name="worker",
        model=ScriptedModel([FunctionCall(name="start_job", args={"name": "x"}, id="job-1"), "ok"]),
        tools=[LongRunningFunctionTool(start_job)],
    )
    after = _talker("after", "after done")
    runner = Runner(
        agent=SequentialAgent(name="pipeline", sub_agents=[worker, after]), app_name="app"
    )
    await _run(runner, "go")
    assert _calls(after) == 0
    session = await _session(runner)
    assert [p.kind for p in session.pending] == ["long_running"]

    with caplog.at_level(logging.WARNING):
        continued = await _run(runner, [session.pending[0].respond({"done": True})])
    assert _texts(continued) == [("worker", "ok"), ("after", "after done")]
    # The later agent sees the worker's call as context; the user's answer to it is the
    # worker's business, left out of its view without a warning.
    assert "without a call" not in caplog.text
    request = after.model.requests[0]  # type: ignore[union-attr]
    assert not any(p.function_response for c in request.contents for p in c.parts)


async def test_h3_a_pause_in_a_sequential_team_holds_the_later_members() -> None:
    sent: list[int] = []
    asking = _asking("asking", [_TRANSFER, "sent"], sent)
    writer = _talker("writer", "report written")
    runner = Runner(agent=Team(name="crew", members=[asking, writer]), app_name="app")

    paused = [i async for i in runner.stream_async(user_id="u", session_id="s", new_message="go")]
    assert not any(isinstance(i, NodeStart) and i.node == "writer" for i in paused)
    assert _calls(writer) == 0

    session = await _session(runner)
    answer = [session.pending[0].approve()]
    continued = [
        i async for i in runner.stream_async(user_id="u", session_id="s", new_message=answer)
    ]
    check_stream(continued)
    assert sent == [5]
    nodes = [i.node for i in continued if isinstance(i, NodeStart)]
    assert nodes == ["asking", "writer"]  # the member it continues in, then the next one
    end = continued[-1]
    assert isinstance(end, RunEnd)
    assert end.text == "report written"
