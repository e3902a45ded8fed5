"""What the front-end protocol routes share (SPEC W8): the session a conversation maps to, the
run (through the same checks, claim and stream as `/run_lifecycle`), and state as JSON Patch.

Each protocol (`ag_ui`, `ai_sdk`, `openai_compat`, `mcp_server`) is a projection of the
lifecycle stream: it parses its request into a rondo message, starts the run here and maps the
lifecycle events to its frames. This module is the one place that knows how a run is started,
so the routes follow any change of the run machinery with one edit.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import importlib.util
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any, Literal, TypedDict

from fastapi import APIRouter, Response

from rondo.events import Event
from rondo.lifecycle import ReasonDelta, ReasonEnd
from rondo.run_config import RunConfig
from rondo.server.errors import BadRequestError, stream_error
from rondo.server.files import MAX_FILE_BYTES, check_files
from rondo.server.multitask import MULTITASKS, Multitask
from rondo.server.runs import DetachedRun, DetachedRunRequest, RunRequest, launch, start_run
from rondo.server.state import ServerState
from rondo.server.streams import Frames, dumps, event_stream, sse
from rondo.sessions.base import TEMP_PREFIX, Session
from rondo.types import Content

__all__ = [
    "DEFAULT_USER",
    "MAX_FILE_BYTES",
    "FrontRun",
    "Piece",
    "TextParts",
    "check_files",
    "decode_base64",
    "json_patch",
    "lifecycle",
    "multitask_of",
    "open_session",
    "routers",
    "start_front_run",
    "state_changes",
    "stream_run",
]


def multitask_of(value: object) -> Multitask:
    """A protocol's `multitask` field (None: the default, `reject`), or a 400 naming the
    values it may take."""
    if value is None:
        return "reject"
    for name in MULTITASKS:
        if value == name:
            return name
    raise BadRequestError(
        f"multitask must be one of {', '.join(MULTITASKS)} (what a message on a busy session "
        f"does), got {value!r}"
    )


# The user of a request on a server without tokens: these protocols name no user.
DEFAULT_USER = "user"


async def open_session(state: ServerState, app_name: str, user_id: str, session_id: str) -> Session:
    """The conversation's session (its state and pending calls, no events), created on first
    use: these protocols have no create-session call of their own."""
    state.apps.check(app_name)
    store = state.sessions
    session = await store.get_session(
        app_name=app_name, user_id=user_id, session_id=session_id, num_recent_events=0
    )
    if session is None:
        session = await store.create_session(
            app_name=app_name, user_id=user_id, session_id=session_id
        )
    return session


FrontRun = RunRequest


async def start_front_run(
    state: ServerState,
    who: str | None,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    message: Content | None,
    state_delta: Mapping[str, object] | None = None,
    extra_tools: Sequence[object] = (),
    streaming: bool = True,
    multitask: object = None,
) -> FrontRun:
    """Check and claim the session as every run route does, then set the run's config.

    Files in `message` are checked (size, type, `start_run`) and saved as the session's
    artifacts; the stored message refers to them (`RunConfig.save_input_blobs_as_artifacts`).
    `multitask` is what a message on a busy session does, as on the native routes (W7):
    each protocol carries it in a field of its own (`multitask_of` checks it)."""
    body = DetachedRunRequest(
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        streaming=streaming,
        state_delta=dict(state_delta) if state_delta else None,
        multitask=multitask_of(multitask),
    )
    run = await start_run(state, who, body, message=message)
    run.config = RunConfig(
        streaming_mode=run.config.streaming_mode,
        extra_tools=tuple(extra_tools),
        save_input_blobs_as_artifacts=True,
    )
    return run


async def stream_run(
    state: ServerState,
    run: FrontRun,
    frames: Frames,
    error_payload: Any = stream_error,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The run's lifecycle stream as SSE frames of one protocol. The run is the server's
    (`rondo.server.runs.launch`), as on `/run_lifecycle`: it holds the session's claim,
    appears in the session's runs, can be cancelled and follows `onDisconnect`."""
    detached = await launch(state, run, observe=True)
    if not detached.run_id and detached.error is not None:
        # Accepted, then failed before its first item: the failure is the stream's one event.
        response = Response(
            sse(dumps(error_payload(detached.error))),
            media_type="text/event-stream",
            headers=_HEADERS,
        )
    else:
        response = event_stream(
            _frames(detached, frames, error_payload), on_leave=_leaver(run, detached)
        )
    for key, value in (headers or {}).items():
        response.headers[key] = value
    return response


def _leaver(run: FrontRun, detached: DetachedRun) -> Callable[[], None] | None:
    if run.on_disconnect != "cancel":
        return None

    def leave() -> None:
        if not detached.done:
            detached.cancel("the client disconnected")

    return leave


