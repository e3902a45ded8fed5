"""google-adk's REST + SSE surface: the same paths, bodies and JSON (SPEC W1).

Routes are thin: check the caller, call the session store, artifact store or runner, and
project what comes back with `wire`. Answers are written as bytes directly (`_json`); the
`response_model`s document the shapes in the OpenAPI schema.
"""

from __future__ import annotations

import sys
import time
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel

from rondo._version import __version__
from rondo.errors import SessionExistsError
from rondo.events import Event, EventActions
from rondo.resume import find_resume_point
from rondo.server.auth import authorize, caller, check_shared_state
from rondo.server.encoded import session_bytes
from rondo.server.errors import BadRequestError, InvalidValueError, NotFoundError, SafeRoute
from rondo.server.runs import DetachedRunRequest, collect, respond, start_run
from rondo.server.state import ServerState, owner, server_state
from rondo.server.streams import dumps
from rondo.server.wire import (
    ArtifactVersion,
    CreateSessionRequest,
    ListAppsResponse,
    RunAgentRequest,
    SaveArtifactRequest,
    UpdateSessionRequest,
    WireEvent,
    WirePart,
    WireSession,
    event_json,
    part_json,
    session_json,
    version_tag,
)
from rondo.sessions.base import Session
from rondo.sessions.rewind import artifact_version
from rondo.types import Part

__all__ = ["require_message", "router"]

router = APIRouter(route_class=SafeRoute)

_SESSION = "/apps/{app_name}/users/{user_id}/sessions/{session_id}"
_ARTIFACT = _SESSION + "/artifacts/{artifact_name:path}"


class _JsonAnswer(Response):
    """A 200 JSON answer with its headers written out at once: Starlette's `Response`
    renders and lists them through a few calls, and an ETag added later through its
    `MutableHeaders` a few more (every run reads a session back: issue 25.5). The same
    headers, in the same order."""

    media_type = "application/json"

    def __init__(self, body: bytes, etag: str | None = None) -> None:  # pyright: ignore[reportMissingSuperCall]
        self.status_code = 200
        self.background = None
        self.body = body
        headers = [(b"content-length", str(len(body)).encode()), (b"content-type", _JSON_TYPE)]
        if etag is not None:
            headers.append((b"etag", etag.encode("latin-1")))
        self.raw_headers = headers


_JSON_TYPE = b"application/json"


def _json(value: Any, etag: str | None = None) -> Response:
    return _JsonAnswer(dumps(value), etag)


# -- server -------------------------------------------------------------------------------


@router.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/version")
async def version() -> dict[str, str]:
    info = sys.version_info
    return {
        "version": __version__,
        "language": "python",
        "language_version": f"{info.major}.{info.minor}.{info.micro}",
    }


@router.get("/list-apps", response_model=list[str] | ListAppsResponse)
async def list_apps(request: Request, detailed: Annotated[bool, Query()] = False) -> Response:
    """The apps of AGENTS_DIR; `detailed` loads each to report its root agent."""
    state = server_state(request)
    names = state.apps.names()
    if not detailed:
        return _json(names)
    apps: list[dict[str, object]] = []
    for name in names:
        try:
            agent = await state.apps.root_agent(name)
            apps.append(
                {
                    "name": name,
                    "rootAgentName": agent.name,
                    "description": agent.description,
                    "language": "python",
                }
            )
        except Exception as exc:  # one broken app must not hide the others
            apps.append(
                {"name": name, "rootAgentName": "", "description": str(exc), "language": "python"}
            )
    return _json({"apps": apps})


class TelemetryConsent(BaseModel):
    telemetry: bool


@router.get("/config/telemetry")
async def get_telemetry(request: Request) -> dict[str, bool]:
    """ADK's dev UI asks this; rondo sends no telemetry, it only remembers the answer."""
    state = server_state(request)
    return {"telemetry": state.telemetry_consent}


@router.post("/config/telemetry")
async def set_telemetry(
    body: TelemetryConsent,
    request: Request,
    x_adk_telemetry_request: Annotated[str | None, Header()] = None,
) -> dict[str, bool]:
    state = server_state(request)
    if x_adk_telemetry_request != "true":
        raise BadRequestError("Forbidden: missing required security header")
    state.telemetry_consent = body.telemetry
    return {"telemetry": body.telemetry}


