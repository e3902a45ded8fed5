"""SPEC R7 at every stop point: after the consumer stops, no tool or model call starts.

One run with concurrent calls (async, sync in a worker thread, an agent answering as a tool),
a streaming tool and a final answer. For each view (records, lifecycle), each way of stopping
(`aclose()`, `break` keeping the generator, `break` dropping it) and each item the run yields,
the consumer stops there; then the event loop runs on and nothing may start.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import pytest

from rondo import Agent, AgentTool, FunctionCall, Runner, ToolContext
from rondo.models import ModelRequest
from rondo.testing import ScriptedModel
from tests.conformance._support import APP, USER


class Log:
    """What started, in order, and where the consumer stopped."""

    def __init__(self) -> None:
        self.entries: list[str] = []
        self.lock = threading.Lock()

    def add(self, entry: str) -> None:
        with self.lock:
            self.entries.append(entry)

    def started_after_stop(self) -> list[str]:
        if "STOP" not in self.entries:
            return []
        return self.entries[self.entries.index("STOP") + 1 :]


def _logged(log: Log, label: str, item: Any) -> Callable[[ModelRequest], Any]:
    def answer(_request: ModelRequest) -> Any:
        log.add(f"model {label}")
        return item

    return answer


def build(log: Log) -> Runner:
    # A call starts when it is dispatched (a sync tool's thread may begin a moment later).
    def dispatched(tool: Any, args: dict[str, Any], tool_context: ToolContext) -> None:
        log.add(f"tool {tool.name} {args}")

    async def fast(n: int) -> dict[str, int]:
        """Returns n."""
        await asyncio.sleep(0.002)
        return {"n": n}

    def slow_sync(n: int, tool_context: ToolContext) -> dict[str, int]:
        """Sleeps a little in a thread."""
        tool_context.cancel_event.wait(0.01)
        return {"n": n}

    async def streamer(tool_context: ToolContext) -> AsyncIterator[str]:
        """Streams three chunks."""
        for chunk in ("a", "b", "c"):
            await asyncio.sleep(0.001)
            yield chunk

    helper = Agent(
        name="helper",
        model=ScriptedModel(
            [
                _logged(log, "helper 1", FunctionCall(name="fast", args={"n": 9})),
                _logged(log, "helper 2", "helped"),
            ]
        ),
        tools=[fast],
        before_tool_callback=dispatched,
    )
    root = Agent(
        name="root",
        model=ScriptedModel(
            [
                _logged(
                    log,
                    "root 1",
                    [
                        FunctionCall(name="fast", args={"n": 1}),
                        FunctionCall(name="slow_sync", args={"n": 2}),
                        FunctionCall(name="helper", args={"request": "help"}),
                    ],
                ),
                _logged(log, "root 2", FunctionCall(name="streamer", args={})),
                _logged(log, "root 3", "done"),
            ]
        ),
        tools=[fast, slow_sync, streamer, AgentTool(helper)],
        before_tool_callback=dispatched,
    )
    return Runner(agent=root, app_name=APP)


def _stream(runner: Runner, view: str, session_id: str) -> AsyncGenerator[Any, None]:
    if view == "records":
        return runner.run_async(user_id=USER, session_id=session_id, new_message="go")
    return runner.stream_async(user_id=USER, session_id=session_id, new_message="go")


async def _item_count(view: str) -> int:
    log = Log()
    stream = _stream(build(log), view, "full")
    count = 0
    async for _ in stream:
        count += 1
    assert log.entries[-1] == "model root 3"
    return count


async def _settle() -> None:
    # Long enough for every in-flight call to finish and anything pending to start.
    for _ in range(8):
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("view", ["records", "lifecycle"])
@pytest.mark.parametrize("how", ["aclose", "break_keep", "break_drop"])
async def test_r7_no_call_starts_after_the_consumer_stops_at_any_point(view: str, how: str) -> None:
    total = await _item_count(view)
    assert total >= 5
    failures: list[str] = []
    for stop_after in range(1, total):
        log = Log()
        runner = build(log)
        stream = _stream(runner, view, f"s{stop_after}")
        for _ in range(stop_after):
            await anext(stream)
        log.add("STOP")
        if how == "aclose":
            await stream.aclose()
        elif how == "break_drop":
            del stream
            gc.collect()
        await _settle()
        late = log.started_after_stop()
        if late:
            failures.append(f"stopped after item {stop_after}: then started {late}")
        if how == "break_keep":
            await stream.aclose()  # pyright: ignore[reportPossiblyUnboundVariable]
    assert not failures, "\n".join(failures)


async def test_r7_cancelling_the_consumer_sets_the_sync_tools_cancel_signal() -> None:
    seen: dict[str, Any] = {}
    entered = threading.Event()

    def long_sync(tool_context: ToolContext) -> dict[str, str]:
        """Works until cancelled."""
        entered.set()
        seen["signalled"] = tool_context.cancel_event.wait(5)
        seen["cancelled"] = tool_context.cancelled
        return {"late": "result"}

    model = ScriptedModel([FunctionCall(name="long_sync", args={}), "never"])
    runner = Runner(agent=Agent(name="a", model=model, tools=[long_sync]), app_name=APP)

    async def consume() -> None:
        async for _ in runner.run_async(user_id=USER, session_id="c", new_message="go"):
            pass

    task = asyncio.ensure_future(consume())
    await asyncio.to_thread(entered.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if "cancelled" in seen:
            break
        await asyncio.sleep(0.01)
    assert seen == {"signalled": True, "cancelled": True}
    await asyncio.sleep(0.05)
    # The late result is never stored as if the run went on.
    session = await runner.session_service.get_session(app_name=APP, user_id=USER, session_id="c")
    assert session is not None
    assert not any(e.get_function_responses() for e in session.events)
    assert model.calls == 1
