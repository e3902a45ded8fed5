"""AG-UI at `POST /ag-ui/{app}` (SPEC W8): a projection of the lifecycle stream onto AG-UI's
events, built with the `ag-ui-protocol` package's own models (the `agui` extra).

The request is AG-UI's `RunAgentInput`. `threadId` is the rondo session (created on first
use), and the session holds the history: clients resend every message each turn, so only
what follows the last assistant message is new — user messages become the run's message,
tool messages answer the session's pending client-side calls — and `resume` entries answer
the interrupts of a paused run. `tools` are client-side tools the model may call: the run
ends on such a call (`RUN_FINISHED` naming it in `pendingToolCallIds`) and the client's next
request carries its result. A call that needs a human's confirmation ends the run with an
interrupt outcome whose interrupt id is the confirmation's call id. `state` edits (keys that
differ from the session's) are written with the message; `context` and `forwardedProps` are
given to the run as `temp:ag_ui_context` and `temp:ag_ui_forwarded_props`.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, Iterable, Sequence
from typing import Any, cast

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    Interrupt,
    MessagesSnapshotEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from ag_ui.core.types import DataSource, FileSource, FunctionCall, TextPart, ToolCall, UrlSource
from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from rondo.events import Event, PendingCall
from rondo.lifecycle import ActionEnd, ReasonDelta, ReasonEnd, RunEnd, RunStart, ToolCallEnd
from rondo.server.auth import caller, check_shared_state
from rondo.server.errors import BadRequestError, SafeRoute, describe
from rondo.server.front_end import (
    DEFAULT_USER,
    Piece,
    TextParts,
    decode_base64,
    json_patch,
    open_session,
    start_front_run,
    state_changes,
    stream_run,
)
from rondo.server.state import server_state
from rondo.server.streams import sse
from rondo.sessions.base import TEMP_PREFIX, Session
from rondo.tools.client import ClientTool
from rondo.types import Blob, Content, FileData, Part

__all__ = ["AgUiProjection", "router", "run_input"]

router = APIRouter(tags=["front ends"], route_class=SafeRoute)

CONFIRMATION = "adk_request_confirmation"
INTERRUPT_REASON = "tool_confirmation"


def _frame(event: BaseEvent) -> bytes:
    if event.timestamp is None:
        event.timestamp = int(time.time() * 1000)
    return sse(event.model_dump_json(by_alias=True).encode())


def _args_json(args: Any) -> str:
    return json.dumps(dict(args), ensure_ascii=False, separators=(",", ":"))


def _content_json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


class AgUiProjection:
    """Lifecycle events → AG-UI events for one run (and its `threadId` / `runId`)."""

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        state: dict[str, Any],
        history: Sequence[Any] = (),
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.state = state
        # Echoed as MESSAGES_SNAPSHOT when the run answers calls of an earlier run, so the
        # results it streams refer to calls the stream knows.
        self.history = list(history)
        self._text = TextParts()

    def frames(self, event: Any) -> Iterable[bytes]:
        return [_frame(e) for e in self.events(event)]

    def events(self, event: Any) -> list[BaseEvent]:
        if isinstance(event, ReasonDelta):
            return self._pieces(self._text.delta(event))
        if isinstance(event, ReasonEnd):
            return self._reason_end(event)
        if isinstance(event, ToolCallEnd):
            return self._tool_end(event)
        if isinstance(event, ActionEnd):
            return self._state(event.event)
        if isinstance(event, RunStart):
            started: list[BaseEvent] = [
                RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id),
                StateSnapshotEvent(snapshot=dict(self.state)),
            ]
            if self.history:
                started.append(MessagesSnapshotEvent(messages=self.history))
            return started
        if isinstance(event, RunEnd):
            return [*self._pieces(self._text.close()), self._finished(event)]
        return []

    def _pieces(self, pieces: list[Piece]) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        for step, kind, message_id, text in pieces:
            if kind == "text":
                if step == "start":
                    events.append(TextMessageStartEvent(message_id=message_id, role="assistant"))
                elif step == "delta":
                    events.append(TextMessageContentEvent(message_id=message_id, delta=text))
                else:
                    events.append(TextMessageEndEvent(message_id=message_id))
            elif step == "start":
                events.append(ReasoningStartEvent(message_id=message_id))
                events.append(ReasoningMessageStartEvent(message_id=message_id, role="reasoning"))
            elif step == "delta":
                events.append(ReasoningMessageContentEvent(message_id=message_id, delta=text))
            else:
                events.append(ReasoningMessageEndEvent(message_id=message_id))
                events.append(ReasoningEndEvent(message_id=message_id))
        return events

    def _reason_end(self, event: ReasonEnd) -> list[BaseEvent]:
        events = self._pieces(self._text.reason_end(event))
        record = event.event
        for call in event.tool_calls:
            if call.name == CONFIRMATION or call.id is None:
                continue
            events.append(ToolCallStartEvent(tool_call_id=call.id, tool_call_name=call.name))
            events.append(ToolCallArgsEvent(tool_call_id=call.id, delta=_args_json(call.args)))
            events.append(ToolCallEndEvent(tool_call_id=call.id))
        events.extend(self._state(record))
        return events

    def _tool_end(self, event: ToolCallEnd) -> list[BaseEvent]:
        if event.error is None and event.result is None:
            return []  # no response yet: a long-running or client-side call, answered later
        content = {"error": event.error} if event.error is not None else event.result
        return [
            ToolCallResultEvent(
                message_id=f"{event.call_id}-result",
                tool_call_id=event.call_id,
                content=_content_json(content),
                role="tool",
            )
        ]

    def _state(self, record: Event | None) -> list[BaseEvent]:
        if record is None or record.partial or not record.actions.state_delta:
            return []
        patch = json_patch(record.actions.state_delta)
        if not patch:
            return []
        for op in patch:
            self.state[op["path"][1:].replace("~1", "/").replace("~0", "~")] = op["value"]
        return [StateDeltaEvent.model_validate({"delta": patch})]

    def _finished(self, end: RunEnd) -> RunFinishedEvent:
        confirmations = [p for p in end.pending if p.kind == "confirmation"]
        waiting = [p.call_id for p in end.pending if p.kind != "confirmation"]
        result = end.output if end.output is not None else (end.text or None)
        if confirmations:
            interrupts = [
                Interrupt(
                    id=p.call_id,
                    reason=INTERRUPT_REASON,
                    message=p.hint or None,
                    tool_call_id=p.original_call_id,
                )
                for p in confirmations
            ]
            outcome: Any = RunFinishedInterruptOutcome(interrupts=interrupts)
        elif waiting:
            outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=waiting)
        else:
            outcome = None
        return RunFinishedEvent(
            thread_id=self.thread_id, run_id=self.run_id, result=result, outcome=outcome
        )

    def error(self, exc: BaseException) -> dict[str, object]:
        """The stream's last event when the run fails after it started."""
        return RunErrorEvent(message=describe(exc), code=type(exc).__name__).model_dump(
            mode="json", by_alias=True
        )


