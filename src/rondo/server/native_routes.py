"""rondo's own routes: the lifecycle stream over SSE and decisions on pending calls (SPEC W2).

The lifecycle stream is rondo's typed view of a run (`run_start` … `run_end`), each event its
`model_dump(mode="json")` on one `data:` line; `rondo.lifecycle.parse_lifecycle_event` reads
it back. A decision on a pending call is sent as the message that answers it, so the run
resumes exactly as `Runner` resumes it for a library user.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from rondo.events import PendingCall
from rondo.server.adk_routes import require_message
from rondo.server.auth import caller
from rondo.server.errors import BadRequestError, NotFoundError, SafeRoute
from rondo.server.runs import DetachedRunRequest, respond, start_run
from rondo.server.state import ServerState, owner, server_state
from rondo.server.streams import dumps
from rondo.server.wire import RunOptions, WireFunctionCall, part_json
from rondo.types import Content, Part

__all__ = [
    "LifecycleRunRequest",
    "PendingDecision",
    "WireInvocationUsage",
    "WirePendingCall",
    "pending_json",
    "router",
]

router = APIRouter(tags=["rondo"], route_class=SafeRoute)

_SESSION = "/apps/{app_name}/users/{user_id}/sessions/{session_id}"

_STREAM_DOC: dict[int | str, dict[str, object]] = {
    200: {
        "content": {"text/event-stream": {}},
        "description": "The run's lifecycle events, one `data: <event JSON>` line each "
        '(`{"type": "run_start", ...}` … `{"type": "run_end", ...}`), then a blank line. A '
        'run that fails ends with `data: {"type": "error", "error": "..."}`.',
    }
}


class LifecycleRunRequest(DetachedRunRequest):
    """`/run_sse`'s body; here `streaming` defaults to true (token-by-token `reason_delta`)."""

    streaming: bool = Field(
        default=True, description="Stream the model's output as `reason_delta` events."
    )


class PendingDecision(BaseModel):
    """A decision on a pending call.

    For a confirmation: `approve` runs the tool (`result`, if given, is the confirmation's
    payload), `reject` refuses it (`comment` tells the model why), `skip` records
    `observation` as its result without running it. For a long-running call: `approve`
    delivers `result` (required) as the call's result, `reject` delivers a refusal, `skip`
    delivers `observation`.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    decision: Literal["approve", "reject", "skip"]
    comment: str | None = None
    observation: Any = None
    result: Any = None
    streaming: bool = Field(default=True, description="Stream the model's output, as above.")
    background: bool = Field(default=False, description="Answer 202 `{runId}` at once.")
    on_disconnect: Literal["continue", "cancel"] = Field(
        default="continue", alias="onDisconnect", description="As on `/run_lifecycle`."
    )


@router.post("/run_lifecycle", response_class=Response, responses=_STREAM_DOC)
async def run_lifecycle(body: LifecycleRunRequest, request: Request) -> Response:
    """Run one invocation and stream rondo's lifecycle events. Without `newMessage` it
    resumes the session's interrupted invocation (422 if there is none)."""
    state = server_state(request)
    await require_message(state, caller(request), body)
    started = await start_run(state, caller(request), body)
    return await respond(state, started, "lifecycle", background=body.background)


async def _pending(
    state: ServerState, app_name: str, user_id: str, session_id: str
) -> list[PendingCall]:
    state.apps.check(app_name)
    session = await state.sessions.get_session(
        app_name=app_name, user_id=user_id, session_id=session_id, num_recent_events=0
    )
    if session is None:
        raise NotFoundError("Session not found")
    return session.pending


class WirePendingCall(BaseModel):
    """A pending call as the pending route writes it: camelCase, nothing null (as ADK's
    routes). `callId` is what `POST .../pending/{callId}` decides; for a confirmation,
    `originalCall` is the guarded tool call."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    call_id: str
    tool_name: str
    args: dict[str, object] = Field(default_factory=dict[str, object])
    kind: Literal["confirmation", "long_running"]
    hint: str = ""
    run_id: str = ""
    invocation_id: str = ""
    agent_name: str = ""
    original_call: WireFunctionCall | None = None
    original_call_id: str | None = None
    # H4: the agents and calls leading to a call asked for inside a sub-agent, from the top
    # (`["main", "worker@c1"]`); absent for the top run's own calls.
    path: list[str] | None = None


def pending_json(call: PendingCall) -> dict[str, object]:
    """`call` in the pending route's JSON (`WirePendingCall`)."""
    out: dict[str, object] = {
        "callId": call.call_id,
        "toolName": call.tool_name,
        "args": call.args,
        "kind": call.kind,
        "hint": call.hint,
        "runId": call.run_id,
        "invocationId": call.invocation_id,
        "agentName": call.agent_name,
    }
    if call.original_call is not None:
        out["originalCall"] = part_json(Part(function_call=call.original_call))["functionCall"]
    if call.original_call_id is not None:
        out["originalCallId"] = call.original_call_id
    if call.path:
        out["path"] = list(call.path)
    return out


