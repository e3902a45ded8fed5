"""A reason round in the lifecycle view: deltas from streamed partial responses (SPEC V1:
start/delta/end boundaries) and the `ReasonEnd` that closes the round."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rondo.lifecycle import DeltaKind, ReasonDelta, ReasonEnd
from rondo.types import Blob, FunctionCall

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.events import Event

__all__ = ["DeltaTracker"]


class DeltaTracker:
    """Turns partial events into ReasonDelta items; text and thinking get their own blocks."""

    __slots__ = ("_ctx", "_open", "_reason_id")

    def __init__(self, ctx: InvocationContext, reason_id: str) -> None:
        self._ctx = ctx
        self._reason_id = reason_id
        self._open: str | None = None  # "text" | "thinking"

    def _delta(self, kind: DeltaKind, text: str = "", media: Blob | None = None) -> ReasonDelta:
        ctx = self._ctx
        return ReasonDelta(
            **ctx.correlation(),
            reason_id=self._reason_id,
            kind=kind,
            text=text,
            is_thinking=kind.startswith("thinking"),
            media=media,
        )

    def feed(self, event: Event) -> list[ReasonDelta]:
        out: list[ReasonDelta] = []
        content = event.content
        if content is None:
            return out
        for part in content.parts:
            if part.text and part.function_call is None:
                block = "thinking" if part.thought else "text"
                if self._open != block:
                    out.extend(self.close())
                    out.append(self._delta("thinking_start" if part.thought else "text_start"))
                    self._open = block
                out.append(
                    self._delta("thinking_delta" if part.thought else "text_delta", part.text)
                )
            elif part.inline_data is not None:
                out.extend(self.close())
                out.append(self._delta("media", media=part.inline_data))
        return out

    def finish(
        self, event: Event | None, tool_calls: list[FunctionCall], started: float
    ) -> list[ReasonDelta | ReasonEnd]:
        """Close the open block and the round: what ends this reason round, in order."""
        end = ReasonEnd(
            **self._ctx.correlation(),
            reason_id=self._reason_id,
            event=event,
            tool_calls=tool_calls,
            duration_ms=(time.perf_counter() - started) * 1000.0,
        )
        return [*self.close(), end]

    def close(self) -> list[ReasonDelta]:
        if self._open is None:
            return []
        kind: DeltaKind = "thinking_end" if self._open == "thinking" else "text_end"
        self._open = None
        return [self._delta(kind)]
