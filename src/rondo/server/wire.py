"""google-adk's JSON for rondo's records: camelCase keys, no nulls (SPEC W1).

Two directions. Requests arrive as ADK's `Content` / `Part` JSON and are validated by the
`Wire*` models here (camelCase aliases, snake_case accepted too, unknown keys refused as ADK
does), then turned into rondo's own types. Responses are built by the `*_json` projections:
plain dicts, written by hand because they sit on every event of every run and a projection
that reads attributes costs a fraction of a validate-then-dump round trip. Only values that
belong to the user (state, tool arguments and results, metadata) are passed through as they
are; every key rondo owns is renamed.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel

from rondo.events import Event, EventActions, ToolConfirmation
from rondo.models.live import LIVE_METADATA
from rondo.server.errors import InvalidValueError
from rondo.sessions.base import Session
from rondo.types import (
    Blob,
    CodeExecutionResult,
    Content,
    ExecutableCode,
    FileData,
    FunctionCall,
    FunctionResponse,
    Part,
    PartialArg,
    Usage,
)

__all__ = [
    "ArtifactVersion",
    "CreateSessionRequest",
    "RunAgentRequest",
    "RunOptions",
    "SaveArtifactRequest",
    "UpdateSessionRequest",
    "WireContent",
    "WireEvent",
    "WirePart",
    "WireSession",
    "adk_finish_reason",
    "content_json",
    "event_json",
    "part_json",
    "session_json",
    "version_tag",
]


def _b64decode(value: Any) -> Any:
    """Bytes arrive base64-encoded (either alphabet, padding optional), as genai writes them."""
    if not isinstance(value, str):
        return value
    text = value.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidValueError(f"not valid base64: {exc}") from None


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii")


B64Bytes = Annotated[bytes, BeforeValidator(_b64decode)]


class _Wire(BaseModel):
    """ADK's request models: camelCase on the wire, snake_case accepted, nothing unknown."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


# -- ADK's Content, as it arrives ---------------------------------------------------------


class WireFunctionCall(_Wire):
    id: str | None = None
    args: dict[str, object] | None = None
    name: str | None = None
    partial_args: list[dict[str, object]] | None = None
    will_continue: bool | None = None


class WireFunctionResponse(_Wire):
    id: str | None = None
    name: str | None = None
    response: dict[str, object] | None = None
    will_continue: bool | None = None


class WireBlob(_Wire):
    mime_type: str | None = None
    data: B64Bytes | None = None
    display_name: str | None = None


class WireFileData(_Wire):
    file_uri: str | None = None
    mime_type: str | None = None
    display_name: str | None = None


class WireExecutableCode(_Wire):
    code: str | None = None
    language: str | None = None


class WireCodeExecutionResult(_Wire):
    outcome: str | None = None
    output: str | None = None


class WirePart(_Wire):
    """One part of an ADK `Content` (the kinds rondo records; others are refused)."""

    text: str | None = None
    thought: bool | None = None
    thought_signature: B64Bytes | None = None
    function_call: WireFunctionCall | None = None
    function_response: WireFunctionResponse | None = None
    inline_data: WireBlob | None = None
    file_data: WireFileData | None = None
    executable_code: WireExecutableCode | None = None
    code_execution_result: WireCodeExecutionResult | None = None

    def to_part(self) -> Part:
        return Part(
            text=self.text,
            thought=bool(self.thought),
            thought_signature=self.thought_signature,
            function_call=_call(self.function_call) if self.function_call else None,
            function_response=_response(self.function_response) if self.function_response else None,
            inline_data=Blob(
                mime_type=self.inline_data.mime_type or "application/octet-stream",
                data=self.inline_data.data or b"",
                display_name=self.inline_data.display_name,
            )
            if self.inline_data
            else None,
            file_data=FileData(
                file_uri=self.file_data.file_uri or "",
                mime_type=self.file_data.mime_type,
                display_name=self.file_data.display_name,
            )
            if self.file_data
            else None,
            executable_code=ExecutableCode(
                code=self.executable_code.code or "",
                language=(self.executable_code.language or "python").lower(),
            )
            if self.executable_code
            else None,
            code_execution_result=CodeExecutionResult(
                outcome=_OUTCOME_IN.get(self.code_execution_result.outcome or "", "ok"),
                output=self.code_execution_result.output or "",
            )
            if self.code_execution_result
            else None,
        )


