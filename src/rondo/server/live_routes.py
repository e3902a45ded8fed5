"""Live calls over a WebSocket (SPEC L1, issue 20 item 5).

    WS /run_live            google-adk's route: LiveRequest JSON in, ADK Event JSON out
    WS /run_live_lifecycle  the same call, lifecycle events (`RunStart` … `RunEnd`) out

Both take ADK's query parameters (`app_name`, `user_id`, `session_id`, `modalities`,
`enable_session_resumption`, `save_live_blob`, `explicit_vad_signal`, …) and the RunConfig
options ADK's route drops (google/adk-python#4263): `input_audio_transcription`,
`output_audio_transcription`, `speech_config` and `realtime_input_config` (JSON, passed to the
provider), `session_resumption_handle`, `max_llm_calls`. Close codes follow ADK's: 1002
"Session not found", 1011 with the error for a run that fails; rondo adds 1008 with the
problem for a bad parameter, an unknown app or a busy session, 1007 for a message that is not a
LiveRequest, and 1000 once the call has ended. The token → user check is the middleware's
(`server.auth`), as on every other route.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any, Literal, cast

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rondo.errors import ConfigurationError
from rondo.lifecycle import to_json
from rondo.models.live import LiveRequest, LiveRequestQueue
from rondo.run_config import RunConfig, SessionResumptionConfig
from rondo.server.auth import SUBPROTOCOL_KEY, USER_KEY
from rondo.server.claims import Release
from rondo.server.errors import RunInProgressError
from rondo.server.state import ServerState
from rondo.server.streams import dumps
from rondo.server.wire import WireBlob, WireContent, event_json
from rondo.types import Blob

__all__ = ["LiveParams", "WireLiveRequest", "router"]

router = APIRouter()
logger = logging.getLogger("rondo.server.live")

# RFC 6455 close codes.
NORMAL, PROTOCOL, BAD_DATA, POLICY, INTERNAL = 1000, 1002, 1007, 1008, 1011
_MAX_REASON = 123  # a close frame's reason is at most 123 bytes


class LiveParams(BaseModel):
    """The query parameters of a live route: ADK's, then the RunConfig options it drops."""

    model_config = ConfigDict(extra="forbid")

    app_name: str = Field(min_length=1)
    user_id: str = Field(min_length=1)
    session_id: str = Field(min_length=1)
    modalities: list[Literal["TEXT", "AUDIO", "VIDEO"]] = ["AUDIO"]
    proactive_audio: bool | None = None
    enable_affective_dialog: bool | None = None
    enable_session_resumption: bool | None = None
    save_live_blob: bool = False
    explicit_vad_signal: bool | None = None
    # -- beyond ADK (#4263) --
    input_audio_transcription: bool = True
    output_audio_transcription: bool = True
    speech_config: dict[str, object] | None = None
    realtime_input_config: dict[str, object] | None = None
    session_resumption_handle: str | None = None
    max_llm_calls: int | None = None

    def run_config(self) -> RunConfig:
        resumption = None
        if self.enable_session_resumption is not None or self.session_resumption_handle:
            resumption = SessionResumptionConfig(
                handle=self.session_resumption_handle, transparent=self.enable_session_resumption
            )
        realtime = self.realtime_input_config
        if realtime is None and self.explicit_vad_signal:
            # The client sends activity_start / activity_end itself: the provider's own voice
            # detection must be off.
            realtime = {"automatic_activity_detection": {"disabled": True}}
        extra: dict[str, Any] = {}
        if self.max_llm_calls is not None:
            extra["max_llm_calls"] = self.max_llm_calls
        return RunConfig(
            response_modalities=tuple(self.modalities),
            speech_config=self.speech_config,
            input_audio_transcription=self.input_audio_transcription,
            output_audio_transcription=self.output_audio_transcription,
            session_resumption=resumption,
            realtime_input_config=realtime,
            save_live_blob=self.save_live_blob,
            **extra,
        )


_JSON_PARAMS = ("speech_config", "realtime_input_config")
_UNSUPPORTED = ("proactive_audio", "enable_affective_dialog")


