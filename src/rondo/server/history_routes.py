"""Rewind and fork a session over HTTP (issue 21.5).

    POST …/sessions/{id}/rewind   {"invocationId", "expectedVersion"?}  the session as it
                                  was before that invocation (one record appended)
    POST …/sessions/{id}/fork     {"invocationId"?, "sessionId"?}  a new session holding the
                                  history before that invocation (all of it without one)
    GET  …/sessions/{id}/rewound  the records rewinds hide, in log order (audit)

A rewind takes the session's run claim like a run does: while a run goes on it is refused
(409; send the run request with `"multitask": "rollback"` to stop and rewind a run). An
invocation the visible history lacks is 404, a stale `expectedVersion` 409. The routes act
only on the path's user's sessions: another user's session id is simply not found.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import Field

from rondo.errors import StaleSessionError
from rondo.server.adk_routes import _session_or_404  # pyright: ignore[reportPrivateUsage]
from rondo.server.errors import SafeRoute, VersionConflictError
from rondo.server.state import owner
from rondo.server.streams import dumps
from rondo.server.wire import (
    _Body,  # pyright: ignore[reportPrivateUsage]
    event_json,
    session_json,
    version_tag,
)
from rondo.sessions.rewind import fork_session, rewind_session

__all__ = ["ForkRequest", "RewindRequest", "router"]

router = APIRouter(tags=["rondo"], route_class=SafeRoute)

_SESSION = "/apps/{app_name}/users/{user_id}/sessions/{session_id}"


class RewindRequest(_Body):
    invocation_id: str = Field(min_length=1, description="Rewind to before this invocation.")
    expected_version: int | None = Field(
        default=None,
        description="Refuse (409) unless the session is still at this version (the `ETag` "
        "of `GET …/sessions/{id}`, a number).",
    )


class ForkRequest(_Body):
    invocation_id: str | None = Field(
        default=None, min_length=1, description="Keep the history before this invocation."
    )
    session_id: str | None = Field(default=None, description="The new session's id.")


def _json(value: Any, status: int = 200) -> Response:
    return Response(dumps(value), status_code=status, media_type="application/json")


@router.post(_SESSION + "/rewind")
async def rewind(
    app_name: str, user_id: str, session_id: str, body: RewindRequest, request: Request
) -> Response:
    """The session as it was before `invocationId`: events, state, artifact versions."""
    state = owner(request, user_id)
    await _session_or_404(state, app_name, user_id, session_id)
    release = await state.claims.take(app_name, user_id, session_id)
    try:
        record = await rewind_session(
            state.sessions,
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            rewind_before_invocation_id=body.invocation_id,
            expected_version=body.expected_version,
        )
    except StaleSessionError as exc:
        raise VersionConflictError(
            f"the session changed since version {body.expected_version}: read it again and "
            "rewind from what it holds now"
            if body.expected_version is not None
            else f"the session changed while it was being rewound ({exc}); try again"
        ) from None
    finally:
        await release()
    session = await _session_or_404(state, app_name, user_id, session_id)
    answer = _json({**session_json(session), "rewindEventId": record.id})
    answer.headers["ETag"] = version_tag(session)
    return answer


@router.post(_SESSION + "/fork")
async def fork(
    app_name: str, user_id: str, session_id: str, body: ForkRequest, request: Request
) -> Response:
    """A new session with the history before `invocationId` (all of it by default); the
    original is untouched. 201 with the new session."""
    state = owner(request, user_id)
    await _session_or_404(state, app_name, user_id, session_id)
    created = await fork_session(
        state.sessions,
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        before_invocation_id=body.invocation_id,
        new_session_id=body.session_id,
    )
    session = await _session_or_404(state, app_name, user_id, created.id)
    return _json(session_json(session), 201)


@router.get(_SESSION + "/rewound")
async def rewound(app_name: str, user_id: str, session_id: str, request: Request) -> Response:
    """The records rewinds hide from the session (the rewind records included)."""
    state = owner(request, user_id)
    session = await _session_or_404(state, app_name, user_id, session_id)
    return _json([event_json(e) for e in session.rewound])
