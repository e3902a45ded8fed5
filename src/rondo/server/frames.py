"""The frames of a run and their ids, in the two formats a run streams in (SPEC W7).

A frame id is `"<n>.<k>"`: `n` is the ordinal of the run's last record at or before the frame
(`rondo.sessions.run_log`: 1, 2, 3… over the run's records in the session log) and `k` counts
the frames of this format since that record. In the ADK format a record's own frames are
`n.0` (and `n.1` when google-adk's framing splits it in two); partial events follow as `n.k`.
In the lifecycle format every lifecycle event is a frame, numbered after the record it
follows. Ids only grow, so `Last-Event-ID` is a cursor: the frames after `n.k` are the frames
of records after `n`, plus those of record `n` itself past `k`. Nothing is written to get an
id — any process that reads the log numbers a run's records the same way.

A run that goes on (an answer to its pending calls, a resume after a crash) numbers its first
frames after the ones its earlier part sent under the same record: `Numbering(…, k=…)`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, cast

from rondo.events import Event
from rondo.lifecycle import ReasonDelta, sse_frame, to_json
from rondo.server.encoded import event_bytes
from rondo.server.errors import BadRequestError, stream_error
from rondo.server.streams import dumps
from rondo.server.wire import event_json

__all__ = [
    "Format",
    "FrameId",
    "Numbering",
    "adk_frame_count",
    "adk_payloads",
    "error_frame",
    "format_id",
    "parse_id",
]

Format = Literal["adk", "lifecycle"]
FrameId = tuple[int, int]


def format_id(frame_id: FrameId) -> str:
    return f"{frame_id[0]}.{frame_id[1]}"


def parse_id(text: str) -> FrameId:
    """A frame id as a client sends it back (`Last-Event-ID`, `?after=`)."""
    head, dot, tail = text.strip().partition(".")
    if not (head.isdigit() and (not dot or tail.isdigit())) or len(text) > 40:
        raise BadRequestError(
            f"{text[:40]!r} is not a frame id: send back the `id:` of the last frame you read "
            "(two numbers, `7.2`)"
        )
    return int(head), int(tail or 0)


def adk_payloads(event: Event) -> list[bytes]:
    """An event as google-adk's `/run_sse` sends it: one JSON payload, or two."""
    if not _splits(event):
        return [event_bytes(event)]
    # As ADK: its web UI renders artifacts from an action-only event, so an event with both
    # content and an artifact delta goes out as two, content first.
    wire = event_json(event)
    actions: dict[str, Any] = {**cast(dict[str, object], wire["actions"]), "artifactDelta": {}}
    content_only = {**wire, "actions": actions}
    action_only = {k: v for k, v in wire.items() if k != "content"}
    return [dumps(content_only), dumps(action_only)]


def adk_frame_count(event: Event) -> int:
    """How many ADK frames `event` makes (`adk_payloads` without encoding it)."""
    return 2 if _splits(event) else 1


def _splits(event: Event) -> bool:
    return bool(event.actions.artifact_delta and event.content is not None and event.content.parts)


def _framed(frame_id: FrameId, payload: bytes, event: str | None = None) -> bytes:
    """A frame with its id; `event` names a lifecycle frame's type (as `to_sse` writes it)."""
    return sse_frame(payload, event=event, id=format_id(frame_id))


class Numbering:
    """Turns a run's items (records and lifecycle events, in the order the run produced them)
    into one format's SSE frames with their ids; the same items always get the same ids."""

    __slots__ = ("format", "k", "last", "n")

    def __init__(self, fmt: Format, base: int, k: int = 0) -> None:
        self.format: Format = fmt
        self.n = base  # the ordinal of the last record before the first item
        self.k = k  # the frames already sent after that record (by an earlier part)
        self.last: FrameId | None = None

    def frames(self, item: Any) -> Iterable[tuple[FrameId, bool, bytes]]:
        """`(id, partial, frame bytes)` for each frame `item` makes in this format."""
        record = isinstance(item, Event)
        if record and not item.partial:
            self.n += 1
            self.k = 0
        if self.format == "adk":
            if not record:
                return ()
            payloads = adk_payloads(item)
            partial = item.partial
        else:
            if record:
                return ()
            payloads = [to_json(item).encode()]
            partial = isinstance(item, ReasonDelta)
        name = None if record else item.type
        out: list[tuple[FrameId, bool, bytes]] = []
        for payload in payloads:
            frame_id = (self.n, self.k)
            self.k += 1
            out.append((frame_id, partial, _framed(frame_id, payload, name)))
        self.last = out[-1][0]
        return out

    def advance(self, item: Any) -> None:
        """Number `item`'s frames without encoding them (for `last`)."""
        record = isinstance(item, Event)
        if record and not item.partial:
            self.n += 1
            self.k = 0
        if record != (self.format == "adk"):
            return
        self.k += adk_frame_count(item) if record else 1
        self.last = (self.n, self.k - 1)

    def error(self, exc: BaseException) -> bytes:
        """The frame that ends a failed run's stream."""
        frame_id = (self.n, self.k)
        self.k += 1
        self.last = frame_id
        name = "error" if self.format == "lifecycle" else None
        return _framed(frame_id, error_frame(self.format, exc), name)


def error_frame(fmt: Format, exc: BaseException) -> bytes:
    payload = stream_error(exc)
    return dumps({"type": "error", **payload} if fmt == "lifecycle" else payload)