def parse_params(websocket: WebSocket) -> LiveParams:
    """The query string as `LiveParams`; `ValueError` with the problem when it is not."""
    raw: dict[str, Any] = {}
    for key, value in websocket.query_params.multi_items():
        if key == "access_token":  # the browser's token, taken by `server.auth`
            continue
        if key == "modalities":
            raw.setdefault("modalities", []).append(value)
        elif key in _JSON_PARAMS:
            try:
                raw[key] = json.loads(value)
            except json.JSONDecodeError:
                raise ConfigurationError(f"{key} must be a JSON object") from None
        else:
            raw[key] = value
    try:
        params = LiveParams.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "query"
        raise ConfigurationError(f"{where}: {first['msg']}") from None
    for name in _UNSUPPORTED:
        if getattr(params, name):
            raise ConfigurationError(f"{name} is not supported by rondo's live models")
    return params


class WireLiveRequest(BaseModel):
    """google-adk's `LiveRequest` as JSON (camelCase or snake_case keys)."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    content: WireContent | None = None
    blob: WireBlob | None = None
    activity_start: dict[str, object] | None = Field(default=None, alias="activityStart")
    activity_end: dict[str, object] | None = Field(default=None, alias="activityEnd")
    audio_stream_end: bool = Field(default=False, alias="audioStreamEnd")
    close: bool = False

    def to_request(self) -> LiveRequest:
        # One thing per request, in ADK's priority order.
        if self.close:
            return LiveRequest(close=True)
        if self.activity_start is not None:
            return LiveRequest(activity_start=True)
        if self.activity_end is not None:
            return LiveRequest(activity_end=True)
        if self.audio_stream_end:
            return LiveRequest(audio_stream_end=True)
        if self.blob is not None:
            blob = Blob(
                mime_type=self.blob.mime_type or "application/octet-stream",
                data=self.blob.data or b"",
            )
            return LiveRequest(blob=blob)
        if self.content is not None:
            return LiveRequest(content=self.content.to_content())
        raise ConfigurationError(
            "a LiveRequest sets content, blob, activity_start, activity_end or close"
        )


class _Closed(Exception):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    with contextlib.suppress(RuntimeError, WebSocketDisconnect):
        await websocket.close(
            code=code, reason=reason.encode()[:_MAX_REASON].decode(errors="ignore")
        )


async def _refuse(websocket: WebSocket, problem: str) -> None:
    """Refuse the handshake with HTTP 403, as google-adk's route refuses a query it cannot
    validate; the problem goes in a `{"detail": ...}` body when the server can send one."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(JSONResponse({"detail": problem}, status_code=403))
    else:
        await websocket.close(code=POLICY, reason=problem.encode()[:_MAX_REASON].decode())


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        items = cast(dict[str, object], value).items()
        return {k: _without_nulls(v) for k, v in items if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in cast(list[object], value)]
    return value


def _parse(text: str) -> LiveRequest:
    try:
        # google-genai's pydantic dump writes every unset field as null: null is unset.
        data = _without_nulls(json.loads(text))
        return WireLiveRequest.model_validate(data).to_request()
    except (ValidationError, ValueError) as exc:
        detail = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise _Closed(BAD_DATA, f"not a LiveRequest: {detail}") from None


async def _read(websocket: WebSocket, queue: LiveRequestQueue, route: _Route) -> None:
    """Put the client's frames on the queue. On google-adk's route, as there, a frame that is
    not a LiveRequest is logged and dropped, and the socket is read (and frames dropped) after
    the call until the client leaves; on rondo's route such a frame closes it 1007."""
    while True:
        text = await websocket.receive_text()
        if queue.closed:
            continue  # the call has ended: nothing more goes to the model
        try:
            request = _parse(text)
        except _Closed as exc:
            if not route.adk:
                raise
            logger.warning("live call: dropped a frame: %s", exc.reason)
            continue
        queue.send(request)
        if request.close and not route.adk:
            return


class _Route:
    """What differs between the two live routes: the frames sent, and whether the route
    keeps google-adk's observable behaviour (`adk`) or rondo's own (closing 1000 when the
    call ends, 1007 on a frame that is not a LiveRequest)."""

    def __init__(
        self, frames: Callable[..., AsyncGenerator[Any, None]], encode: Callable[[Any], str], *,
        adk: bool,
    ) -> None:  # fmt: skip
        self.frames = frames
        self.encode = encode
        self.adk = adk


