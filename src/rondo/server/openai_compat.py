"""An OpenAI-compatible chat route (SPEC W8): `POST /v1/chat/completions` (streaming and not)
and `GET /v1/models`, for chat front ends that speak OpenAI's API (Open WebUI, LibreChat).

`model` names the app. The conversation maps to a session: `metadata.session_id`, else
`user`. A session the server does not have yet — and every request that names none — starts
with the request's earlier messages stored as its history; after that the session holds the
history and only the user messages after the last assistant message are new. The agent's tool
calls are rondo's own: they are hidden, unless `metadata.tool_calls` is `"text"`, which shows
each finished call as a line of text. A run that pauses for a confirmation answers with text
naming the pending call and the rondo route that decides it. System messages and client-side
`tools` are not used: the app's agent has its own. Errors have OpenAI's shape
(`{"error": {"message", "type", "param", "code"}}`).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterable
from contextlib import aclosing
from typing import Any, Literal, cast

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException

from rondo.errors import RondoError
from rondo.events import Event, PendingCall
from rondo.lifecycle import ReasonDelta, ReasonEnd, RunEnd, ToolCallEnd
from rondo.server.auth import caller
from rondo.server.discovery import AppNotFoundError
from rondo.server.errors import BadRequestError, SafeRoute, describe, status_for
from rondo.server.front_end import (
    DEFAULT_USER,
    FrontRun,
    decode_base64,
    lifecycle,
    open_session,
    start_front_run,
    stream_run,
)
from rondo.server.state import ServerState, server_state
from rondo.server.streams import dumps, sse
from rondo.sessions.base import Session
from rondo.types import Blob, Content, FileData, Part

__all__ = ["ChatCompletionRequest", "router"]

router = APIRouter(tags=["front ends"], route_class=SafeRoute)

DONE = sse(b"[DONE]")
logger = logging.getLogger("rondo.server")


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, object]] | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """OpenAI's chat completions request; sampling settings are the app's, not the client's."""

    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    metadata: dict[str, object] | None = None
    user: str | None = None


def openai_error(
    status: int, message: str, *, kind: str | None = None, code: str | None = None
) -> JSONResponse:
    """An error in OpenAI's shape."""
    default = "invalid_request_error" if status < 500 else "server_error"
    error = {"message": message, "type": kind or default, "param": None, "code": code}
    return JSONResponse({"error": error}, status_code=status)


def _failure(exc: BaseException) -> JSONResponse:
    if isinstance(exc, HTTPException):
        return openai_error(exc.status_code, str(exc.detail))
    if isinstance(exc, AppNotFoundError):
        return openai_error(404, describe(exc), code="model_not_found")
    return openai_error(status_for(exc), describe(exc))


# -- messages -------------------------------------------------------------------------------


def _image_part(url: str) -> Part:
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        mime = header[5:].split(";")[0] or "application/octet-stream"
        return Part(inline_data=Blob(mime_type=mime, data=decode_base64(data)))
    return Part(file_data=FileData(file_uri=url))


def _parts(message: ChatMessage) -> list[Part]:
    content = message.content
    if content is None:
        return []
    if isinstance(content, str):
        return [Part(text=content)] if content else []
    parts: list[Part] = []
    for piece in content:
        if piece.get("type") == "text" and piece.get("text"):
            parts.append(Part(text=str(piece["text"])))
        elif piece.get("type") == "image_url":
            image = cast(dict[str, object], piece.get("image_url") or {})
            url = image.get("url")
            if not isinstance(url, str):
                raise BadRequestError("an image_url part needs its image_url.url")
            parts.append(_image_part(url))
        elif piece.get("type") == "file":
            file = cast(dict[str, object], piece.get("file") or {})
            data = file.get("file_data")
            if not isinstance(data, str):
                raise BadRequestError("a file part needs its file.file_data (a data: URL)")
            parts.append(_image_part(data))
    return parts


def _split(messages: list[ChatMessage]) -> tuple[list[ChatMessage], list[Part]]:
    """The history before the new turn, and the new turn's parts (the user messages after the
    last assistant message)."""
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    turn = [m for m in messages[last + 1 :] if m.role == "user"]
    if not turn:
        raise BadRequestError("the last message must be a user message: there is nothing to run")
    earlier = messages[: last + 1]
    earlier.extend(m for m in messages[last + 1 :] if m.role not in ("user",))
    return earlier, [p for m in turn for p in _parts(m)]


async def _seed(
    state: ServerState, session: Session, author: str, history: list[ChatMessage]
) -> None:
    """Store a new session's earlier messages as its history."""
    for message in history:
        if message.role not in ("user", "assistant"):
            continue  # the app's agent has its own instructions and tools
        parts = _parts(message)
        if not parts:
            continue
        role = "user" if message.role == "user" else "model"
        who = "user" if message.role == "user" else author
        await state.sessions.append_event(
            session, Event(author=who, content=Content(role=role, parts=parts))
        )


# -- responses ------------------------------------------------------------------------------


def _pending_text(pending: list[PendingCall], app: str, user: str, session: str) -> str:
    lines: list[str] = []
    for call in pending:
        what = f"{call.tool_name}({json.dumps(dict(call.args), ensure_ascii=False)})"
        route = f"POST /apps/{app}/users/{user}/sessions/{session}/pending/{call.call_id}"
        lines.append(
            f"[waiting: {what} needs a decision — {route} with "
            '{"decision": "approve" | "reject" | "skip"}]'
        )
    return "\n".join(lines)


def _tool_text(event: ToolCallEnd) -> str:
    outcome = event.error if event.error is not None else json.dumps(event.result, default=str)
    return f"[{event.tool_name}({json.dumps(dict(event.args), default=str)}) → {outcome}]\n"


