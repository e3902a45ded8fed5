"""SPEC R7 for a parallel step: no tool body begins after the consumer stopped iterating.

The lifecycle view announces each call (`ToolCallStart`) before its body runs. A consumer
that stops at the second call's start — by `break`, keeping or dropping the generator, or by
`aclose()` — has received the first call's start too; still, neither body may begin once it
stopped: a call whose start was received waits until the consumer asks for the next item.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from rondo import Agent, FunctionCall, Runner
from rondo.lifecycle import ToolCallStart
from rondo.testing import ScriptedModel


def _runner(began: list[str]) -> Runner:
    async def first() -> dict[str, Any]:
        """The first tool."""
        began.append("first")
        return {"ok": 1}

    async def second() -> dict[str, Any]:
        """The second tool."""
        began.append("second")
        return {"ok": 2}

    model = ScriptedModel(
        [[FunctionCall(name="first", args={}), FunctionCall(name="second", args={})], "done"]
    )
    return Runner(agent=Agent(name="a", model=model, tools=[first, second]))


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0.005)


@pytest.mark.parametrize("how", ["aclose", "break_keep", "break_drop"])
async def test_r7_no_tool_body_begins_after_a_stop_at_the_second_tool_call_start(how: str) -> None:
    began: list[str] = []
    stream = _runner(began).stream_async(user_id="u", session_id="s", new_message="go")
    starts = 0
    async for item in stream:
        if isinstance(item, ToolCallStart):
            starts += 1
            if starts == 2:
                break
    assert starts == 2
    at_stop = list(began)
    if how == "aclose":
        await stream.aclose()
    elif how == "break_drop":
        del stream
        gc.collect()
    await _settle()
    assert began == at_stop, f"began after the stop: {began[len(at_stop) :]}"
    if how == "break_keep":
        await stream.aclose()  # pyright: ignore[reportPossiblyUnboundVariable]


async def test_r7_a_consumer_that_goes_on_gets_both_bodies_run() -> None:
    began: list[str] = []
    items = [
        i async for i in _runner(began).stream_async(user_id="u", session_id="s", new_message="go")
    ]
    assert sorted(began) == ["first", "second"]
    assert sum(isinstance(i, ToolCallStart) for i in items) == 2