# -- the request ----------------------------------------------------------------------------


def _source_part(source: Any) -> Part:
    if isinstance(source, DataSource):
        return Part(inline_data=Blob(mime_type=source.mime_type, data=decode_base64(source.value)))
    if isinstance(source, UrlSource):
        return Part(file_data=FileData(file_uri=source.value, mime_type=source.mime_type))
    if isinstance(source, FileSource):
        return Part(file_data=FileData(file_uri=source.value, mime_type=source.mime_type))
    raise BadRequestError(f"unsupported AG-UI content source {source!r}")


def _user_parts(message: UserMessage) -> list[Part]:
    if isinstance(message.content, str):
        return [Part(text=message.content)] if message.content else []
    parts: list[Part] = []
    for piece in message.content:
        if isinstance(piece, TextPart):
            if piece.text:
                parts.append(Part(text=piece.text))
        else:
            parts.append(_source_part(piece.source))
    return parts


def _tool_result(message: ToolMessage) -> dict[str, object]:
    text = message.content if isinstance(message.content, str) else ""
    if not isinstance(message.content, str):
        text = "".join(p.text for p in message.content if isinstance(p, TextPart))
    try:
        value: Any = json.loads(text)
    except ValueError:
        value = text
    result: dict[str, object] = (
        cast(dict[str, object], value) if isinstance(value, dict) else {"result": value}
    )
    if message.error:
        result = {**result, "error": message.error}
    return result


def _decision(entry: ResumeEntry, call: PendingCall) -> Part:
    if entry.status == "cancelled":
        return call.reject("cancelled by the user")
    raw = entry.payload
    payload = cast(dict[str, object], raw) if isinstance(raw, dict) else {"approved": raw}
    comment = payload.get("comment") or payload.get("reason")
    if payload.get("decision") == "skip":
        return call.skip(payload.get("observation"))
    approved = payload.get("approved", payload.get("confirmed"))
    if not isinstance(approved, bool):
        raise BadRequestError(
            f"resume entry {entry.interrupt_id!r}: its payload must say "
            '{"approved": true} or {"approved": false}'
        )
    if approved:
        return call.approve(payload.get("payload"))
    return call.reject(comment if isinstance(comment, str) else None)