async def _serve(websocket: WebSocket, route: _Route) -> None:
    state: ServerState = websocket.app.state.rondo
    try:
        params = parse_params(websocket)
    except ValueError as exc:
        await _refuse(websocket, str(exc))
        return
    who = websocket.scope.get(USER_KEY)
    if who is not None and who != params.user_id:
        await _refuse(websocket, "this token may not access another user's data")
        return
    # Echo the `rondo.bearer.<token>` subprotocol the token came in, as a browser requires.
    await websocket.accept(subprotocol=websocket.scope.get(SUBPROTOCOL_KEY))
    try:
        runner = await state.apps.runner(params.app_name)
    except Exception as exc:  # an unknown app, or one that fails to load
        await _close(websocket, POLICY, str(exc))
        return
    ids = (params.app_name, params.user_id, params.session_id)
    session = await state.sessions.get_session(
        app_name=ids[0], user_id=ids[1], session_id=ids[2], num_recent_events=0
    )
    if session is None:
        await _close(websocket, PROTOCOL, "Session not found")  # as google-adk
        return
    try:
        release = await _claim(state, ids)
    except Exception as exc:  # busy, or a bad id
        await _close(websocket, POLICY, str(exc))
        return
    queue = LiveRequestQueue()
    state.live_calls[ids] = queue

    async def forward() -> None:
        items = route.frames(
            runner,
            user_id=params.user_id,
            session_id=params.session_id,
            live_request_queue=queue,
            run_config=params.run_config(),
        )
        try:
            async with contextlib.aclosing(items):
                async for item in items:
                    await websocket.send_text(route.encode(item))
        finally:
            # The call is over: the session is free for the next run at once, whether or not
            # the client keeps the socket. Released before it stops being listed, so a
            # client reconnecting meanwhile waits for it (`_claim`) instead of being refused.
            if not queue.closed:
                queue.close()
            await release()
            if state.live_calls.get(ids) is queue:
                del state.live_calls[ids]

    tasks = [asyncio.create_task(forward()), asyncio.create_task(_read(websocket, queue, route))]
    try:
        await _finish(websocket, tasks, route)
    finally:
        if not queue.closed:
            queue.close()  # the call is ending: see `_claim`
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await release()


# How long a new live connection waits for the call it would replace on the same session to
# finish ending (its client has just left; the run is winding down).
_ENDING_GRACE = 2.0


async def _claim(state: ServerState, ids: tuple[str, str, str]) -> Release:
    """The session's claim for a live call. A call on it that is ending (its queue closed:
    the client left, or the call is over) is waited for, so a client that reconnects at once
    — a page reload, a dropped network — gets its session rather than "busy"."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _ENDING_GRACE
    while True:
        try:
            return await state.claims.take(*ids)
        except RunInProgressError:
            ending = state.live_calls.get(ids)
            if ending is None or not ending.closed or loop.time() >= deadline:
                raise
            await asyncio.sleep(0.01)


async def _finish(websocket: WebSocket, tasks: list[asyncio.Task[None]], route: _Route) -> None:
    """Wait for the call to end (the run's end) or fail (either side), then close as ADK:
    1011 with the error; after a call that ended, google-adk's route leaves the socket to the
    client, rondo's closes it 1000."""
    forward, reader = tasks
    pending = set(tasks)
    while forward in pending:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        if reader in done and reader.exception() is None:
            continue  # the client sent `close`: the run ends once the queue drains
        for task in done:
            exc = task.exception()
            if isinstance(exc, WebSocketDisconnect):
                return  # the client left: the call ends with it
            if isinstance(exc, _Closed):
                await _close(websocket, exc.code, exc.reason)
                return
            if exc is not None:
                await _close(websocket, INTERNAL, str(exc) or type(exc).__name__)
                return
    if route.adk:
        with contextlib.suppress(WebSocketDisconnect):
            await reader  # until the client leaves
        return
    await _close(websocket, NORMAL, "the live call ended")


def _adk_json(item: Any) -> str:
    return dumps(event_json(item)).decode()


def _adk_frames(runner: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
    return runner.run_live(**kwargs)


def _lifecycle_frames(runner: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
    return runner.stream_live(**kwargs)


_ADK_ROUTE = _Route(_adk_frames, _adk_json, adk=True)
_LIFECYCLE_ROUTE = _Route(_lifecycle_frames, to_json, adk=False)


@router.websocket("/run_live")
async def run_live(websocket: WebSocket) -> None:
    """google-adk's live route: each stored or partial record as ADK's Event JSON."""
    await _serve(websocket, _ADK_ROUTE)


@router.websocket("/run_live_lifecycle")
async def run_live_lifecycle(websocket: WebSocket) -> None:
    """The same live call as lifecycle events, one JSON frame each (`type` names it)."""
    await _serve(websocket, _LIFECYCLE_ROUTE)