# -- sessions -----------------------------------------------------------------------------


async def _session_or_404(
    state: ServerState, app_name: str, user_id: str, session_id: str
) -> Session:
    state.apps.check(app_name)
    session = await state.sessions.get_session(
        app_name=app_name, user_id=user_id, session_id=session_id
    )
    if session is None:
        raise NotFoundError("Session not found")
    return session


@router.get("/apps/{app_name}/users/{user_id}/sessions", response_model=list[WireSession])
async def list_sessions(app_name: str, user_id: str, request: Request) -> Response:
    """The user's sessions of this app, newest first, without their events."""
    state = owner(request, user_id)
    state.apps.check(app_name)
    sessions: list[dict[str, object]] = []
    token: str | None = None
    while True:
        page = await state.sessions.list_sessions(
            app_name=app_name, user_id=user_id, page_token=token
        )
        sessions.extend(session_json(s, events=False) for s in page.sessions)
        token = page.next_page_token
        if not token:
            return _json(sessions)


async def _create(
    state: ServerState,
    app_name: str,
    user_id: str,
    session_id: str | None,
    initial: dict[str, object] | None,
    who: str | None,
) -> Response:
    state.apps.check(app_name)
    check_shared_state(who, initial)
    try:
        session = await state.sessions.create_session(
            app_name=app_name, user_id=user_id, session_id=session_id, state=initial
        )
    except SessionExistsError:
        raise SessionExistsError(f"Session already exists: {session_id}") from None
    return _JsonAnswer(session_bytes(session))


@router.post("/apps/{app_name}/users/{user_id}/sessions", response_model=WireSession)
async def create_session(
    app_name: str, user_id: str, request: Request, body: CreateSessionRequest | None = None
) -> Response:
    """Create a session (`sessionId` optional: a random id otherwise); 409 if it exists."""
    state = owner(request, user_id)
    if body is not None and body.events:
        raise BadRequestError("creating a session with events is not supported by rondo")
    return await _create(
        state,
        app_name,
        user_id,
        body.session_id if body else None,
        body.state if body else None,
        caller(request),
    )


@router.post(_SESSION, response_model=WireSession)
async def create_session_with_id(
    app_name: str,
    user_id: str,
    session_id: str,
    request: Request,
    initial: Annotated[dict[str, object] | None, Body()] = None,
) -> Response:
    """Create the session `session_id`; the body, if any, is its initial state (as ADK)."""
    state = owner(request, user_id)
    return await _create(state, app_name, user_id, session_id, initial, caller(request))


@router.get(_SESSION, response_model=WireSession)
async def get_session(app_name: str, user_id: str, session_id: str, request: Request) -> Response:
    """The session; its `ETag` is its version (what a rewind's `expectedVersion` names)."""
    state = owner(request, user_id)
    session = await _session_or_404(state, app_name, user_id, session_id)
    return _JsonAnswer(session_bytes(session), version_tag(session))


@router.patch(_SESSION, response_model=WireSession)
async def update_session(
    app_name: str, user_id: str, session_id: str, body: UpdateSessionRequest, request: Request
) -> Response:
    """Apply a state delta without running the agent (one user event records it)."""
    state = owner(request, user_id)
    check_shared_state(caller(request), body.state_delta)
    session = await _session_or_404(state, app_name, user_id, session_id)
    event = Event(
        author="user",
        invocation_id=f"p-{session_id}-{time.time_ns()}",
        actions=EventActions(state_delta=body.state_delta),
    )
    # A run's claim covers this write too: it would otherwise cut that run short (SPEC W5).
    release = await state.claims.take(app_name, user_id, session_id)
    try:
        await state.sessions.append_event(session, event)
    finally:
        await release()
    return _JsonAnswer(session_bytes(session))


@router.delete(_SESSION)
async def delete_session(app_name: str, user_id: str, session_id: str, request: Request) -> None:
    state = owner(request, user_id)
    state.apps.check(app_name)
    await state.sessions.delete_session(app_name=app_name, user_id=user_id, session_id=session_id)
    # Issue 25: with it, what the app's models cached for it at their providers (an app that
    # never ran here cached nothing here; another replica's caches lapse by their TTL).
    runner = state.apps.loaded(app_name)
    if runner is not None:
        await runner.release_session_caches(user_id=user_id, session_id=session_id)