def _resumed(body: RunAgentInput, session: Session) -> list[Part]:
    by_id = {p.call_id: p for p in session.pending}
    parts: list[Part] = []
    for entry in body.resume or []:
        call = by_id.get(entry.interrupt_id)
        if call is None or call.kind != "confirmation":
            raise BadRequestError(
                f"resume entry {entry.interrupt_id!r} answers no interrupt of thread "
                f"{body.thread_id!r} (it waits on {sorted(by_id) or 'nothing'})"
            )
        parts.append(_decision(entry, call))
    return parts


def _new_turn(messages: Sequence[object], session: Session) -> list[Part]:
    """The parts of what follows the last assistant message: the only part the session does
    not already hold."""
    last = max((i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)), default=-1)
    waiting = {p.call_id: p for p in session.pending if p.kind == "long_running"}
    parts: list[Part] = []
    for message in messages[last + 1 :]:
        if isinstance(message, UserMessage):
            parts.extend(_user_parts(message))
        elif isinstance(message, ToolMessage) and message.tool_call_id in waiting:
            call = waiting.pop(message.tool_call_id)
            parts.append(call.respond(_tool_result(message)))
    return parts


def run_input(body: RunAgentInput, session: Session) -> tuple[Content | None, dict[str, object]]:
    """The run's message and state delta for `body` on `session`."""
    parts = [*_resumed(body, session), *_new_turn(body.messages, session)]
    message = Content(role="user", parts=parts) if parts else None
    delta = state_changes(body.state, session)
    if body.context:
        delta[TEMP_PREFIX + "ag_ui_context"] = [
            {"description": c.description, "value": c.value} for c in body.context
        ]
    if body.forwarded_props is not None:
        delta[TEMP_PREFIX + "ag_ui_forwarded_props"] = body.forwarded_props
    return message, delta


def _history(body: RunAgentInput, session: Session) -> list[object]:
    """For a run that answers interrupts: the client's messages, with the paused calls added
    in an assistant message when the client did not keep them."""
    if not body.resume:
        return []
    messages: list[object] = list(body.messages)
    known = {
        call.id for m in messages if isinstance(m, AssistantMessage) for call in m.tool_calls or []
    }
    answered = {entry.interrupt_id for entry in body.resume}
    missing = [
        ToolCall(
            id=p.original_call.id,
            function=FunctionCall(
                name=p.original_call.name, arguments=_args_json(p.original_call.args)
            ),
        )
        for p in session.pending
        if p.call_id in answered
        and p.original_call is not None
        and p.original_call.id is not None
        and p.original_call.id not in known
    ]
    if missing:
        messages.append(AssistantMessage(id=f"{body.run_id}-paused", tool_calls=missing))
    return messages


def _client_tools(body: RunAgentInput) -> list[ClientTool]:
    return [
        ClientTool(name=t.name, description=t.description, parameters=t.parameters)
        for t in body.tools or []
    ]


def _visible(state: dict[str, object], delta: dict[str, object]) -> dict[str, object]:
    merged = {**state, **delta}
    return {k: v for k, v in merged.items() if not k.startswith(TEMP_PREFIX)}


async def _idle(projection: AgUiProjection) -> AsyncGenerator[bytes, None]:
    for event in (
        RunStartedEvent(thread_id=projection.thread_id, run_id=projection.run_id),
        StateSnapshotEvent(snapshot=projection.state),
        RunFinishedEvent(thread_id=projection.thread_id, run_id=projection.run_id),
    ):
        yield _frame(event)


@router.post("/ag-ui/{app_name}", response_class=Response)
async def ag_ui_run(app_name: str, body: RunAgentInput, request: Request) -> Response:
    """Run the app for an AG-UI client: `RunAgentInput` in, AG-UI events (SSE) out."""
    state = server_state(request)
    who = caller(request)
    user_id = who or DEFAULT_USER
    session = await open_session(state, app_name, user_id, body.thread_id)
    message, delta = run_input(body, session)
    check_shared_state(who, delta)
    projection = AgUiProjection(
        body.thread_id,
        body.run_id,
        _visible(session.state, delta),
        history=_history(body, session),
    )
    if message is None:
        # Nothing new to run (a client syncing its state): the session's state, no run.
        return StreamingResponse(_idle(projection), media_type="text/event-stream")
    run = await start_front_run(
        state,
        who,
        app_name=app_name,
        user_id=user_id,
        session_id=body.thread_id,
        message=message,
        state_delta=delta,
        extra_tools=_client_tools(body),
        multitask=_forwarded(body, "multitask"),
    )
    return await stream_run(state, run, projection.frames, projection.error)


def _forwarded(body: RunAgentInput, key: str) -> object:
    """One of `forwardedProps`' keys (AG-UI's place for what a client adds to a run)."""
    props: object = body.forwarded_props
    return cast("dict[str, object]", props).get(key) if isinstance(props, dict) else None
