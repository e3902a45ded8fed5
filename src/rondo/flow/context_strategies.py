"""Context strategies: what an agent's model sees of a long history (SPEC K3).

A strategy has two moments in a step, both optional:

- `prepare(ctx, model)`, before the contents are built: it may append records to the
  session (summarizing compaction appends its summary here, K1);
- `view(contents, ctx)`, after the contents are built and repaired (SPEC C): it returns the
  list the model is sent. The stored records are never touched — the session, its API and the
  UI keep the whole history.

They compose: `Agent(context_strategies=[Summarizing(...), SlidingWindow(max_turns=20),
ToolResultTrimming(max_chars=4_000)])` prepares in list order, then views in list order.

The C rules hold for every strategy here: branch and scope filtering (C1, C2) and the hidden
records (C4) happen before `view`, so a strategy only ever removes or shortens what was
already visible; a cut never separates a function call from its response (C6) and never
drops the newest turn, so the user nudge (C7) stays last; a scoped task agent's synthesized
task input (C2) is put in front after the strategies ran, so a window cannot cut it away.

Prompt caching (K3, `RunConfig.prompt_caching`): a provider caches the longest unchanged
prefix of a request. Every strategy here is built to keep that prefix byte-identical between
steps for as long as it can — see each class for when it moves.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rondo.errors import ConfigurationError
from rondo.flow.compaction import SUMMARY_PREFIX, compact, content_chars, estimate_context
from rondo.flow.contents import NUDGE_TEXT
from rondo.run_config import CompactionConfig
from rondo.types import Content, FunctionResponse, Part

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.models.base import Model

__all__ = [
    "ContextStrategy",
    "SlidingWindow",
    "Summarizing",
    "ToolResultTrimming",
    "normalize_strategies",
    "summarizing_config",
]

logger = logging.getLogger("rondo.compaction")


class ContextStrategy:
    """The seam: subclass and override `prepare`, `view`, or both (each defaults to nothing)."""

    async def prepare(self, ctx: InvocationContext, model: Model) -> bool:
        """Before the contents are built; may append records. True when it changed the log."""
        del ctx, model
        return False

    def view(self, contents: list[Content], ctx: InvocationContext) -> list[Content]:
        """What the model sees: `contents` (a fresh list the strategy may edit or replace)."""
        del ctx
        return contents

    @property
    def prepares(self) -> bool:
        """True when this strategy overrides `prepare` (the loop skips the others: no call)."""
        return type(self).prepare is not ContextStrategy.prepare

    @property
    def views(self) -> bool:
        """True when this strategy overrides `view`."""
        return type(self).view is not ContextStrategy.view


class Summarizing(ContextStrategy):
    """Today's summarizing compaction (SPEC K1/K2) as a strategy of one agent.

    Past `config.token_threshold` estimated tokens, everything but the newest
    `config.retention_events` records is summarized and the summary appended; the contents
    view then shows the summary in place of what it covers (C5). The same as
    `RunConfig(compaction=...)`, for this agent only (an agent's own `Summarizing` wins over
    the run's config).

    Cache: the prefix moves once per compaction (the summary replaces the start of the
    history) and is stable between compactions; a higher threshold means fewer moves.
    """

    def __init__(self, config: CompactionConfig | None = None, **options: object) -> None:
        if config is None:
            config = CompactionConfig.model_validate(options)
        elif options:
            raise ConfigurationError("Summarizing takes a CompactionConfig or its fields, not both")
        self.config = config

    def __repr__(self) -> str:
        return f"Summarizing(token_threshold={self.config.token_threshold})"

    async def prepare(self, ctx: InvocationContext, model: Model) -> bool:
        """Compact when the K2 estimate is past the threshold; a failure is logged (K1)."""
        estimate = estimate_context(ctx.session.events, ctx.branch, ctx.isolation_scope)
        if estimate.tokens <= self.config.token_threshold:
            return False
        try:
            return await compact(ctx, self.config, model)
        except Exception:  # K1: an optimization that failed must not fail the invocation
            logger.warning("compaction failed; continuing without it", exc_info=True)
            return False


def _is_turn_start(content: Content) -> bool:
    """A user-role message with text: a user's message, another agent's words (C3) or a
    summary. Tool results are user-role too but carry no text, so they never start a turn."""
    if content.role != "user":
        return False
    texts = [p.text for p in content.parts if p.text]
    return bool(texts) and texts != [NUDGE_TEXT]


def _is_summary(content: Content) -> bool:
    first = content.parts[0] if content.parts else None
    return bool(content.role == "user" and first and (first.text or "").startswith(SUMMARY_PREFIX))


def _cached_chars(ctx: InvocationContext, content: Content) -> int:
    """`content_chars` memoized on the session's log: records are immutable and shared between steps."""
    memo: dict[int, tuple[Content, int]] = ctx.session.events.log.derived.setdefault(
        ("context_chars",), {}
    )
    hit = memo.get(id(content))
    if hit is not None and hit[0] is content:
        return hit[1]
    size = content_chars(content)
    memo[id(content)] = (content, size)
    return size


def _splits_a_pair(contents: Sequence[Content], cut: int) -> bool:
    """True when a response kept at or after `cut` answers a call dropped before it. The
    repaired history (C6) has no orphan responses, so a kept response whose call is not kept
    too had its call cut away; this reads only the kept part."""
    kept = contents[cut:]
    calls = {p.function_call.id for c in kept for p in c.parts if p.function_call}
    return any(
        p.function_response.id not in calls
        for c in kept
        for p in c.parts
        if p.function_response and p.function_response.id
    )


class SlidingWindow(ContextStrategy):
    """Send only the newest turns: at most `max_turns` turns and/or about `max_tokens` tokens
    (~chars/4, the K2 estimate), never less than the newest turn.

    A turn starts at a user-role message with text; the window always starts at a turn start
    whose kept part answers every call it holds (a call is never split from its response).
    With `keep_summary` (default) a compaction summary at the start of the history stays in
    front of the window, so a window over a summarized session still knows what came before.

    Cache: with `step=1` the window moves every turn once full, so the cached prefix is lost
    each turn. `step=k` drops turns k at a time: the window's start then stays put (and the
    prefix byte-identical) for k-1 turns out of k, while it holds between `max_turns - k + 1`
    and `max_turns` turns.
    """

    def __init__(
        self,
        max_turns: int | None = None,
        *,
        max_tokens: int | None = None,
        step: int = 1,
        keep_summary: bool = True,
    ) -> None:
        if max_turns is None and max_tokens is None:
            raise ConfigurationError("SlidingWindow needs max_turns, max_tokens or both")
        for label, value in (("max_turns", max_turns), ("max_tokens", max_tokens), ("step", step)):
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ConfigurationError(f"SlidingWindow {label} must be a positive int")
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.step = step
        self.keep_summary = keep_summary

    def __repr__(self) -> str:
        return (
            f"SlidingWindow(max_turns={self.max_turns}, max_tokens={self.max_tokens}, "
            f"step={self.step})"
        )

    @property
    def reads_tail(self) -> bool:
        """Whether the loop may build this window's contents from the newest records only
        (`rondo.flow.contents.build_tail_contents`): with `step=1` the window's cut depends
        only on the turns it keeps and the ones just before them; with a larger step it
        depends on how many turns the whole history holds, so the whole history is read."""
        return self.step == 1

    def covers(self, contents: list[Content], ctx: InvocationContext) -> bool:
        """Whether the window over `contents` (the contents of the newest records) keeps
        exactly what it keeps over the whole history's: it cuts inside them, past their
        first turn — so nothing before them could be kept, with a `step` of 1 (the cut is
        counted back from the newest turn, in turns or tokens, and moved back only to keep
        a call with its response, which a cut past the first turn never needs to cross)."""
        cut_turn = self._cut(contents, ctx)[2]
        return cut_turn is not None and cut_turn >= 1

    def front(self, content: Content) -> bool:
        """Whether the window keeps `content`, as the history's first, in front of what it
        keeps (a compaction summary, with `keep_summary`)."""
        return self.keep_summary and _is_summary(content)

    def view(self, contents: list[Content], ctx: InvocationContext) -> list[Content]:
        head, body, cut_turn, starts = self._cut(contents, ctx)
        if cut_turn is None or (cut_turn == 0 and starts[0] == 0):
            return contents
        cut = starts[cut_turn] if cut_turn > 0 else 0
        return head + body[cut:]

    def _cut(
        self, contents: list[Content], ctx: InvocationContext
    ) -> tuple[list[Content], list[Content], int | None, list[int]]:
        """The summary kept in front, the rest, the index (into the turn starts) of the first
        kept turn (None: fewer than two turns, all kept), and the turn starts."""
        head: list[Content] = []
        body = contents
        if self.keep_summary and contents and _is_summary(contents[0]):
            head, body = contents[:1], contents[1:]
        starts = [i for i, c in enumerate(body) if _is_turn_start(c)]
        if len(starts) <= 1:
            return head, body, None, starts
        cut_turn = 0  # index into `starts` of the first kept turn
        if self.max_turns is not None and len(starts) > self.max_turns:
            excess = len(starts) - self.max_turns
            cut_turn = min(math.ceil(excess / self.step) * self.step, len(starts) - 1)
        if self.max_tokens is not None:
            budget = self.max_tokens * 4
            used = sum(_cached_chars(ctx, c) for c in head)
            fits = len(starts) - 1  # the newest turn is always kept
            used += sum(_cached_chars(ctx, c) for c in body[starts[fits] :])
            while fits > 0:
                turn = sum(_cached_chars(ctx, c) for c in body[starts[fits - 1] : starts[fits]])
                if used + turn > budget:
                    break
                used += turn
                fits -= 1
            if fits > cut_turn:
                # Quantize the token cut the same way, so the window moves in steps.
                cut_turn = min(math.ceil(fits / self.step) * self.step, len(starts) - 1)
        while cut_turn > 0 and _splits_a_pair(body, starts[cut_turn]):
            cut_turn -= 1
        return head, body, cut_turn, starts


class ToolResultTrimming(ContextStrategy):
    """Shorten large tool results in what the model sees; the stored record keeps them whole.

    A function response whose JSON is longer than `max_chars` is replaced in the model's view
    by `{"result_trimmed": true, "original_chars": N, "preview": "<first preview_chars>"}`
    (same name and id, so the call stays paired, C6) — once it is older than the newest
    `keep_turns` turns: the model always sees the full result of what it just called.

    Cache: a result changes once, when its turn falls out of the newest `keep_turns`; the
    trimmed form is then identical on every later step, so the prefix before it stays cached
    and the prefix after it is re-cached once.
    """

    def __init__(self, max_chars: int = 2_000, *, preview_chars: int = 500, keep_turns: int = 1):
        if isinstance(max_chars, bool) or max_chars < 1:
            raise ConfigurationError("ToolResultTrimming max_chars must be a positive int")
        if isinstance(keep_turns, bool) or keep_turns < 0:
            raise ConfigurationError("ToolResultTrimming keep_turns must be an int >= 0")
        self.max_chars = max_chars
        self.preview_chars = max(0, min(preview_chars, max_chars))
        self.keep_turns = keep_turns

    def __repr__(self) -> str:
        return f"ToolResultTrimming(max_chars={self.max_chars}, keep_turns={self.keep_turns})"

    def view(self, contents: list[Content], ctx: InvocationContext) -> list[Content]:
        stop = len(contents)
        if self.keep_turns:
            starts = [i for i, c in enumerate(contents) if _is_turn_start(c)]
            stop = starts[-self.keep_turns] if len(starts) >= self.keep_turns else 0
        memo: dict[int, tuple[Content, Content]] = ctx.session.events.log.derived.setdefault(
            ("trimmed_results", self.max_chars, self.preview_chars), {}
        )
        for index in range(stop):
            content = contents[index]
            if content.role != "user":
                continue
            hit = memo.get(id(content))
            if hit is not None and hit[0] is content:
                contents[index] = hit[1]
                continue
            trimmed = self._trim(content)
            memo[id(content)] = (content, trimmed)
            contents[index] = trimmed
        return contents

    def _trim(self, content: Content) -> Content:
        parts: list[Part] = []
        changed = False
        for part in content.parts:
            response = part.function_response
            if response is not None:
                text = json.dumps(response.response, default=str, ensure_ascii=False)
                if len(text) > self.max_chars:
                    part = Part(
                        function_response=FunctionResponse(
                            name=response.name,
                            id=response.id,
                            response={
                                "result_trimmed": True,
                                "original_chars": len(text),
                                "preview": text[: self.preview_chars],
                            },
                        )
                    )
                    changed = True
            parts.append(part)
        return Content(role=content.role, parts=parts) if changed else content


def normalize_strategies(
    strategies: ContextStrategy | Sequence[ContextStrategy] | None,
) -> tuple[ContextStrategy, ...]:
    """An agent's `context_strategies` argument as a tuple, checked."""
    if strategies is None:
        return ()
    items = (strategies,) if isinstance(strategies, ContextStrategy) else tuple(strategies)
    for item in items:
        if not isinstance(item, ContextStrategy):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(
                "context_strategies takes ContextStrategy objects (SlidingWindow, "
                f"ToolResultTrimming, Summarizing or a subclass), got {type(item).__name__}"
            )
    if sum(isinstance(item, Summarizing) for item in items) > 1:
        raise ConfigurationError("an agent takes at most one Summarizing strategy")
    return items


def summarizing_config(strategies: Sequence[ContextStrategy]) -> CompactionConfig | None:
    """The compaction config of an agent's `Summarizing` strategy, if it has one."""
    for strategy in strategies:
        if isinstance(strategy, Summarizing):
            return strategy.config
    return None