def _usage(end: RunEnd) -> dict[str, int]:
    m = end.metrics
    return {
        "prompt_tokens": m.input_tokens,
        "completion_tokens": m.output_tokens,
        "total_tokens": m.total_tokens or m.input_tokens + m.output_tokens,
    }


class CompletionStream:
    """Lifecycle events → `chat.completion.chunk` frames."""

    def __init__(self, model: str, *, show_tools: bool, usage: bool, where: tuple[str, str, str]):
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.model = model
        self.show_tools = show_tools
        self.usage = usage
        self.where = where
        self._started = False
        self._streamed: set[str] = set()

    def _chunk(self, delta: dict[str, object], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse(dumps(self.base("chat.completion.chunk") | {"choices": [choice]}))

    def base(self, kind: str) -> dict[str, object]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}

    def _text(self, text: str) -> list[bytes]:
        if not text:
            return []
        frames: list[bytes] = []
        if not self._started:
            self._started = True
            frames.append(self._chunk({"role": "assistant", "content": ""}))
        frames.append(self._chunk({"content": text}))
        return frames

    def frames(self, event: Any) -> Iterable[bytes]:
        if isinstance(event, ReasonDelta):
            self._streamed.add(event.reason_id)
            return self._text(event.text) if event.kind == "text_delta" else []
        if isinstance(event, ReasonEnd):
            record = event.event
            if event.reason_id in self._streamed or record is None or record.content is None:
                return []
            return self._text(record.content.text)
        if isinstance(event, ToolCallEnd) and self.show_tools:
            return self._text(_tool_text(event))
        if isinstance(event, RunEnd):
            return self._end(event)
        return []

    def _end(self, end: RunEnd) -> list[bytes]:
        frames = self._text(_pending_text(end.pending, *self.where)) if end.pending else []
        if not self._started:
            frames.extend(self._text(" "))
        frames.append(self._chunk({}, "stop"))
        if self.usage:
            frames.append(
                sse(
                    dumps(
                        self.base("chat.completion.chunk") | {"choices": [], "usage": _usage(end)}
                    )
                )
            )
        frames.append(DONE)
        return frames

    def error(self, exc: BaseException) -> dict[str, object]:
        return {
            "error": {"message": describe(exc), "type": "server_error", "param": None, "code": None}
        }


async def _complete(
    state: ServerState, run: FrontRun, stream: CompletionStream
) -> dict[str, object]:
    """Run to the end (the server's run, as the streamed one); the whole answer as one
    `chat.completion`."""
    text: list[str] = []
    end: RunEnd | None = None
    async with aclosing(lifecycle(state, run)) as events:
        async for event in events:
            if isinstance(event, ToolCallEnd) and stream.show_tools:
                text.append(_tool_text(event))
            elif isinstance(event, RunEnd):
                end = event
    assert end is not None
    content = "".join(text) + end.text
    if end.pending:
        content += ("\n" if content else "") + _pending_text(end.pending, *stream.where)
    message = {"role": "assistant", "content": content}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return stream.base("chat.completion") | {"choices": [choice], "usage": _usage(end)}


# -- routes ---------------------------------------------------------------------------------


@router.get("/v1/models")
async def list_models(request: Request) -> Response:
    """The apps, as OpenAI models."""
    names = server_state(request).apps.names()
    data = [{"id": n, "object": "model", "created": 0, "owned_by": "rondo"} for n in names]
    return JSONResponse({"object": "list", "data": data})


def _session_id(body: ChatCompletionRequest) -> str | None:
    named = (body.metadata or {}).get("session_id")
    if isinstance(named, str) and named:
        return named
    return body.user or None


async def _start(
    request: Request, body: ChatCompletionRequest
) -> tuple[FrontRun, CompletionStream]:
    state = server_state(request)
    who = caller(request)
    user_id = who or DEFAULT_USER
    session_id = _session_id(body) or uuid.uuid4().hex
    runner = await state.apps.runner(body.model)
    history, parts = _split(list(body.messages))
    session = await open_session(state, body.model, user_id, session_id)
    if session.version == 0 and history:
        await _seed(state, session, runner.agent.name, history)
    mode: Literal["text", "hidden"] = (
        "text" if (body.metadata or {}).get("tool_calls") == "text" else "hidden"
    )
    include = body.stream_options is not None and body.stream_options.include_usage
    projection = CompletionStream(
        body.model,
        show_tools=mode == "text",
        usage=include,
        where=(body.model, user_id, session_id),
    )
    run = await start_front_run(
        state,
        who,
        app_name=body.model,
        user_id=user_id,
        session_id=session_id,
        message=Content(role="user", parts=parts),
        streaming=body.stream,
        multitask=(body.metadata or {}).get("multitask"),
    )
    return run, projection


@router.post("/v1/chat/completions", response_class=Response)
async def chat_completions(request: Request) -> Response:
    """OpenAI's chat completions for the app named by `model`."""
    try:
        body = ChatCompletionRequest.model_validate(await request.json())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return openai_error(400, f"{where}: {first['msg']}", code="invalid_request")
    except ValueError:
        return openai_error(400, "the body is not JSON", code="invalid_json")
    try:
        run, stream = await _start(request, body)
        if body.stream:
            return await stream_run(server_state(request), run, stream.frames, stream.error)
        return JSONResponse(await _complete(server_state(request), run, stream))
    except (RondoError, HTTPException) as exc:
        return _failure(exc)
    except Exception as exc:
        logger.error("POST /v1/chat/completions failed", exc_info=exc)
        return openai_error(500, describe(exc))