class WireContent(_Wire):
    """ADK's `Content`: a role and its parts."""

    role: str | None = None
    parts: list[WirePart] | None = None

    def to_content(self) -> Content:
        return Content(role=self.role or "user", parts=[p.to_part() for p in self.parts or []])


def _call(call: WireFunctionCall) -> FunctionCall:
    partial = (
        [PartialArg.model_validate(_snake_keys(a)) for a in call.partial_args]
        if call.partial_args
        else None
    )
    return FunctionCall(
        name=call.name or "",
        args=call.args or {},
        id=call.id,
        partial_args=partial,
        will_continue=call.will_continue,
    )


def _response(response: WireFunctionResponse) -> FunctionResponse:
    return FunctionResponse(
        name=response.name or "", response=response.response or {}, id=response.id
    )


def _snake_keys(data: dict[str, object]) -> dict[str, object]:
    return {"json_path" if k == "jsonPath" else k: v for k, v in data.items()}


_OUTCOME_OUT = {
    "ok": "OUTCOME_OK",
    "failed": "OUTCOME_FAILED",
    "deadline_exceeded": "OUTCOME_DEADLINE_EXCEEDED",
}
_OUTCOME_IN = {v: k for k, v in _OUTCOME_OUT.items()} | {k: k for k in _OUTCOME_OUT}


# -- request bodies -----------------------------------------------------------------------


class _Body(BaseModel):
    # ADK's own request models ignore unknown top-level keys; the Content inside is strict.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class RunOptions(_Body):
    """The run options a run request may set."""

    save_input_blobs_as_artifacts: bool = Field(
        default=False,
        description="Save the message's files as the session's artifacts; the stored message "
        "refers to them, and the model still sees each file (seed 000's "
        "SaveInputBlobsAsArtifacts).",
    )


class RunAgentRequest(_Body):
    """The body of `/run`, `/run_sse` and `/run_lifecycle` (ADK's `RunAgentRequest`)."""

    app_name: str | None = None
    user_id: str
    session_id: str
    new_message: WireContent | None = Field(
        default=None,
        description="The user's message. Required, except to resume the session's interrupted "
        "invocation (a run cut short by a crash or a cancel, SPEC D1): then send no message "
        "(or one without parts) and the run continues where its log ends; without such an "
        "invocation the request is answered 422.",
    )
    streaming: bool = Field(
        default=False, description="Stream the model's output: partial events as they come."
    )
    state_delta: dict[str, object] | None = None
    # Accepted for ADK clients. rondo resumes a paused run from the answers themselves, so
    # these need no handling; custom metadata has no place in rondo's run config yet.
    function_call_event_id: str | None = None
    invocation_id: str | None = None
    custom_metadata: dict[str, object] | None = None
    run_config: RunOptions | None = Field(
        default=None,
        description="rondo's run options, named as google-adk's RunConfig fields (ADK's own "
        "route has none; ADK clients do not send it).",
    )


class CreateSessionRequest(_Body):
    session_id: str | None = Field(
        default=None, description="The id of the new session (a random one when omitted)."
    )
    state: dict[str, object] | None = Field(default=None, description="The initial state.")
    events: list[dict[str, object]] | None = Field(
        default=None, description="Not supported by rondo: restoring events is refused (400)."
    )


class UpdateSessionRequest(_Body):
    state_delta: dict[str, object]


