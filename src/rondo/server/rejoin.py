"""A run's frames for a client that rejoins it, from wherever they are (SPEC W7).

A run's frames live in up to three places:

- this server's journal of the run (`DetachedRun`): every frame, partial ones included, in
  either format, while this process keeps the run (it runs it, or ran it lately);
- the session log: the run's records, which are its non-partial ADK frames, on any replica;
- the frames a shared store keeps (`rondo.sessions.run_frames`): its non-partial lifecycle
  frames, written by the replica that ran each part of it, with the ids it streamed them
  under.

A rejoin sends the frames after the client's cursor in id order: what came before this
server's part of the run (an earlier part ran on another replica, or before a restart) from
the store, then this server's journal, then — while another replica goes on with the run —
the store again, read every `POLL` seconds until that replica frees the session. The running
replica keeps its frames at most `KEEP_EVERY` seconds after making them, and all of them
before it frees the session, so the read after that holds every one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING

from rondo.events import Event
from rondo.lifecycle import sse_frame
from rondo.server.errors import BadRequestError
from rondo.server.frames import Format, FrameId, adk_payloads, format_id
from rondo.server.run_control import POLL, running_elsewhere
from rondo.server.runs import KEEP_EVERY, RunHost
from rondo.sessions.run_log import run_records

if TYPE_CHECKING:
    from rondo.server.runs import DetachedRun

__all__ = ["check_format", "rejoin", "stored_format"]

Key = tuple[str, str, str]
_NOTHING: FrameId = (0, -1)  # before every frame


async def stored_format(
    state: RunHost, key: Key, run_id: str, *, wait: bool = True
) -> Format | None:
    """The format of the route that started a run no process here knows, as the kept
    frames tell it; None when the store keeps none of it (then only its records are). A
    run going on elsewhere that kept nothing yet is given the time to keep its first
    (with `wait`)."""
    kept = state.sessions.run_frames
    if kept is None:
        return None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 4 * KEEP_EVERY
    while True:
        fmt = await kept.format((*key, run_id))
        if fmt is not None:
            return "lifecycle" if fmt == "lifecycle" else "adk"
        if not wait or loop.time() > deadline:
            return None
        if not await running_elsewhere(state, key, resuming=True):
            return None
        await asyncio.sleep(KEEP_EVERY / 2)


def check_format(fmt: Format, here: DetachedRun | None, kept: Format | None) -> None:
    """Refuse (400) a lifecycle stream of a run whose lifecycle events were never built
    (started on `/run_sse`) or are nowhere to be found any more."""
    if fmt != "lifecycle":
        return
    if here is not None and here.observe:
        return
    if here is None and kept is not None:
        return
    if here is not None:
        why = "was started on /run_sse, which does not build lifecycle events"
    else:
        why = (
            "is not known to this server, and no lifecycle frames of it are kept (it ran on "
            "/run_sse, or in a server process that has forgotten it: only a store shared by "
            "replicas keeps them)"
        )
    raise BadRequestError(f"this run {why}: rejoin it with ?format=adk (its records, from the log)")


async def rejoin(
    state: RunHost,
    key: Key,
    run_id: str,
    fmt: Format,
    cursor: FrameId | None,
    here: DetachedRun | None,
) -> AsyncGenerator[bytes, None]:
    """The run's frames in `fmt` after `cursor` (all without), live until it ends."""
    sent = cursor if cursor is not None else _NOTHING
    while True:
        if here is not None:
            first = here.first_frame_id(fmt)
            if sent < first:  # an earlier part of the run ran elsewhere, or before a restart
                async for frame_id, frame in _stored(state, key, run_id, fmt, sent, first, False):
                    sent = frame_id
                    yield frame
            async for frame_id, frame in here.frames_after(fmt, sent):
                sent = frame_id
                yield frame
        async for frame_id, frame in _stored(state, key, run_id, fmt, sent, None, True):
            sent = frame_id
            yield frame
        # A replica that died was running it, and this one took it over meanwhile.
        newer = state.detached.get(*key, run_id)
        if newer is None or newer is here:
            return
        here = newer


async def _stored(
    state: RunHost,
    key: Key,
    run_id: str,
    fmt: Format,
    sent: FrameId,
    until: FrameId | None,
    follow: bool,
) -> AsyncGenerator[tuple[FrameId, bytes], None]:
    """The run's frames the store holds after `sent` (and before `until`); with `follow`,
    read again while another replica goes on with the run (or is about to resume it)."""
    while True:
        # The claim first: once it is free, the read after it holds every frame.
        going = follow and await running_elsewhere(state, key, resuming=True)
        frames, newest = await _read(state, key, run_id, fmt, sent)
        for frame_id, frame in frames:
            if until is not None and frame_id >= until:
                return
            sent = frame_id
            yield frame_id, frame
        # Another replica goes on with *this* run (not a newer run of the session).
        if not going or newest not in (None, run_id):
            return
        await asyncio.sleep(POLL)


async def _read(
    state: RunHost, key: Key, run_id: str, fmt: Format, sent: FrameId
) -> tuple[list[tuple[FrameId, bytes]], str | None]:
    """The frames after `sent`, and the run id of the session's newest record."""
    app_name, user_id, session_id = key
    store = state.sessions
    kept = store.run_frames
    if fmt == "lifecycle":
        if kept is None:  # a store of one process: the journal had them, or nothing has
            return [], None
        rows = await kept.after((*key, run_id), sent)
        session = await store.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id, num_recent_events=1
        )
        newest = session.events[-1].run_id if session is not None and session.events else None
        return [((n, k), frame.encode()) for n, k, frame in rows], newest or None
    session = await store.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
    if session is None:
        return [], None
    return _log_frames(session.events, run_id, sent), (
        session.events[-1].run_id or None if session.events else None
    )


def _log_frames(events: Sequence[Event], run_id: str, sent: FrameId) -> list[tuple[FrameId, bytes]]:
    """The run's ADK frames after `sent`, from its records in the log."""
    out: list[tuple[FrameId, bytes]] = []
    for n, event in run_records(events, run_id):
        if event.author == "user" or n < sent[0]:
            continue
        for k, payload in enumerate(adk_payloads(event)):
            if (n, k) > sent:
                out.append(((n, k), sse_frame(payload, id=format_id((n, k)))))
    return out