# -- artifacts ----------------------------------------------------------------------------


@router.get(_SESSION + "/artifacts", response_model=list[str])
async def list_artifacts(
    app_name: str, user_id: str, session_id: str, request: Request
) -> Response:
    state = owner(request, user_id)
    session = await _session_or_404(state, app_name, user_id, session_id)
    names = await state.artifacts.list_artifact_keys(
        app_name=app_name, user_id=user_id, session_id=session_id
    )
    if session.rewound:  # the files only rewound records saved read as gone
        names = [n for n in names if artifact_version(session, n) != (True, None)]
    return _json(names)


@router.post(_SESSION + "/artifacts", response_model=ArtifactVersion)
async def save_artifact(
    app_name: str, user_id: str, session_id: str, body: SaveArtifactRequest, request: Request
) -> Response:
    state = owner(request, user_id)
    await _session_or_404(state, app_name, user_id, session_id)
    part = body.artifact.to_part()
    version = await state.artifacts.save_artifact(
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        filename=body.filename,
        artifact=part,
    )
    answer = _version_json(app_name, user_id, session_id, body.filename, version, part)
    answer["customMetadata"] = body.custom_metadata or {}
    answer["createTime"] = time.time()
    return _json(answer)


async def _load(
    state: ServerState,
    app_name: str,
    user_id: str,
    session_id: str,
    name: str,
    version: int | None,
) -> Response:
    session = await _session_or_404(state, app_name, user_id, session_id)
    if version is None and session.rewound:  # issue 21.5: the version before the rewind
        pinned, version = artifact_version(session, name)
        if pinned and version is None:
            raise NotFoundError("Artifact not found")
    part = await state.artifacts.load_artifact(
        app_name=app_name, user_id=user_id, session_id=session_id, filename=name, version=version
    )
    if part is None:
        raise NotFoundError("Artifact not found")
    return _json(part_json(part))


def _version(version_id: str) -> int | None:
    """ADK's version path segment: a number, or `latest`."""
    if version_id == "latest":
        return None
    try:
        return int(version_id)
    except ValueError:
        raise InvalidValueError("Invalid version ID") from None


def _canonical_uri(app_name: str, user_id: str, session_id: str, name: str, version: int) -> str:
    return (
        f"rondo://apps/{app_name}/users/{user_id}/sessions/{session_id}"
        f"/artifacts/{name}/versions/{version}"
    )


def _version_json(
    app_name: str, user_id: str, session_id: str, name: str, version: int, part: Part | None
) -> dict[str, object]:
    out: dict[str, object] = {
        "version": version,
        "canonicalUri": _canonical_uri(app_name, user_id, session_id, name, version),
        "customMetadata": {},
    }
    if part is not None and part.inline_data is not None:
        out["mimeType"] = part.inline_data.mime_type
    return out


@router.get(_ARTIFACT + "/versions/metadata", response_model=list[ArtifactVersion])
async def list_artifact_versions_metadata(
    app_name: str, user_id: str, session_id: str, artifact_name: str, request: Request
) -> Response:
    """Every version's metadata (rondo keeps no custom metadata or creation time)."""
    state = owner(request, user_id)
    await _session_or_404(state, app_name, user_id, session_id)
    store = state.artifacts
    out: list[dict[str, object]] = []
    for version in await store.list_versions(
        app_name=app_name, user_id=user_id, session_id=session_id, filename=artifact_name
    ):
        part = await store.load_artifact(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            filename=artifact_name,
            version=version,
        )
        out.append(_version_json(app_name, user_id, session_id, artifact_name, version, part))
    return _json(out)


@router.get(_ARTIFACT + "/versions/{version_id}/metadata", response_model=ArtifactVersion)
async def get_artifact_version_metadata(
    app_name: str,
    user_id: str,
    session_id: str,
    artifact_name: str,
    version_id: str,
    request: Request,
) -> Response:
    state = owner(request, user_id)
    await _session_or_404(state, app_name, user_id, session_id)
    store = state.artifacts
    versions = await store.list_versions(
        app_name=app_name, user_id=user_id, session_id=session_id, filename=artifact_name
    )
    wanted = _version(version_id)
    version = versions[-1] if wanted is None and versions else wanted
    if version is None or version not in versions:
        raise NotFoundError("Artifact version not found")
    part = await store.load_artifact(
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        filename=artifact_name,
        version=version,
    )
    return _json(_version_json(app_name, user_id, session_id, artifact_name, version, part))


