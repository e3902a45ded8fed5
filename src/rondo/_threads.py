"""Worker threads for sync tools and callbacks, so they never block the event loop."""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["run_sync_in_thread"]

T = TypeVar("T")

# asyncio's default executor has min(32, cpus + 4) workers: 6 on a 2-core machine, which would
# serialize a batch of 8 parallel sync tools. Tool calls mostly wait on I/O, so allow many.
_MAX_WORKERS = 64
_executor: ThreadPoolExecutor | None = None


def _get_executor() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=_MAX_WORKERS, thread_name_prefix="rondo-tool")
    return _executor


async def run_sync_in_thread(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run `func` in a worker thread with the caller's context variables (tracing, etc.)."""
    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    call = functools.partial(ctx.run, func, *args, **kwargs)
    return await loop.run_in_executor(_get_executor(), call)