async def _frames(
    detached: DetachedRun, frames: Frames, error_payload: Callable[[BaseException], Any]
) -> AsyncGenerator[bytes, None]:
    """The run's lifecycle events (its records skipped: the projections map the events).

    The frames one event maps to go out as one body chunk: a protocol that spells an event as
    several frames (the AI SDK's tool input as start, delta and available) would otherwise
    cost a socket write, and the client a read, per frame."""
    async for _, item in detached.items():
        if isinstance(item, Event):
            continue
        chunk = b"".join(frames(item))
        if chunk:
            yield chunk
    if detached.error is not None:
        yield sse(dumps(error_payload(detached.error)))


async def lifecycle(state: ServerState, run: FrontRun) -> AsyncGenerator[Any, None]:
    """The run's lifecycle events, the run being the server's (as `stream_run`'s); a run
    that fails raises its error after its last event."""
    detached = await launch(state, run, observe=True)
    async for _, item in detached.items():
        if not isinstance(item, Event):
            yield item
    if detached.error is not None:
        raise detached.error


def state_changes(client: Any, session: Session) -> dict[str, object]:
    """The keys of a client's view of the state that differ from the session's (its edits).
    Keys the client dropped are kept: a client that knows less changes nothing."""
    if not isinstance(client, dict):
        return {}
    current = session.state
    return {
        key: value
        for key, value in client.items()  # pyright: ignore[reportUnknownVariableType]
        if isinstance(key, str)
        and not key.startswith(TEMP_PREFIX)
        and (key not in current or current[key] != value)
    }


def _pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


class PatchOp(TypedDict):
    """One RFC 6902 operation (rondo's patches only `add`)."""

    op: Literal["add"]
    path: str
    value: object


def json_patch(delta: Mapping[str, object]) -> list[PatchOp]:
    """A record's state delta as RFC 6902 operations on the session's state (as a client sees
    it: no `temp:` keys). `add` sets a member whether or not it exists."""
    return [
        {"op": "add", "path": _pointer(key), "value": value}
        for key, value in delta.items()
        if not key.startswith(TEMP_PREFIX)
    ]


# Each protocol's route module and the package it needs (its extra): served when installed.
_PROTOCOLS: tuple[tuple[str, str | None], ...] = (
    ("rondo.server.ag_ui", "ag_ui"),
    ("rondo.server.ai_sdk", None),
    ("rondo.server.openai_compat", None),
)


def routers() -> list[APIRouter]:
    """The routers of the front-end protocols whose packages are installed."""
    found: list[APIRouter] = []
    for module, needs in _PROTOCOLS:
        if needs is None or importlib.util.find_spec(needs) is not None:
            found.append(importlib.import_module(module).router)
    return found


def decode_base64(value: str) -> bytes:
    """A file's bytes as the protocols send them: base64, either alphabet, padding optional."""
    text = value.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequestError(f"a file's data is not valid base64: {exc}") from None


TextKind = Literal["text", "thinking"]
# One step of a streamed part: ("start" | "delta" | "end", kind, part id, text).
Piece = tuple[Literal["start", "delta", "end"], TextKind, str, str]


class TextParts:
    """A run's model text and thinking as parts that open, grow and close, for the protocols
    that stream them: from the deltas when the model streams, else from each round's record.
    Empty pieces are dropped (no protocol accepts an empty delta)."""

    def __init__(self) -> None:
        self._streamed: set[str] = set()  # reason rounds whose output came as deltas
        self._open: tuple[TextKind, str] | None = None
        self._count = 0

    def close(self) -> list[Piece]:
        if self._open is None:
            return []
        kind, part_id = self._open
        self._open = None
        return [("end", kind, part_id, "")]

    def _piece(self, kind: TextKind, reason_id: str, text: str) -> list[Piece]:
        if not text:
            return []
        pieces: list[Piece] = []
        if self._open is None or self._open[0] != kind:
            pieces.extend(self.close())
            self._count += 1
            self._open = (kind, f"{reason_id}-{self._count}")
            pieces.append(("start", kind, self._open[1], ""))
        pieces.append(("delta", kind, self._open[1], text))
        return pieces

    def delta(self, event: ReasonDelta) -> list[Piece]:
        self._streamed.add(event.reason_id)
        kind: TextKind = "thinking" if event.kind.startswith("thinking") else "text"
        if event.kind.endswith("_delta"):
            return self._piece(kind, event.reason_id, event.text)
        if event.kind.endswith("_end") and self._open is not None and self._open[0] == kind:
            return self.close()
        return []  # a start opens the part with its first non-empty piece

    def reason_end(self, event: ReasonEnd) -> list[Piece]:
        """The round's text when it was not streamed, then the open part closed."""
        pieces: list[Piece] = []
        record = event.event
        streamed = event.reason_id in self._streamed
        if record is not None and record.content is not None and not record.partial:
            for part in record.content.parts if not streamed else ():
                if part.text:
                    kind: TextKind = "thinking" if part.thought else "text"
                    pieces.extend(self._piece(kind, event.reason_id, part.text))
        return [*pieces, *self.close()]


_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