@router.get(_SESSION + "/pending", response_model=list[WirePendingCall])
async def list_pending(app_name: str, user_id: str, session_id: str, request: Request) -> Response:
    """The calls the session's last run waits on (confirmations, long-running tools)."""
    state = owner(request, user_id)
    pending = await _pending(state, app_name, user_id, session_id)
    return Response(dumps([pending_json(p) for p in pending]), media_type="application/json")


class WireInvocationUsage(BaseModel):
    """What one invocation's model calls used and cost, as its `RunEnd` reported it (SPEC O6):
    `costUsd` is None when any call was unpriced, never a partial sum."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    invocation_id: str
    # Model calls that reported usage (a call without usage has no tokens to price).
    reported_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    unpriced_calls: int = 0
    free_calls: int = 0


@router.get(_SESSION + "/usage", response_model=list[WireInvocationUsage])
async def session_usage(app_name: str, user_id: str, session_id: str, request: Request) -> Response:
    """Tokens and price per invocation, from the stored records: the ADK event shape has no
    place for a price, so a page rebuilt from records reads its runs' cost here."""
    state = owner(request, user_id)
    state.apps.check(app_name)
    session = await state.sessions.get_session(
        app_name=app_name, user_id=user_id, session_id=session_id
    )
    if session is None:
        raise NotFoundError("Session not found")
    sums: dict[str, WireInvocationUsage] = {}
    for event in session.events:
        usage = event.usage
        if usage is None or event.partial:
            continue
        row = sums.get(event.invocation_id)
        if row is None:
            row = sums[event.invocation_id] = WireInvocationUsage(
                invocation_id=event.invocation_id, cost_usd=0.0
            )
        row.reported_calls += 1
        row.input_tokens += usage.input_tokens
        row.output_tokens += usage.output_tokens
        row.cached_tokens += usage.cached_tokens
        row.cache_write_tokens += usage.cache_write_tokens
        if usage.cost_usd is None:
            row.unpriced_calls += 1
        else:
            row.cost_usd = (row.cost_usd or 0.0) + usage.cost_usd
            row.free_calls += usage.free
    for row in sums.values():
        if row.unpriced_calls:
            row.cost_usd = None
    body = [row.model_dump(mode="json", by_alias=True) for row in sums.values()]
    return Response(dumps(body), media_type="application/json")


def answer(call: PendingCall, decision: PendingDecision) -> Part:
    """The message part that carries `decision` on `call`."""
    if call.kind == "confirmation":
        if decision.decision == "approve":
            return call.approve(decision.result)
        if decision.decision == "reject":
            return call.reject(decision.comment)
        return call.skip(decision.observation)
    if decision.decision == "approve":
        if decision.result is None:
            raise BadRequestError(
                f"call {call.call_id!r} is a long-running {call.tool_name!r} call: approving it "
                "needs its `result`"
            )
        return call.respond(_as_dict(decision.result))
    if decision.decision == "reject":
        refusal = "rejected by the user" + (f": {decision.comment}" if decision.comment else "")
        return call.respond({"error": refusal})
    return call.respond(_as_dict(decision.observation))


def _as_dict(value: Any) -> dict[str, object]:
    if isinstance(value, dict):
        return cast(dict[str, object], value)
    return {"result": value}


@router.post(_SESSION + "/pending/{call_id}", response_class=Response, responses=_STREAM_DOC)
async def decide_pending(
    app_name: str,
    user_id: str,
    session_id: str,
    call_id: str,
    body: PendingDecision,
    request: Request,
) -> Response:
    """Decide on one pending call; the run resumes and streams like `/run_lifecycle`. A call
    that waits inside a live call this server holds gets the decision there: 202
    `{"callId", "live": true}`, and what follows streams on the call's WebSocket."""
    state = owner(request, user_id)
    pending = await _pending(state, app_name, user_id, session_id)
    call = next((p for p in pending if p.call_id == call_id), None)
    if call is None:
        raise NotFoundError(f"no pending call {call_id!r} in session {session_id!r}")
    resume = LifecycleRunRequest(
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        streaming=body.streaming,
        on_disconnect=body.on_disconnect,
        # Files the session's messages were saved as go back to the model in the resumed
        # run too (a run without the option would send it bare `artifact://` references).
        run_config=RunOptions(save_input_blobs_as_artifacts=True),
    )
    message = Content(role="user", parts=[answer(call, body)])
    live = state.live_calls.get((app_name, user_id, session_id))
    if live is not None and not live.closed:
        # L3: the call waits inside a live call this server holds: the decision goes into
        # that call (its connection stays open) and what follows streams on its WebSocket.
        live.send_content(message)
        return Response(
            dumps({"callId": call_id, "live": True}), status_code=202, media_type="application/json"
        )
    started = await start_run(state, caller(request), resume, message=message)
    return await respond(state, started, "lifecycle", background=body.background)
