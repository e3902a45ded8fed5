"""The AI SDK's UI message stream at `POST /ai-sdk/{app}` (SPEC W8): what `useChat` (its
`DefaultChatTransport`) sends and reads, as a projection of the lifecycle stream.

The request is `useChat`'s: `id` is the rondo session (created on first use) and `messages`
the whole conversation as `UIMessage`s, of which only the newest is new — the session holds
the rest. A newest user message is the run's message (its text and file parts); a newest
assistant message carries the client's answers: approval responses to the run's confirmation
requests (`addToolApprovalResponse`) and outputs of client-side tools (`addToolOutput`).
Client-side tools may be declared in an optional `tools` list (`[{name, description,
inputSchema}]`, sent with the transport's `body`); the run ends on their call.

The answer is SSE, header `x-vercel-ai-ui-message-stream: v1`: `start`, steps, `text-*`,
`reasoning-*`, `tool-input-*` and `tool-output-*` (rondo's tools show as dynamic tools),
`tool-approval-request` for a confirmation (its `approvalId` is the confirmation's call id),
`data-state` with the session's state (one part, id `state`, replaced as it changes),
`finish` and `[DONE]`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, cast
from urllib.parse import unquote_to_bytes

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from rondo.events import Event, PendingCall
from rondo.lifecycle import (
    ActionEnd,
    ReasonDelta,
    ReasonEnd,
    ReasonStart,
    RunEnd,
    RunStart,
    ToolCallEnd,
)
from rondo.server.auth import caller
from rondo.server.errors import BadRequestError, SafeRoute, describe
from rondo.server.front_end import (
    DEFAULT_USER,
    Piece,
    TextParts,
    decode_base64,
    open_session,
    start_front_run,
    stream_run,
)
from rondo.server.state import server_state
from rondo.server.streams import dumps, sse
from rondo.sessions.base import TEMP_PREFIX, Session
from rondo.tools.client import ClientTool
from rondo.types import Blob, Content, FileData, Part

__all__ = ["AiSdkProjection", "ChatRequest", "router"]

router = APIRouter(tags=["front ends"], route_class=SafeRoute)

HEADERS = {"x-vercel-ai-ui-message-stream": "v1"}
DONE = sse(b"[DONE]")
CONFIRMATION = "adk_request_confirmation"


class ClientToolSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str
    description: str = ""
    input_schema: dict[str, object] | None = Field(default=None, alias="inputSchema")


class ChatRequest(BaseModel):
    """`useChat`'s request body (fields rondo does not use are accepted and ignored)."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(description="The chat's id: the rondo session id.")
    messages: list[dict[str, object]] = Field(description="The conversation as UIMessages.")
    trigger: str | None = None
    message_id: str | None = Field(default=None, alias="messageId")
    tools: list[ClientToolSpec] = Field(
        default_factory=list[ClientToolSpec], description="Client-side tools the model may call."
    )
    multitask: str | None = Field(
        default=None,
        description="What this message does on a busy session: reject (409), enqueue, "
        "interrupt or rollback (useChat's `body` option sends it).",
    )


def _chunk(value: dict[str, object]) -> bytes:
    return sse(dumps(value))


