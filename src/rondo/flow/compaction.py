"""Context compaction: summarize older history once it grows past a token threshold (SPEC K).

Triggered inside an invocation, before the contents are built (P6): when the estimated
context size passes `token_threshold`, the events older than the newest `retention_events`
are summarized by a model, and the summary is appended directly to the session (no plugin
`on_event`, K1). A window never splits a tool call from its response or events sharing a
timestamp, respects branch and scope, and rolls an older summary into the new one. A failed
compaction is logged and the invocation goes on: it is an optimization, never a failure.

K2: the estimate is the latest model-reported prompt size plus ~chars/4 of newer content —
a trigger, not a guarantee. It is maintained incrementally on the session's log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rondo.errors import ModelResponseError
from rondo.events import Event, EventActions, EventCompaction
from rondo.flow.contents import is_visible_branch, newest_summary, summarized_head
from rondo.models.base import GenerateConfig, ModelRequest
from rondo.run_config import CompactionConfig
from rondo.sessions.base import EventLog, EventsView, LazyEventLog
from rondo.types import Content, Part

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.models.base import Model

__all__ = [
    "SUMMARY_PREFIX",
    "CompactionConfig",
    "ContextEstimate",
    "compact",
    "content_chars",
    "estimate_context",
]

# How a summary record's text starts (a window keeps a leading summary by it).
SUMMARY_PREFIX = "Summary of the earlier conversation:\n"

logger = logging.getLogger("rondo.compaction")


def content_chars(content: Content) -> int:
    """The K2 size of a message in characters: text, and calls and results as JSON."""
    total = 0
    for part in content.parts:
        if part.text:
            total += len(part.text)
        elif part.function_call is not None:
            total += len(json.dumps(part.function_call.args, default=str)) + 16
        elif part.function_response is not None:
            total += len(json.dumps(part.function_response.response, default=str)) + 16
    return total


def _chars(event: Event) -> int:
    content = event.content
    if content is None:
        return len(event.input_transcription or "") + len(event.output_transcription or "")
    return content_chars(content)


class ContextEstimate:
    """Incremental K2 estimate for one branch and scope of a session's log."""

    __slots__ = ("_branch", "_chars_since", "_entries", "_scope", "_usage", "upto")

    def __init__(self, branch: str, scope: str, start: int) -> None:
        self._branch = branch
        self._scope = scope
        self._usage = 0  # the latest prompt+output token count a model reported
        self._chars_since = 0  # content newer than that report
        # (timestamp, chars, reported tokens or None) per visible event, for compaction.
        self._entries: list[tuple[float, int, int | None]] = []
        self.upto = start

    def advance(self, log: EventLog, stop: int) -> None:
        if type(log) is LazyEventLog and self.upto < stop:
            log.decode(self.upto, stop)  # in one go, not one by one below
        for index in range(self.upto, stop):
            event = log[index]
            if event.isolation_scope != self._scope:
                continue
            if self._branch and not is_visible_branch(self._branch, event.branch):
                continue
            compaction = event.actions.compaction
            if compaction is not None:
                self._rebuild_after(compaction)
                continue
            usage = event.usage
            reported = usage.input_tokens + usage.output_tokens if usage is not None else None
            self._entries.append((event.timestamp, _chars(event), reported))
            if reported:
                self._usage = reported
                self._chars_since = 0
            else:
                self._chars_since += self._entries[-1][1]
        self.upto = stop

    def _rebuild_after(self, compaction: EventCompaction) -> None:
        start, end = compaction.start_timestamp, compaction.end_timestamp
        summary_chars = len(compaction.compacted_content.text)
        kept = [e for e in self._entries if not start <= e[0] <= end]
        kept.append((end, summary_chars, None))
        kept.sort(key=lambda e: e[0])
        self._entries = kept
        # A report from before the compaction no longer describes the prompt.
        self._usage = 0
        self._chars_since = sum(e[1] for e in kept)

    @property
    def tokens(self) -> int:
        return self._usage + self._chars_since // 4

    @property
    def message_count(self) -> int:
        return len(self._entries)