@router.get(_ARTIFACT + "/versions", response_model=list[int])
async def list_artifact_versions(
    app_name: str, user_id: str, session_id: str, artifact_name: str, request: Request
) -> Response:
    state = owner(request, user_id)
    await _session_or_404(state, app_name, user_id, session_id)
    versions = await state.artifacts.list_versions(
        app_name=app_name, user_id=user_id, session_id=session_id, filename=artifact_name
    )
    return _json(versions)


@router.get(_ARTIFACT + "/versions/{version_id}", response_model=WirePart)
async def load_artifact_version(
    app_name: str,
    user_id: str,
    session_id: str,
    artifact_name: str,
    version_id: str,
    request: Request,
) -> Response:
    """One version (a number, or `latest`)."""
    state = owner(request, user_id)
    version = _version(version_id)
    return await _load(state, app_name, user_id, session_id, artifact_name, version)


# Last of the GET artifact routes: `{artifact_name:path}` would also match `.../versions`.
@router.get(_ARTIFACT, response_model=WirePart)
async def load_artifact(
    app_name: str,
    user_id: str,
    session_id: str,
    artifact_name: str,
    request: Request,
    version: Annotated[int | None, Query()] = None,
) -> Response:
    state = owner(request, user_id)
    return await _load(state, app_name, user_id, session_id, artifact_name, version)


@router.delete(_ARTIFACT)
async def delete_artifact(
    app_name: str, user_id: str, session_id: str, artifact_name: str, request: Request
) -> None:
    state = owner(request, user_id)
    await _session_or_404(state, app_name, user_id, session_id)
    await state.artifacts.delete_artifact(
        app_name=app_name, user_id=user_id, session_id=session_id, filename=artifact_name
    )


# -- runs ---------------------------------------------------------------------------------


_NO_MESSAGE = (
    "Field required: newMessage is the user's message. A run without one only resumes an "
    "interrupted invocation (SPEC D1), and this session has none"
)


async def require_message(state: ServerState, who: str | None, body: RunAgentRequest) -> None:
    """Refuse (422, naming `newMessage`) a run without a message, unless the session's last
    invocation was cut short: then the empty message means "resume it" (SPEC D1), on every
    run route. A message without parts counts as none."""
    if body.new_message is not None and body.new_message.parts:
        return
    body.new_message = None
    if not body.app_name:
        return  # start_run names the missing app
    authorize(who, body.user_id)
    runner = await state.apps.runner(body.app_name)
    session = await state.sessions.get_session(
        app_name=body.app_name, user_id=body.user_id, session_id=body.session_id
    )
    if session is None:
        return  # start_run answers 404
    if not body.state_delta and find_resume_point(session.events, session.pending, runner.agent):
        return
    raise RequestValidationError(
        [{"type": "missing", "loc": ("body", "newMessage"), "msg": _NO_MESSAGE, "input": None}]
    )


@router.post("/run", response_model=list[WireEvent])
async def run(body: DetachedRunRequest, request: Request) -> Response:
    """Run one invocation to its end; the answer is the array of its events. Without
    `newMessage` it resumes the session's interrupted invocation (422 if there is none)."""
    state = server_state(request)
    await require_message(state, caller(request), body)
    body.streaming = False  # as ADK: `/run` never streams the model
    events = await collect(state, await start_run(state, caller(request), body))
    return _json([event_json(e) for e in events])


@router.post(
    "/run_sse",
    response_class=Response,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "One `data: <Event JSON>` line per event, then a blank line; a "
            'run that fails ends with `data: {"error": "..."}`.',
        }
    },
)
async def run_sse(body: DetachedRunRequest, request: Request) -> Response:
    """Run one invocation and stream its events (partial ones too with `streaming`); each
    frame's `id:` lets a client rejoin the run (`…/runs/{runId}/stream`). Without
    `newMessage` it resumes the session's interrupted invocation (422 if none)."""
    state = server_state(request)
    await require_message(state, caller(request), body)
    started = await start_run(state, caller(request), body)
    return await respond(state, started, "adk", background=body.background)
