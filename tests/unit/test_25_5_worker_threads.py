"""Issue 25.5: the worker threads sync tools run in (`rondo._threads`), which replaced
`loop.run_in_executor` for its cost on the event loop: same guarantees — parallel, the
caller's context variables, exceptions raised in the caller, cancellation, a bounded pool."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

import rondo._threads as threads_module
from rondo._threads import run_sync_in_thread

where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="unset")


async def test_25_5_jobs_run_in_parallel_threads_with_the_callers_context() -> None:
    barrier = threading.Barrier(4, timeout=10)  # only passes if all four run at once
    where.set("caller")

    def job(i: int) -> tuple[int, str, int]:
        barrier.wait()
        return i, where.get(), threading.get_ident()

    results = await asyncio.gather(*(run_sync_in_thread(job, i) for i in range(4)))
    assert [r[0] for r in results] == [0, 1, 2, 3]
    assert {r[1] for r in results} == {"caller"}
    assert threading.get_ident() not in {r[2] for r in results}


async def test_25_5_an_exception_is_raised_in_the_caller() -> None:
    def boom(text: str, *, suffix: str) -> None:
        raise ValueError(text + suffix)

    with pytest.raises(ValueError, match="bad input!"):
        await run_sync_in_thread(boom, "bad input", suffix="!")


async def test_25_5_past_the_limit_jobs_wait_for_a_free_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(threads_module, "_MAX_WORKERS", 2)
    monkeypatch.setattr(threads_module, "_workers", threads_module._Workers())  # pyright: ignore[reportPrivateUsage]
    running = 0
    most = 0
    lock = threading.Lock()
    release = threading.Event()

    def job(i: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        release.wait(10)
        with lock:
            running -= 1
        return i

    jobs = asyncio.gather(*(run_sync_in_thread(job, i) for i in range(5)))
    await asyncio.sleep(0.05)
    release.set()
    assert await jobs == [0, 1, 2, 3, 4]
    assert most == 2
    # Every worker is free again and takes the next job at once.
    assert await asyncio.gather(run_sync_in_thread(abs, -1), run_sync_in_thread(abs, -2)) == [1, 2]


async def test_25_5_a_cancelled_caller_does_not_break_the_pool() -> None:
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        return "late"

    task = asyncio.ensure_future(run_sync_in_thread(slow))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert await run_sync_in_thread(str.upper, "next") == "NEXT"
