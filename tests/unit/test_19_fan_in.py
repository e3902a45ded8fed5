"""Issue 19.3: one fan-in helper for concurrent producers (`rondo._fan_in.fan_in`).

A parallel workflow's branches, a step's tool calls and a DBOS step's model stream all merge
through it: these tests pin what they rely on — a producer's items come before its end, ends
come in the producers' order, a failure is handed over rather than raised, and closing the
merge cancels the producers still running.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from contextlib import aclosing
from pathlib import Path

from rondo._fan_in import Ended, fan_in


async def _collect(queue: asyncio.Queue[str], tasks: Sequence[asyncio.Future[str]]) -> list[str]:
    seen: list[str] = []
    async for got in fan_in(queue, tasks):
        seen.append(f"end:{got.task.result()}" if isinstance(got, Ended) else got)
    return seen


async def test_19_fan_in_items_come_before_their_producers_end() -> None:
    queue: asyncio.Queue[str] = asyncio.Queue()
    release = asyncio.Event()

    async def slow() -> str:
        queue.put_nowait("slow-1")
        await release.wait()
        queue.put_nowait("slow-2")
        return "slow"

    async def fast() -> str:
        queue.put_nowait("fast-1")
        queue.put_nowait("fast-2")
        release.set()
        return "fast"

    seen = await _collect(queue, [asyncio.ensure_future(slow()), asyncio.ensure_future(fast())])
    assert sorted(seen) == sorted(["slow-1", "slow-2", "fast-1", "fast-2", "end:slow", "end:fast"])
    for name in ("slow", "fast"):
        end = seen.index(f"end:{name}")
        assert all(seen.index(i) < end for i in seen if i.startswith(f"{name}-")), seen


async def test_19_fan_in_reports_ends_in_the_producers_order() -> None:
    queue: asyncio.Queue[str] = asyncio.Queue()

    async def quiet(name: str) -> str:
        return name

    tasks = [asyncio.ensure_future(quiet(n)) for n in ("a", "b", "c")]
    await asyncio.sleep(0)  # all three are done before the merge looks
    assert await _collect(queue, tasks) == ["end:a", "end:b", "end:c"]


async def test_19_fan_in_hands_a_failure_over_and_ends() -> None:
    queue: asyncio.Queue[str] = asyncio.Queue()

    async def broken() -> str:
        queue.put_nowait("before")
        raise ValueError("boom")

    seen: list[object] = []
    async for got in fan_in(queue, [asyncio.ensure_future(broken())]):
        seen.append(got)
    assert seen[0] == "before"
    last = seen[-1]
    assert isinstance(last, Ended)
    assert isinstance(last.task.exception(), ValueError)


async def test_19_fan_in_closed_early_cancels_the_producers() -> None:
    queue: asyncio.Queue[str] = asyncio.Queue()
    cancelled: list[str] = []

    async def endless(name: str) -> str:
        try:
            while True:
                await queue.put(name)
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise

    tasks = [asyncio.ensure_future(endless(n)) for n in ("a", "b")]
    async with aclosing(fan_in(queue, tasks)) as merged:
        async for _ in merged:
            break
    assert sorted(cancelled) == ["a", "b"]
    assert all(t.cancelled() for t in tasks)


def test_19_the_concurrent_producers_share_the_helper() -> None:
    """The three fan-in loops are this helper, not copies of its loop."""
    src = Path(__file__).parents[2] / "src" / "rondo"
    import rondo.agents._concurrent as concurrent
    import rondo.flow.functions as functions

    for module in (concurrent, functions):
        text = inspect.getsource(module)
        assert "fan_in(" in text, module.__name__
        assert "asyncio.wait(" not in text, module.__name__
    dbos = (src / "durable" / "dbos.py").read_text()
    assert "fan_in(" in dbos
    assert "asyncio.wait(" not in dbos
