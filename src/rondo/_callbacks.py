"""Callback lists: validated at construction, called positionally, sync or async."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import cast

from rondo.errors import InvalidCallbackError

__all__ = ["Callbacks", "call_maybe_async", "normalize_callbacks"]

Callbacks = tuple[Callable[..., object], ...]


def normalize_callbacks(value: object, what: str) -> Callbacks:
    """Accept None, one callable or a list of them; anything else fails now, not mid-run."""
    if value is None:
        return ()
    items: Sequence[object] = (
        cast(Sequence[object], value) if isinstance(value, list | tuple) else (value,)
    )
    checked: list[Callable[..., object]] = []
    for item in items:
        if not callable(item):
            raise InvalidCallbackError(
                f"{what} must be a callable or a list of callables, got {type(item).__name__}"
            )
        checked.append(item)
    return tuple(checked)


async def call_maybe_async(fn: Callable[..., object], *args: object) -> object:
    """Call `fn` with `args`; await what it returns when that is awaitable (an async `fn`)."""
    result = fn(*args)
    if isinstance(result, Awaitable):
        result = await cast(Awaitable[object], result)
    return result


async def first_result(callbacks: Callbacks, *args: object) -> object:
    """Call callbacks in order; the first non-None result wins and stops the chain."""
    for fn in callbacks:
        result = fn(*args)
        if isinstance(result, Awaitable):
            result = await cast(Awaitable[object], result)
        if result is not None:
            return result
    return None