class AiSdkProjection:
    """Lifecycle events → UI message stream chunks for one run."""

    def __init__(self, state: dict[str, object], message_id: str | None = None) -> None:
        self.state = state
        self.message_id = message_id
        self._text = TextParts()
        self._step = False

    def frames(self, event: Any) -> Iterable[bytes]:
        chunks = [_chunk(c) for c in self.chunks(event)]
        if isinstance(event, RunEnd):
            chunks.append(DONE)
        return chunks

    def chunks(self, event: Any) -> list[dict[str, object]]:
        if isinstance(event, ReasonDelta):
            return _chunks(self._text.delta(event))
        if isinstance(event, ReasonStart):
            return [*self._end_step(), self._start_step()]
        if isinstance(event, ReasonEnd):
            return self._reason_end(event)
        if isinstance(event, ToolCallEnd):
            return self._tool_end(event)
        if isinstance(event, ActionEnd):
            return self._state(event.event)
        if isinstance(event, RunStart):
            start: dict[str, object] = {"type": "start"}
            if self.message_id:
                start["messageId"] = self.message_id
            return [start, self._state_part()]
        if isinstance(event, RunEnd):
            return self._finish(event)
        return []

    def _start_step(self) -> dict[str, object]:
        self._step = True
        return {"type": "start-step"}

    def _end_step(self) -> list[dict[str, object]]:
        chunks = _chunks(self._text.close())
        if self._step:
            self._step = False
            chunks.append({"type": "finish-step"})
        return chunks

    def _reason_end(self, event: ReasonEnd) -> list[dict[str, object]]:
        chunks = _chunks(self._text.reason_end(event))
        record = event.event
        for call in event.tool_calls:
            if call.name == CONFIRMATION or call.id is None:
                continue
            args = dict(call.args)
            tool = {"toolCallId": call.id, "toolName": call.name, "dynamic": True}
            chunks.append({"type": "tool-input-start", **tool})
            chunks.append(
                {"type": "tool-input-delta", "toolCallId": call.id, "inputTextDelta": _json(args)}
            )
            chunks.append({"type": "tool-input-available", **tool, "input": args})
        chunks.extend(self._state(record))
        return chunks

    def _tool_end(self, event: ToolCallEnd) -> list[dict[str, object]]:
        if event.error is None and event.result is None:
            return []  # answered later (a long-running or client-side call)
        if event.error is not None:
            return [
                {
                    "type": "tool-output-error",
                    "toolCallId": event.call_id,
                    "errorText": event.error,
                    "dynamic": True,
                }
            ]
        return [
            {
                "type": "tool-output-available",
                "toolCallId": event.call_id,
                "output": event.result,
                "dynamic": True,
            }
        ]

    def _state_part(self) -> dict[str, object]:
        return {"type": "data-state", "id": "state", "data": dict(self.state)}

    def _state(self, record: Event | None) -> list[dict[str, object]]:
        if record is None or record.partial or not record.actions.state_delta:
            return []
        changed = {
            k: v for k, v in record.actions.state_delta.items() if not k.startswith(TEMP_PREFIX)
        }
        if not changed:
            return []
        self.state.update(changed)
        return [self._state_part()]

    def _finish(self, end: RunEnd) -> list[dict[str, object]]:
        chunks = _chunks(self._text.close())
        for call in end.pending:
            if call.kind == "confirmation" and call.original_call_id:
                request: dict[str, object] = {
                    "type": "tool-approval-request",
                    "approvalId": call.call_id,
                    "toolCallId": call.original_call_id,
                }
                if call.hint:
                    request["reason"] = call.hint
                chunks.append(request)
        chunks.extend(self._end_step())
        reason = "tool-calls" if end.pending else ("other" if end.is_abnormal else "stop")
        chunks.append({"type": "finish", "finishReason": reason})
        return chunks

    def error(self, exc: BaseException) -> dict[str, Any]:
        return {"type": "error", "errorText": describe(exc)}


def _chunks(pieces: list[Piece]) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = []
    for step, kind, part_id, text in pieces:
        chunk = {"type": f"{'reasoning' if kind == 'thinking' else 'text'}-{step}", "id": part_id}
        if step == "delta":
            chunk["delta"] = text
        chunks.append(chunk)
    return chunks


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


# -- the request ----------------------------------------------------------------------------


def _file_part(part: dict[str, object]) -> Part:
    url = part.get("url")
    media_type = part.get("mediaType")
    if not isinstance(url, str) or not isinstance(media_type, str):
        raise BadRequestError("a file part needs its `url` and `mediaType`")
    filename = part.get("filename")
    name = filename if isinstance(filename, str) else None
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        raw = decode_base64(data) if header.endswith(";base64") else unquote_to_bytes(data)
        return Part(inline_data=Blob(mime_type=media_type, data=raw, display_name=name))
    return Part(file_data=FileData(file_uri=url, mime_type=media_type, display_name=name))


