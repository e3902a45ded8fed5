"""Seed 002 §4.C: an agent may run one step's calls one after another —
start(A) → end(A) → start(B) → end(B) — or with a bound on how many run at once (T2 keeps
the merged record in call order either way)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rondo import Agent, FunctionCall, Runner
from rondo.errors import ConfigurationError
from rondo.lifecycle import ToolCallEnd, ToolCallStart
from rondo.testing import ScriptedModel


def _agent(limit: int | None, running: list[int], peak: list[int]) -> Agent:
    async def work(n: int) -> dict[str, Any]:
        """Works a while."""
        running.append(n)
        peak[0] = max(peak[0], len(running))
        for _ in range(3):
            await asyncio.sleep(0)
        running.remove(n)
        return {"n": n}

    calls = [FunctionCall(name="work", args={"n": n}, id=f"c{n}") for n in range(4)]
    return Agent(
        name="a",
        model=ScriptedModel([calls, "done"]),
        tools=[work],
        max_concurrent_tool_calls=limit,
    )


async def _lifecycle(agent: Agent) -> list[Any]:
    runner = Runner(agent=agent)
    return [e async for e in runner.stream_async(user_id="u", session_id="s", new_message="go")]


async def test_v1_one_call_after_another_starts_each_after_the_previous_ended() -> None:
    running: list[int] = []
    peak = [0]
    items = await _lifecycle(_agent(1, running, peak))
    order = [
        (type(i).__name__, i.call_id) for i in items if isinstance(i, ToolCallStart | ToolCallEnd)
    ]
    expected: list[tuple[str, str]] = []
    for n in range(4):
        expected += [("ToolCallStart", f"c{n}"), ("ToolCallEnd", f"c{n}")]
    assert order == expected
    assert peak == [1]
    assert items[-1].text == "done"


@pytest.mark.parametrize(("limit", "most"), [(2, 2), (None, 4)])
async def test_t2_a_concurrency_limit_bounds_the_calls_in_flight(
    limit: int | None, most: int
) -> None:
    running: list[int] = []
    peak = [0]
    agent = _agent(limit, running, peak)
    result = await Runner(agent=agent).run_to_result(user_id="u", new_message="go")
    assert peak == [most]
    merged = result.events[1].get_function_responses()
    assert [r.id for r in merged] == ["c0", "c1", "c2", "c3"]  # call order, whatever the limit


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_v1_the_limit_must_be_a_positive_int(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_concurrent_tool_calls"):
        Agent(name="a", model=ScriptedModel([]), max_concurrent_tool_calls=bad)