class SaveArtifactRequest(_Body):
    filename: str = Field(description="Artifact name (may hold '/', never '..', '\\' or NUL).")
    artifact: WirePart
    custom_metadata: dict[str, object] | None = None


# -- response documentation (the projections below build the same shapes) -----------------


class _Doc(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class WireToolConfirmation(_Doc):
    hint: str = ""
    confirmed: bool = False
    payload: Any = None


class WireEventActions(_Doc):
    skip_summarization: bool | None = None
    state_delta: dict[str, object] = Field(default_factory=dict[str, object])
    artifact_delta: dict[str, int] = Field(default_factory=dict[str, int])
    transfer_to_agent: str | None = None
    escalate: bool | None = None
    requested_auth_configs: dict[str, object] = Field(default_factory=dict[str, object])
    requested_tool_confirmations: dict[str, WireToolConfirmation] = Field(
        default_factory=dict[str, WireToolConfirmation]
    )
    compaction: dict[str, object] | None = None


class WireNodeInfo(_Doc):
    path: str = ""


class WireEvent(_Doc):
    """An event as ADK writes it (keys that would be null are left out)."""

    content: WireContent | None = None
    partial: bool | None = None
    turn_complete: bool | None = None
    finish_reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    interrupted: bool | None = None
    custom_metadata: dict[str, object] | None = None
    usage_metadata: dict[str, int] | None = None
    input_transcription: dict[str, object] | None = None
    output_transcription: dict[str, object] | None = None
    live_session_resumption_update: dict[str, object] | None = None
    invocation_id: str = ""
    author: str = ""
    actions: WireEventActions = Field(default_factory=WireEventActions)
    node_info: WireNodeInfo = Field(default_factory=WireNodeInfo)
    long_running_tool_ids: list[str] | None = None
    branch: str | None = None
    isolation_scope: str | None = None
    run_id: str | None = Field(default=None, description="rondo's run id (not in ADK).")
    id: str = ""
    timestamp: float


class WireSession(_Doc):
    id: str
    app_name: str
    user_id: str
    state: dict[str, object] = Field(default_factory=dict[str, object])
    events: list[WireEvent] = Field(default_factory=list[WireEvent])
    last_update_time: float = 0.0


class ArtifactVersion(_Doc):
    version: int
    canonical_uri: str
    custom_metadata: dict[str, object] = Field(default_factory=dict[str, object])
    create_time: float
    mime_type: str | None = None


class AppInfo(_Doc):
    name: str
    root_agent_name: str
    description: str
    language: Literal["python"] = "python"


class ListAppsResponse(_Doc):
    apps: list[AppInfo]


# -- projections --------------------------------------------------------------------------


def _plain(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A record's read-only map as a plain dict (shallow): pydantic-core serializes a dict
    subclass ~1 µs slower than a dict, and an event holds three or more (issue 25.5)."""
    return dict(mapping) if mapping else {}


def part_json(part: Part) -> dict[str, object]:
    """A `Part` in ADK's JSON."""
    out: dict[str, object] = {}
    if part.text is not None:
        out["text"] = part.text
    if part.thought:
        out["thought"] = True
    if part.thought_signature is not None:
        out["thoughtSignature"] = _b64encode(part.thought_signature)
    call = part.function_call
    if call is not None:
        out["functionCall"] = _call_json(call)
    response = part.function_response
    if response is not None:
        wire: dict[str, object] = {}
        if response.id is not None:
            wire["id"] = response.id
        wire["name"] = response.name
        wire["response"] = _plain(response.response)
        out["functionResponse"] = wire
    if part.inline_data is not None:
        out["inlineData"] = _blob_json(part.inline_data)
    if part.file_data is not None:
        data = part.file_data
        out["fileData"] = _drop_none(
            {"fileUri": data.file_uri, "mimeType": data.mime_type, "displayName": data.display_name}
        )
    if part.executable_code is not None:
        code = part.executable_code
        out["executableCode"] = {"code": code.code, "language": code.language.upper()}
    if part.code_execution_result is not None:
        result = part.code_execution_result
        out["codeExecutionResult"] = {
            "outcome": _OUTCOME_OUT.get(result.outcome, result.outcome.upper()),
            "output": result.output,
        }
    return out


def _call_json(call: FunctionCall) -> dict[str, object]:
    out: dict[str, object] = {}
    if call.id is not None:
        out["id"] = call.id
    out["args"] = _plain(call.args)
    out["name"] = call.name
    if call.partial_args is not None:
        out["partialArgs"] = [
            {"jsonPath": a.json_path, "value": a.value} for a in call.partial_args
        ]
    if call.will_continue is not None:
        out["willContinue"] = call.will_continue
    return out


def _blob_json(blob: Blob) -> dict[str, object]:
    out: dict[str, object] = {"data": _b64encode(blob.data)}
    if blob.display_name is not None:
        out["displayName"] = blob.display_name
    out["mimeType"] = blob.mime_type
    return out


def _drop_none(data: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in data.items() if v is not None}


def content_json(content: Content) -> dict[str, object]:
    """A `Content` in ADK's JSON."""
    return {"parts": [part_json(p) for p in content.parts], "role": content.role}


def _confirmation_json(confirmation: ToolConfirmation) -> dict[str, object]:
    out: dict[str, object] = {"hint": confirmation.hint, "confirmed": confirmation.confirmed}
    if confirmation.payload is not None:
        out["payload"] = confirmation.payload
    return out


def _actions_json(actions: EventActions) -> dict[str, object]:
    out: dict[str, object] = {}
    if actions.skip_summarization is not None:
        out["skipSummarization"] = actions.skip_summarization
    out["stateDelta"] = _plain(actions.state_delta)
    out["artifactDelta"] = _plain(actions.artifact_delta)
    if actions.transfer_to_agent is not None:
        out["transferToAgent"] = actions.transfer_to_agent
    if actions.escalate is not None:
        out["escalate"] = actions.escalate
    out["requestedAuthConfigs"] = {}
    confirmations = actions.requested_tool_confirmations
    out["requestedToolConfirmations"] = (
        {k: _confirmation_json(v) for k, v in confirmations.items()} if confirmations else {}
    )
    compaction = actions.compaction
    if compaction is not None:
        out["compaction"] = {
            "startTimestamp": compaction.start_timestamp,
            "endTimestamp": compaction.end_timestamp,
            "compactedContent": content_json(compaction.compacted_content),
        }
    return out


def _usage_json(usage: Usage) -> dict[str, int]:
    out = {
        "candidatesTokenCount": usage.output_tokens,
        "promptTokenCount": usage.input_tokens,
        "totalTokenCount": usage.total_tokens or usage.input_tokens + usage.output_tokens,
    }
    if usage.cached_tokens:
        out["cachedContentTokenCount"] = usage.cached_tokens
    if usage.thoughts_tokens:
        out["thoughtsTokenCount"] = usage.thoughts_tokens
    return out


# rondo's provider-neutral finish reasons -> google-genai's `FinishReason` names, which ADK
# writes (a tool call ends a Gemini turn with STOP too). Gemini's own names pass through.
_ADK_FINISH = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "max_tokens": "MAX_TOKENS",
    "content_filter": "SAFETY",
    "refusal": "SAFETY",
}
_GENAI_FINISH = frozenset(
    {
        "BLOCKLIST",
        "IMAGE_OTHER",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "IMAGE_SAFETY",
        "LANGUAGE",
        "MALFORMED_FUNCTION_CALL",
        "MAX_TOKENS",
        "NO_IMAGE",
        "OTHER",
        "PROHIBITED_CONTENT",
        "RECITATION",
        "SAFETY",
        "SPII",
        "STOP",
        "TOO_MANY_TOOL_CALLS",
        "UNEXPECTED_TOOL_CALL",
    }
)


def adk_finish_reason(reason: str) -> str:
    """`reason` in ADK's spelling: `STOP`, `MAX_TOKENS`, `SAFETY`, ... (`OTHER` if unknown)."""
    known = _ADK_FINISH.get(reason)
    if known is not None:
        return known
    upper = reason.upper()
    return upper if upper in _GENAI_FINISH else "OTHER"


def event_json(event: Event) -> dict[str, object]:
    """An `Event` in ADK's JSON, keys in ADK's order, nothing null."""
    out: dict[str, object] = {}
    content = event.content
    has_call = False
    if content is not None:
        # content_json inlined, with the scan for calls in the same pass (an event is
        # projected for every SSE frame and every session read: issue 25.5).
        parts = content.parts
        for part in parts:
            if part.function_call is not None:
                has_call = True
                break
        out["content"] = {"parts": [part_json(p) for p in parts], "role": content.role}
    transcription = event.input_transcription is not None or event.output_transcription is not None
    if event.partial or transcription:
        # ADK writes `partial: false` on a finished transcription (it sets it explicitly).
        out["partial"] = event.partial
    if event.turn_complete is not None:
        out["turnComplete"] = event.turn_complete
    if event.finish_reason is not None:
        out["finishReason"] = adk_finish_reason(event.finish_reason)
    if event.error_code is not None:
        out["errorCode"] = event.error_code
    if event.error_message is not None:
        out["errorMessage"] = event.error_message
    if event.interrupted:
        out["interrupted"] = True
    if event.custom_metadata is not None:
        out["customMetadata"] = _plain(event.custom_metadata)
    if event.usage is not None:
        out["usageMetadata"] = _usage_json(event.usage)
    finished = not event.partial
    if event.input_transcription is not None:
        out["inputTranscription"] = {"text": event.input_transcription, "finished": finished}
    if event.output_transcription is not None:
        out["outputTranscription"] = {"text": event.output_transcription, "finished": finished}
    handle = _resumption_handle(event) if event.custom_metadata else None
    if handle is not None:
        out["liveSessionResumptionUpdate"] = {"newHandle": handle, "resumable": True}
    out["invocationId"] = event.invocation_id
    out["author"] = event.author
    out["actions"] = _actions_json(event.actions)
    out["nodeInfo"] = {"path": event.branch}
    ids = event.long_running_tool_ids
    if ids or has_call:
        # ADK writes the (possibly empty) list on every event that carries function calls.
        out["longRunningToolIds"] = sorted(ids)
    if event.branch:
        out["branch"] = event.branch
    if event.isolation_scope:
        out["isolationScope"] = event.isolation_scope
    if event.run_id:
        out["runId"] = event.run_id
    out["id"] = event.id
    out["timestamp"] = event.timestamp
    return out


def _resumption_handle(event: Event) -> str | None:
    """The session-resumption handle a live call's record holds (ADK echoes and stores it as
    `liveSessionResumptionUpdate`)."""
    live: Any = event.custom_metadata.get(LIVE_METADATA) if event.custom_metadata else None
    if not isinstance(live, dict):
        return None
    handle = cast(dict[str, Any], live).get("resumption_handle")
    return handle if isinstance(handle, str) else None


def version_tag(session: Session) -> str:
    """The session's version as an HTTP entity tag (`"7"`): every append moves it, so a
    client that read the session can say which version it saw (a rewind's
    `expectedVersion`)."""
    return f'"{session.version}"'


def session_json(session: Session, *, events: bool = True) -> dict[str, object]:
    """A session in ADK's JSON; `events=False` for listings (ADK lists them empty)."""
    return {
        "id": session.id,
        "appName": session.app_name,
        "userId": session.user_id,
        "state": session.state,
        "events": [event_json(e) for e in session.events] if events else [],
        "lastUpdateTime": session.last_update_time,
    }