def _user_parts(message: dict[str, Any]) -> list[Part]:
    parts: list[Part] = []
    for raw in cast(list[Any], message.get("parts") or []):
        if not isinstance(raw, dict):
            continue
        part = cast(dict[str, Any], raw)
        if part.get("type") == "text" and isinstance(part.get("text"), str) and part["text"]:
            parts.append(Part(text=part["text"]))
        elif part.get("type") == "file":
            parts.append(_file_part(part))
    return parts


def _answer(part: dict[str, object], pending: dict[str, PendingCall]) -> Part | None:
    """An approval response or a client tool's output in the newest assistant message."""
    approval = part.get("approval")
    if part.get("state") == "approval-responded" and isinstance(approval, dict):
        answer = cast(dict[str, object], approval)
        call = pending.pop(str(answer.get("id")), None)
        if call is None or call.kind != "confirmation":
            return None
        if answer.get("approved") is True:
            return call.approve()
        reason = answer.get("reason")
        return call.reject(reason if isinstance(reason, str) else None)
    call_id = part.get("toolCallId")
    by_call = {p.call_id: p for p in pending.values() if p.kind == "long_running"}
    call = by_call.get(str(call_id))
    if call is None:
        return None
    state = part.get("state")
    if state == "output-available":
        pending.pop(call.call_id)
        output = part.get("output")
        result = cast(dict[str, object], output) if isinstance(output, dict) else {"result": output}
        return call.respond(result)
    if state == "output-error":
        pending.pop(call.call_id)
        return call.respond({"error": str(part.get("errorText") or "the client's tool failed")})
    return None


def run_message(body: ChatRequest, session: Session) -> Content | None:
    """The run's message: the newest UIMessage, as rondo parts."""
    if not body.messages:
        return None
    newest = body.messages[-1]
    if newest.get("role") == "user":
        parts = _user_parts(newest)
    elif newest.get("role") == "assistant":
        pending = {p.call_id: p for p in session.pending}
        answers = (
            _answer(cast(dict[str, object], p), pending)
            for p in cast(list[object], newest.get("parts") or [])
            if isinstance(p, dict)
        )
        parts = [a for a in answers if a is not None]
    else:
        parts = []
    return Content(role="user", parts=parts) if parts else None


def _idle(state: dict[str, object]) -> Iterable[bytes]:
    yield _chunk({"type": "start"})
    yield _chunk({"type": "data-state", "id": "state", "data": state})
    yield _chunk({"type": "finish", "finishReason": "stop"})
    yield DONE


@router.post("/ai-sdk/{app_name}", response_class=Response)
async def ai_sdk_chat(app_name: str, body: ChatRequest, request: Request) -> Response:
    """Run the app for `useChat`: its request in, the UI message stream (SSE) out."""
    state = server_state(request)
    who = caller(request)
    user_id = who or DEFAULT_USER
    session = await open_session(state, app_name, user_id, body.id)
    message = run_message(body, session)
    visible = {k: v for k, v in session.state.items() if not k.startswith(TEMP_PREFIX)}
    if message is None:
        return Response(b"".join(_idle(visible)), media_type="text/event-stream", headers=HEADERS)
    continued = body.messages[-1].get("role") == "assistant"
    last_id = body.messages[-1].get("id")
    projection = AiSdkProjection(
        visible, message_id=str(last_id) if continued and last_id else None
    )
    tools = [
        ClientTool(name=t.name, description=t.description, parameters=t.input_schema)
        for t in body.tools
    ]
    run = await start_front_run(
        state,
        who,
        app_name=app_name,
        user_id=user_id,
        session_id=body.id,
        message=message,
        extra_tools=tools,
        multitask=body.multitask,
    )
    return await stream_run(state, run, projection.frames, projection.error, headers=HEADERS)
