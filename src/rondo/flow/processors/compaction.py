"""P6: compaction before the contents are built, so this request already sees the summary."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, cast

from rondo.lifecycle import ContextSize
from rondo.models.base import ModelRequest

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.loop import Flow
    from rondo.lifecycle import Item

logger = logging.getLogger("rondo.compaction")


def compaction_processor(
    flow: Flow, ctx: InvocationContext, request: ModelRequest
) -> AsyncGenerator[Item, None] | None:
    config = ctx.run_config.compaction
    if config is None:
        # V1: the context size goes out before every round, compaction or not.
        return _size(flow, ctx) if ctx.observe else None
    return _compact(flow, ctx, config)


async def _context_length(flow: Flow) -> int | None:
    """V1: the model's context window when it knows it — its `context_window`, or what its
    `load_context_window()` asks the provider (once per model object; only reached when a
    consumer of the lifecycle stream exists, so the record path never pays for it)."""
    model = flow.model
    window = getattr(model, "context_window", None)
    if window is None:
        load = getattr(model, "load_context_window", None)
        if callable(load):
            window = await cast(Callable[[], Awaitable[int | None]], load)()
    return window if isinstance(window, int) and not isinstance(window, bool) else None


async def _size(flow: Flow, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
    from rondo.compaction import estimate_context

    now = estimate_context(ctx.session.events, ctx.branch, ctx.isolation_scope)
    yield ContextSize(
        **ctx.correlation(),
        context_length=await _context_length(flow),
        message_count=now.message_count,
        token_count=now.tokens,
    )


async def _compact(
    flow: Flow, ctx: InvocationContext, config: object
) -> AsyncGenerator[Item, None]:
    from rondo.compaction import CompactionConfig, compact, estimate_context

    assert isinstance(config, CompactionConfig)
    before = estimate_context(ctx.session.events, ctx.branch, ctx.isolation_scope)
    tokens_before, messages_before = before.tokens, before.message_count
    compressed = False
    if tokens_before > config.token_threshold:
        try:
            compressed = await compact(ctx, config, flow.model)
        except Exception:  # K1: an optimization that failed must not fail the invocation
            logger.warning("compaction failed; continuing without it", exc_info=True)
    if not ctx.observe:
        return
    after = estimate_context(ctx.session.events, ctx.branch, ctx.isolation_scope)
    yield ContextSize(
        **ctx.correlation(),
        context_length=await _context_length(flow),
        message_count=after.message_count,
        token_count=after.tokens,
        compressed=compressed,
        tokens_before=tokens_before if compressed else 0,
        tokens_after=after.tokens if compressed else 0,
        messages_before=messages_before if compressed else 0,
        messages_after=after.message_count if compressed else 0,
    )
