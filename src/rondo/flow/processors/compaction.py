"""P6: compaction (and every context strategy's `prepare`) before the contents are built, so
this request already sees the summary."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, cast

from rondo.flow.compaction import compact, estimate_context
from rondo.flow.context_strategies import Summarizing, summarizing_config
from rondo.lifecycle import ContextSize
from rondo.models.base import ModelRequest
from rondo.run_config import CompactionConfig

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.context_strategies import ContextStrategy
    from rondo.flow.views import FlowView
    from rondo.lifecycle import Item

logger = logging.getLogger("rondo.compaction")


def compaction_processor(
    flow: FlowView, ctx: InvocationContext, request: ModelRequest
) -> AsyncGenerator[Item, None] | None:
    strategies = flow.agent.context_strategies
    config = ctx.run_config.compaction
    preparers: tuple[ContextStrategy, ...] = ()
    if strategies:  # nothing to compute (no call) for an agent without strategies
        # An agent's own Summarizing wins over the run's compaction config.
        config = summarizing_config(strategies) or config
        preparers = tuple(s for s in strategies if s.prepares and not isinstance(s, Summarizing))
    if config is None and not preparers:
        # V1: the context size goes out before every round, compaction or not.
        return _size(flow, ctx) if ctx.observe else None
    return _compact(flow, ctx, config, preparers)


async def _context_length(flow: FlowView) -> int | None:
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


async def _size(flow: FlowView, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
    now = estimate_context(ctx.session.events, ctx.branch, ctx.isolation_scope)
    yield ContextSize(
        **ctx.correlation(),
        context_length=await _context_length(flow),
        message_count=now.message_count,
        token_count=now.tokens,
    )


async def _compact(
    flow: FlowView,
    ctx: InvocationContext,
    config: CompactionConfig | None,
    preparers: tuple[ContextStrategy, ...],
) -> AsyncGenerator[Item, None]:
    before = estimate_context(ctx.session.events, ctx.branch, ctx.isolation_scope)
    tokens_before, messages_before = before.tokens, before.message_count
    compressed = False
    if config is not None and tokens_before > config.token_threshold:
        try:
            compressed = await compact(ctx, config, flow.model)
        except Exception:  # K1: an optimization that failed must not fail the invocation
            logger.warning("compaction failed; continuing without it", exc_info=True)
    for strategy in preparers:
        try:
            compressed = await strategy.prepare(ctx, flow.model) or compressed
        except Exception:  # like compaction: a strategy shapes the request, never fails it
            logger.warning("context strategy %r failed; continuing", strategy, exc_info=True)
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