def estimate_context(events: EventsView, branch: str, scope: str) -> ContextEstimate:
    log = events.log
    key = ("context_estimate", branch, scope, events.start)
    estimate: ContextEstimate | None = log.derived.get(key)
    stop = events.start + len(events)
    if estimate is None or estimate.upto > stop:
        estimate = ContextEstimate(branch, scope, events.start)
        # K3: what the newest summary replaces never counts; it is not read either.
        estimate.upto = summarized_head(log, events.start, stop, branch, scope)
        log.derived[key] = estimate
    estimate.advance(log, stop)
    return estimate


def _visible(ctx: InvocationContext) -> tuple[list[Event], EventCompaction | None]:
    """Visible non-compaction events newer than the latest summary, and that summary. The
    records the summary covers are not read (K3: a long history is decoded only in part)."""
    view = ctx.session.events
    log, start = view.log, view.start
    stop = start + len(view)
    branch, scope = ctx.branch, ctx.isolation_scope
    found = newest_summary(log, start, stop, branch, scope)
    latest = found[1].actions.compaction if found is not None else None
    end = latest.end_timestamp if latest is not None else None
    events: list[Event] = []
    for index, stamp in enumerate(log.timestamps(start, stop), start):
        if end is not None and stamp <= end:
            continue
        event = log[index]
        if event.isolation_scope != scope:
            continue
        if branch and not is_visible_branch(branch, event.branch):
            continue
        if event.actions.compaction is None:
            events.append(event)
    return events, latest


def select_window(events: Sequence[Event], retention: int) -> list[Event]:
    """The oldest events to summarize, leaving at least `retention` newest ones raw and never
    separating a call from its response or events that share a timestamp."""
    cut = len(events) - retention
    while cut > 0:
        kept = events[cut:]
        answered = {r.id for e in kept for r in e.get_function_responses() if r.id}
        called = {c.id for e in events[:cut] for c in e.get_function_calls() if c.id}
        if called & answered:
            cut -= 1
            continue
        if events[cut - 1].timestamp == events[cut].timestamp:
            cut -= 1
            continue
        break
    return list(events[: max(cut, 0)])


def _transcript(events: Sequence[Event], previous: EventCompaction | None) -> str:
    lines: list[str] = []
    if previous is not None:
        lines.append(f"[earlier summary] {previous.compacted_content.text}")
    for event in events:
        content = event.content
        if content is None:
            continue
        for part in content.parts:
            if part.thought:
                continue
            if part.text:
                lines.append(f"[{event.author}] {part.text}")
            elif part.function_call is not None:
                fc = part.function_call
                lines.append(
                    f"[{event.author}] called {fc.name}({json.dumps(fc.args, default=str)})"
                )
            elif part.function_response is not None:
                fr = part.function_response
                lines.append(f"[{fr.name} result] {json.dumps(fr.response, default=str)}")
    return "\n".join(lines)


async def _summarize(model: Model, instruction: str, transcript: str) -> str:
    request = ModelRequest(
        model=model.name,
        contents=[Content.user(transcript)],
        config=GenerateConfig(system_instruction=instruction),
    )
    text: list[str] = []
    async for response in model.generate(request, stream=False):
        if response.partial or response.content is None:
            continue
        text = [p.text for p in response.content.parts if p.text and not p.thought]
    return "".join(text).strip()


async def compact(ctx: InvocationContext, config: CompactionConfig, model: Model) -> bool:
    """Summarize the window and append the summary; False when there was nothing to do."""
    events, previous = _visible(ctx)
    window = select_window(events, config.retention_events)
    if not window:
        return False
    summary = await _summarize(
        config.summarizer or model, config.instruction, _transcript(window, previous)
    )
    if not summary:
        raise ModelResponseError("the summarizer returned no text")
    start = previous.start_timestamp if previous is not None else window[0].timestamp
    record = ctx.new_event(
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=start,
                end_timestamp=window[-1].timestamp,
                compacted_content=Content(
                    role="user",
                    parts=[Part(text=f"{SUMMARY_PREFIX}{summary}")],
                ),
            )
        ),
    )
    # K1: appended directly, not yielded: no plugin on_event, not part of the event stream.
    await ctx.session_service.append_event(ctx.session, record)
    return True
