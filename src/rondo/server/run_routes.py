"""A session's runs over HTTP: rejoin a run's stream, its status, the list, cancel (SPEC W7).

    GET  …/sessions/{id}/runs                    the session's runs, newest first
    GET  …/sessions/{id}/runs/{run_id}           one run: status and last frame id (a run
                                                 a rewind hid answers `cancelled`,
                                                 `"rewound": true`)
    GET  …/sessions/{id}/runs/{run_id}/stream    its frames after `Last-Event-ID` (or
                                                 `?after=`), then the live tail
    POST …/sessions/{id}/runs/{run_id}/cancel    stop it at its next stop point

A run this process runs (or ran lately) is streamed from its journal: every frame after the
cursor, partial ones included, in the format asked for. Any other run is streamed from what
the store holds: the session log (its records, the non-partial frames of the ADK format) and,
on a store shared by replicas, the non-partial lifecycle frames the running replica kept;
while another replica still runs it the store is read again until it ends
(`rondo.server.rejoin`). `?format=lifecycle` for a run whose lifecycle events were never
built (`/run_sse`) or are nowhere any more (a one-process store that forgot it) is a 400.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import Response

from rondo.events import Event
from rondo.server.adk_routes import _session_or_404  # pyright: ignore[reportPrivateUsage]
from rondo.server.errors import NotFoundError, RunInProgressError, SafeRoute
from rondo.server.frames import Format, FrameId, adk_payloads, format_id, parse_id
from rondo.server.rejoin import check_format, rejoin, stored_format
from rondo.server.run_control import running_elsewhere, stop_run
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
    elsewhere = bool(summaries) and await running_elsewhere(state, key, resuming=True)
    # What other replicas kept of the runs started on a lifecycle route: format, last id.
    kept = state.sessions.run_frames
    kept_runs = await kept.of_session(key) if kept is not None and summaries else {}
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
        else:
            if summary.run_id in kept_runs and kept_runs[summary.run_id][0] == "lifecycle":
                fmt, last = kept_runs[summary.run_id]
            if i == 0 and elsewhere:
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
    key = (app_name, user_id, session_id)
    here = state.detached.get(app_name, user_id, session_id, run_id)
    kept: Format | None = None
    if here is None:
        await _one(state, app_name, user_id, session_id, run_id)  # 404 for an unknown run
        kept = await stored_format(state, key, run_id)
    fmt: Format = format or (here.format if here is not None else kept or "adk")
    check_format(fmt, here, kept)
    return event_stream(rejoin(state, key, run_id, fmt, cursor, here))
