"""A session's runs over HTTP: rejoin a run's stream, its status, the list, cancel (SPEC W7).

    GET  …/sessions/{id}/runs                    the session's runs, newest first
    GET  …/sessions/{id}/runs/{run_id}           one run: status and last frame id (a run
                                                 a rewind hid answers `cancelled`,
                                                 `"rewound": true`)
    GET  …/sessions/{id}/runs/{run_id}/stream    its frames after `Last-Event-ID` (or
                                                 `?after=`), then the live tail
    POST …/sessions/{id}/runs/{run_id}/cancel    stop it at its next stop point

A run this process runs (or ran lately) is streamed from its journal: every frame after the
cursor, partial ones included, in the format asked for. Any other run is streamed from the
session log, which holds its records — the non-partial frames of the ADK format — whatever
replica ran it; while another replica still runs it (it holds the session's claim) the log is
read again every `POLL` seconds until the claim is freed. Lifecycle events live only on the
replica running the run: `?format=lifecycle` for a run of another replica is refused (409).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import Response

from rondo.events import Event
from rondo.lifecycle import sse_frame
from rondo.server.adk_routes import _session_or_404  # pyright: ignore[reportPrivateUsage]
from rondo.server.errors import NotFoundError, RunInProgressError, SafeRoute
from rondo.server.frames import Format, FrameId, adk_payloads, format_id, parse_id
from rondo.server.run_control import POLL, running_elsewhere, stop_run
from rondo.server.runs import DetachedRun
from rondo.server.state import ServerState, owner
from rondo.server.streams import dumps, event_stream
from rondo.sessions.base import Session
from rondo.sessions.run_log import RunStatus, RunSummary, run_records, runs_of

__all__ = ["router"]

router = APIRouter(tags=["rondo"], route_class=SafeRoute)

_RUNS = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/runs"
_STREAM_DOC: dict[int | str, dict[str, object]] = {
    200: {
        "content": {"text/event-stream": {}},
        "description": "The run's frames after the cursor (`id:` and `data:` lines, as the "
        "route that started it sent them), then its live frames until it ends.",
    }
}


def _last_log_id(records: list[tuple[int, Event]]) -> FrameId | None:
    """The id of the last ADK frame the log holds for a run (its last agent record's)."""
    for n, event in reversed(records):
        if event.author != "user":
            return (n, len(adk_payloads(event)) - 1)
    return None


def _summary_json(
    session_id: str, summary: RunSummary, status: RunStatus, last: FrameId | None, fmt: str
) -> dict[str, object]:
    return {
        "runId": summary.run_id,
        "sessionId": session_id,
        "status": status,
        "lastEventId": format_id(last) if last is not None else None,
        "format": fmt,
        "invocationIds": list(summary.invocation_ids),
        "startTime": summary.started,
        "updateTime": summary.updated,
    }


async def _describe(
    state: ServerState, session: Session, summaries: list[RunSummary]
) -> list[dict[str, object]]:
    key = (session.app_name, session.user_id, session.id)
    here = {run.run_id: run for run in state.detached.of_session(key)}
    elsewhere = bool(summaries) and await running_elsewhere(state, key)
    out: list[dict[str, object]] = []
    for i, summary in enumerate(summaries):
        run = here.get(summary.run_id)
        status: RunStatus = summary.status
        last = _last_log_id(list(run_records(session.events, summary.run_id)))
        fmt = "adk"
        if run is not None:
            status = run.status or status
            last = run.last_frame_id() or last
            fmt = run.format
        elif i == 0 and elsewhere:
            status = "running"  # the newest run, and another replica holds the session
        out.append(_summary_json(session.id, summary, status, last, fmt))
    return out


@router.get(_RUNS)
async def list_runs(app_name: str, user_id: str, session_id: str, request: Request) -> Response:
    """The session's runs, newest first: status, last frame id, invocations, times."""
    state = owner(request, user_id)
    session = await _session_or_404(state, app_name, user_id, session_id)
    runs = await _describe(state, session, runs_of(session.events, session.pending))
    return Response(dumps(runs), media_type="application/json")


async def _one(
    state: ServerState, app_name: str, user_id: str, session_id: str, run_id: str
) -> dict[str, object]:
    session = await _session_or_404(state, app_name, user_id, session_id)
    summaries = runs_of(session.events, session.pending)
    described = await _describe(state, session, summaries)
    found = next((d for d in described if d["runId"] == run_id), None)
    if found is None:
        found = _rewound_run(session, run_id)
    if found is None:
        raise NotFoundError(f"no run {run_id!r} in session {session_id!r}")
    return found


def _rewound_run(session: Session, run_id: str) -> dict[str, object] | None:
    """A run a rewind hid (a `rollback`, a rewind before it): it stays answerable, as
    `cancelled` — its records are in `…/rewound` — so a client polling it learns it ended."""
    summary = next((s for s in runs_of(session.rewound, []) if s.run_id == run_id), None)
    if summary is None:
        return None
    last = _last_log_id(list(run_records(session.rewound, run_id)))
    return {**_summary_json(session.id, summary, "cancelled", last, "adk"), "rewound": True}


@router.get(_RUNS + "/{run_id}")
async def get_run(
    app_name: str, user_id: str, session_id: str, run_id: str, request: Request
) -> Response:
    """One run: `running`, `paused` (it waits on pending calls), `completed`, `failed` or
    `cancelled`, and the id of its last frame."""
    state = owner(request, user_id)
    found = await _one(state, app_name, user_id, session_id, run_id)
    return Response(dumps(found), media_type="application/json")


@router.post(_RUNS + "/{run_id}/cancel")
async def cancel_run(
    app_name: str, user_id: str, session_id: str, run_id: str, request: Request
) -> Response:
    """Stop the run at its next stop point, from any replica; answers its status after."""
    state = owner(request, user_id)
    await _one(state, app_name, user_id, session_id, run_id)
    stopped = await stop_run(
        state, (app_name, user_id, session_id), run_id, "cancelled by the user"
    )
    if not stopped:
        raise RunInProgressError(f"run {run_id!r} is not running: there is nothing to cancel")
    found = await _one(state, app_name, user_id, session_id, run_id)
    return Response(dumps(found), media_type="application/json")


@router.get(_RUNS + "/{run_id}/stream", response_class=Response, responses=_STREAM_DOC)
async def stream_run(
    app_name: str,
    user_id: str,
    session_id: str,
    run_id: str,
    request: Request,
    after: Annotated[str | None, Query(description="The last frame id read.")] = None,
    format: Annotated[Literal["adk", "lifecycle"] | None, Query()] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> Response:
    """The run's frames after `Last-Event-ID` (or `?after=`; all without), in the format of
    the route that started it unless `format` says otherwise, then the live tail."""
    state = owner(request, user_id)
    state.apps.check(app_name)
    cursor_text = last_event_id if last_event_id is not None else after
    cursor = parse_id(cursor_text) if cursor_text else None
    run = state.detached.get(app_name, user_id, session_id, run_id)
    if run is not None:
        return event_stream(_from_journal(run, format or run.format, cursor))
    await _one(state, app_name, user_id, session_id, run_id)  # 404 for an unknown run
    if format == "lifecycle":
        raise RunInProgressError(
            f"run {run_id!r} did not run on this server, and lifecycle events live only on "
            "the replica that runs a run: rejoin it with ?format=adk (its records, from the "
            "log) or on the replica running it"
        )
    key = (app_name, user_id, session_id)
    return event_stream(_from_log(state, key, run_id, cursor))


async def _from_journal(
    run: DetachedRun, fmt: Format, cursor: FrameId | None
) -> AsyncGenerator[bytes, None]:
    async for frame in run.subscribe(fmt, cursor, earlier=True):
        yield frame


async def _from_log(
    state: ServerState, key: tuple[str, str, str], run_id: str, cursor: FrameId | None
) -> AsyncGenerator[bytes, None]:
    """The run's ADK frames from the session log, after `cursor`; while another replica
    still runs it, read again until it ends."""
    app_name, user_id, session_id = key
    sent: FrameId = cursor if cursor is not None else (0, -1)
    store = state.sessions
    while True:
        # The claim first: once it is free, the read after it holds every record.
        going = await running_elsewhere(state, key)
        session = await store.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
        if session is None:
            return
        for n, event in run_records(session.events, run_id):
            if event.author == "user" or n < sent[0]:
                continue
            for k, payload in enumerate(adk_payloads(event)):
                if (n, k) > sent:
                    sent = (n, k)
                    yield sse_frame(payload, id=format_id(sent))
        if not going:
            return
        await asyncio.sleep(POLL)
