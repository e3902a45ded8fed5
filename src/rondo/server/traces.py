"""The trace routes, in the JSON google-adk's dev UI reads (SPEC O2).

As ADK's `adk web` serves them:
- `GET /dev/apps/{app}/debug/trace/session/{session_id}`: the session's spans,
  `[{name, span_id, trace_id, start_time, end_time, attributes, parent_span_id, logs}]` (ids
  as integers, times in nanoseconds), `[]` when there are none or tracing is off;
- `GET /dev/apps/{app}/debug/trace/{event_id}`: the attributes of the span that produced the
  event (its `gcp.vertex.agent.event_id`), plus `trace_id` and `span_id`; 404 if unknown.
A caller sees only the spans of its own user's sessions: spans are kept by (app, user,
session), so another user's session of the same name shares none of them (issue 26); with
tokens another user's session, like an unknown one, is a 404. Without tokens (any caller may
act as any user) `?user_id=` narrows the answer to one user's session. The spans come from the server's
`SpanStore` (`rondo.server.span_store`), on in `rondo web` and with `rondo api-server --traces`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request

from rondo.server.auth import authorize, caller
from rondo.server.errors import NotFoundError, SafeRoute
from rondo.server.state import server_state

if TYPE_CHECKING:
    from rondo.server.span_store import SpanStore

__all__ = ["router"]


router = APIRouter(route_class=SafeRoute)


def _store(request: Request) -> SpanStore | None:
    return server_state(request).spans


async def _owns(request: Request, app_name: str, user_id: str, session_id: Any) -> bool:
    """Whether `user_id` has the session (the session store knows whose a session is)."""
    if not isinstance(session_id, str):
        return False
    found = await server_state(request).sessions.get_session(
        app_name=app_name, user_id=user_id, session_id=session_id, num_recent_events=0
    )
    return found is not None


def _user(request: Request, user_id: str | None) -> str | None:
    """Whose spans the caller reads: the token's user, else `?user_id=` (None: anyone's)."""
    who = caller(request)
    if who is not None:
        authorize(who, user_id or who)
        return who
    return user_id


@router.get("/dev/apps/{app_name}/debug/trace/session/{session_id}")
async def session_trace(
    request: Request, app_name: str, session_id: str, user_id: str | None = None
) -> list[dict[str, object]]:
    """The spans of a session's runs (ADK's Trace tab); `[]` when tracing is off.

    With tokens, another user's session (or an unknown one: the answer must not tell them
    apart) is a 404, as every other route answers for it (issue 9: "403 or 404")."""
    user = _user(request, user_id)
    who = caller(request)
    if who is not None and not await _owns(request, app_name, who, session_id):
        raise NotFoundError(f"Session not found: {session_id}")
    store = _store(request)
    if store is None:
        return []
    from rondo.server.span_store import span_json

    return [span_json(s) for s in store.session_spans(app_name, session_id, user)]


@router.get("/dev/apps/{app_name}/debug/trace/{event_id}")
async def event_trace(
    request: Request, app_name: str, event_id: str, user_id: str | None = None
) -> dict[str, object]:
    """The attributes of the span that produced an event, with its trace and span ids."""
    store = _store(request)
    user = _user(request, user_id)
    span = store.event_span(app_name, event_id, user) if store is not None else None
    who = caller(request)
    if span is not None and who is not None:
        # Kept by user already; the session store confirms the session is still theirs.
        session_id = (span.attributes or {}).get("gen_ai.conversation.id")
        if not await _owns(request, app_name, who, session_id):
            span = None
    if span is None:
        raise NotFoundError(f"no trace for event {event_id!r} of app {app_name!r}")
    context = span.get_span_context()
    return {
        **dict(span.attributes or {}),
        "trace_id": context.trace_id if context is not None else None,
        "span_id": context.span_id if context is not None else None,
    }
