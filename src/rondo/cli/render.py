"""Showing a lifecycle stream in a terminal (rich) or as JSON lines."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from rondo.lifecycle import (
    HITLPending,
    ReasonDelta,
    ReasonEnd,
    ReasonStart,
    RunEnd,
    RunMetrics,
    ToolCallEnd,
    ToolCallStart,
    to_json,
)

if TYPE_CHECKING:
    from rich.status import Status

__all__ = ["JsonLinesRenderer", "LiveRenderer", "cost_label"]

_MAX_SHOWN = 300


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


def _call(name: str, args: dict[str, object]) -> str:
    shown = ", ".join(
        f"{key}={_short(json.dumps(value, ensure_ascii=False))}" for key, value in args.items()
    )
    return f"{name}({shown})"


def cost_label(metrics: RunMetrics) -> str:
    """A run's price for people: dollars, or "unpriced" when any model call has no price
    (issue 25, SPEC O6) — never "$0", which would read as free; "free (local)" when every call
    ran on this machine."""
    if metrics.cost_usd is None:
        n = metrics.unpriced_calls
        return f"unpriced ({n} call{'s' * (n != 1)})" if n else "unpriced"
    if metrics.model_calls and metrics.free_calls == metrics.model_calls:
        return "free (local)"
    return f"${metrics.cost_usd:.4f}"


class JsonLinesRenderer:
    """Each lifecycle event as one line of JSON (its wire projection), nothing else."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def show(self, event: Any) -> None:
        self.console.file.write(to_json(event) + "\n")
        self.console.file.flush()

    def close(self) -> None:
        """Nothing to tidy up: every line is written as it comes."""


class LiveRenderer:
    """Streamed text as it arrives (thinking dimmed), each tool call with its arguments,
    result or error and duration, a spinner while waiting, usage and timing at the end."""

    def __init__(self, console: Console, root_agent: str) -> None:
        self.console = console
        self.root_agent = root_agent
        self._status: Status | None = None
        self._line_open = False
        self._streamed: set[str] = set()
        self._thinking = False

    # -- the spinner ----------------------------------------------------------------------------

    def _wait(self, message: str) -> None:
        self._stop_waiting()
        self._status = self.console.status(f"[dim]{escape(message)}[/]", spinner="dots")
        self._status.start()

    def _stop_waiting(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    # -- output ---------------------------------------------------------------------------------

    def _end_line(self) -> None:
        if self._line_open:
            self.console.print()
            self._line_open = False

    def _line(self, markup: str) -> None:
        self._stop_waiting()
        self._end_line()
        self.console.print(markup)

    def _text(self, text: str, *, thinking: bool) -> None:
        self._stop_waiting()
        if thinking != self._thinking and self._line_open:
            self._end_line()
        self._thinking = thinking
        self.console.print(text, end="", style="dim italic" if thinking else None, markup=False)
        self._line_open = not text.endswith("\n")

    def show(self, event: Any) -> None:
        if isinstance(event, ReasonStart):
            if event.agent_name != self.root_agent:
                self._line(f"[dim]{escape(event.agent_name)} ›[/]")
            self._wait(f"{event.agent_name} is thinking…")
        elif isinstance(event, ReasonDelta):
            if event.text:
                self._streamed.add(event.reason_id)
                self._text(event.text, thinking=event.is_thinking)
        elif isinstance(event, ReasonEnd):
            self._reason_end(event)
        elif isinstance(event, ToolCallStart):
            self._line(f"[cyan]→ {escape(_call(event.tool_name, event.args))}[/]")
            self._wait(f"running {event.tool_name}…")
        elif isinstance(event, ToolCallEnd):
            took = f"[dim]({event.duration_ms:.0f} ms)[/]"
            if event.error is not None:
                self._line(f"[red]✗ {escape(event.tool_name)}: {escape(event.error)}[/] {took}")
            else:
                self._line(
                    f"[cyan]← {escape(event.tool_name)}[/] {escape(_short(event.result))} {took}"
                )
        elif isinstance(event, HITLPending):
            calls = ", ".join(_call(p.tool_name, p.args) for p in event.pending)
            self._line(f"[yellow]⏸ waiting for: {escape(calls)}[/]")
        elif isinstance(event, RunEnd):
            self._run_end(event)

    def _reason_end(self, event: ReasonEnd) -> None:
        self._stop_waiting()
        if event.reason_id in self._streamed:
            return
        # The model did not stream: show its response now.
        content = event.event.content if event.event is not None else None
        if content is None:
            return
        for part in content.parts:
            if part.text and part.function_call is None:
                self._text(part.text, thinking=part.thought)
        self._end_line()

    def _run_end(self, event: RunEnd) -> None:
        self._stop_waiting()
        self._end_line()
        if event.is_abnormal:
            self.console.print("[yellow]the run ended on an incomplete response[/]")
        m = event.metrics
        calls = f"{m.model_calls} model call{'s' * (m.model_calls != 1)}"
        tools = f"{m.tool_calls} tool call{'s' * (m.tool_calls != 1)}"
        tokens = f"{m.input_tokens} in / {m.output_tokens} out tokens"
        if m.cached_tokens:
            tokens += f" ({m.cached_tokens} cached)"
        parts = [calls, tools, tokens]
        if m.model_calls:
            parts.append(cost_label(m))
        parts.append(f"{m.duration_ms / 1000:.1f} s")
        self.console.print(f"[dim]{' · '.join(parts)}[/]")

    def close(self) -> None:
        """Stop the spinner and finish the line (also after an error or an interrupt)."""
        self._stop_waiting()
        self._end_line()
