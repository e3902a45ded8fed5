"""Callback lists: validated at construction, called positionally, sync or async."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from rondo.errors import InvalidCallbackError

__all__ = ["Callbacks", "call_maybe_async", "normalize_callbacks"]

Callbacks = tuple[Callable[..., Any], ...]


def normalize_callbacks(value: Any, what: str) -> Callbacks:
    """Accept None, one callable or a list of them; anything else fails now, not mid-run."""
    if value is None:
        return ()
    items: Sequence[Any] = (
        cast(Sequence[Any], value) if isinstance(value, list | tuple) else (value,)
    )
    for item in items:
        if not callable(item):
            raise InvalidCallbackError(
                f"{what} must be a callable or a list of callables, got {type(item).__name__}"
            )
    return tuple(items)


async def call_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    result: Any = fn(*args)
    if isinstance(result, Awaitable):
        result = await cast(Awaitable[Any], result)
    return result


async def first_result(callbacks: Callbacks, *args: Any) -> Any:
    """Call callbacks in order; the first non-None result wins and stops the chain."""
    for fn in callbacks:
        result: Any = fn(*args)
        if isinstance(result, Awaitable):
            result = await cast(Awaitable[Any], result)
        if result is not None:
            return result
    return None
