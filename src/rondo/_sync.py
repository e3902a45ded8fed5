"""Synchronous entry points over the async core; they work inside a running event loop too."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["iterate_sync", "run_coroutine_sync"]

T = TypeVar("T")


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_coroutine_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code (in a helper thread if a loop is running)."""

    async def main() -> T:
        return await factory()

    if not _loop_running():
        return asyncio.run(main())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rondo-sync") as pool:
        return pool.submit(asyncio.run, main()).result()


class _Here:
    """A fresh event loop in this thread (no loop is running here)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def stop(self) -> None:
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()


class _LoopThread:
    """An event loop in a helper thread (a loop is running in this one)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="rondo-sync", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


def iterate_sync(factory: Callable[[], AsyncGenerator[T, None]]) -> Iterator[T]:
    """Drive an async generator from sync code; leaving the loop early closes it properly."""
    driver = _Here() if not _loop_running() else _LoopThread()
    agen = factory()
    try:
        while True:
            try:
                item = driver.run(_next(agen))
            except StopAsyncIteration:
                return
            yield item
    finally:
        driver.run(agen.aclose())
        driver.stop()


async def _next(agen: AsyncGenerator[T, None]) -> T:
    return await anext(agen)
