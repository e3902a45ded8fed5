"""The typed lifecycle stream (Solon shape): a view of one run, produced by the same loop that
produces the records (SPEC V).

Every event is a small frozen pydantic model with a snake_case `type` tag, `run_id`,
`invocation_id`, `agent_name`, `timestamp` and, inside a team, `node`. `LifecycleEvent` is the
discriminated union; `model_dump(mode="json")` is the wire projection (with `schema_version`),
and `parse_lifecycle_event` reads it back, returning None for types it does not know (V3).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from rondo.events import Event, PendingCall
from rondo.types import Blob, FunctionCall

__all__ = [
    "SCHEMA_VERSION",
    "ActionEnd",
    "ActionStart",
    "BudgetExhausted",
    "ContextSize",
    "GuardrailTriggered",
    "HITLDecided",
    "HITLPending",
    "LifecycleEvent",
    "NodeEnd",
    "NodeStart",
    "PendingCall",
    "PlanUpdate",
    "ReasonDelta",
    "ReasonEnd",
    "ReasonStart",
    "RunEnd",
    "RunMetrics",
    "RunStart",
    "TaskEvent",
    "ToolCallEnd",
    "ToolCallProgress",
    "ToolCallStart",
    "Transcript",
    "WorkingMemory",
    "json_schema",
    "parse_lifecycle_event",
    "to_json",
    "to_sse",
]

SCHEMA_VERSION = 1


class Correlation(TypedDict):
    """The ids every lifecycle event of one agent's context carries (SPEC V2):
    `InvocationContext.correlation()`, spread into each event."""

    run_id: str
    invocation_id: str
    agent_name: str
    node: str | None


class _Lifecycle(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_bytes="base64", defer_build=True
    )

    schema_version: int = SCHEMA_VERSION
    run_id: str
    invocation_id: str = ""
    agent_name: str = ""
    timestamp: float = Field(default_factory=time.time)
    # The team node an event belongs to, when it runs inside a team (SPEC V2, beyond).
    node: str | None = None


class RunStart(_Lifecycle):
    """A run (or a resumed run, same `run_id`) starts."""

    type: Literal["run_start"] = "run_start"
    session_id: str = ""
    user_id: str = ""
    resumed: bool = False


class WorkingMemory(BaseModel):
    """What a model round works from (seed 002's `getWorkingMemory()`), summarized: the
    request's messages, the tool calls and results among them, and the latest message."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    message_count: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    last_message: str = ""


class ReasonStart(_Lifecycle):
    """One model round starts (after the request was built): the system prompt it sends
    and a summary of its working memory."""

    type: Literal["reason_start"] = "reason_start"
    reason_id: str
    system_prompt: str = ""
    working_memory: WorkingMemory | None = None


DeltaKind = Literal[
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "media",
]


class ReasonDelta(_Lifecycle):
    """A streamed piece of the model's output; only when the model streams (SPEC V1)."""

    type: Literal["reason_delta"] = "reason_delta"
    reason_id: str
    kind: DeltaKind
    text: str = ""
    is_thinking: bool = False
    media: Blob | None = None


class Transcript(_Lifecycle):
    """A piece of a live call's transcription (SPEC L1): what the user said (`role="user"`)
    or what the model said aloud (`role="model"`), as the provider transcribes it. Pieces
    come with `finished=False`; the whole of it follows with `finished=True` once the
    provider ends it (and is stored as a record)."""

    type: Literal["transcript"] = "transcript"
    reason_id: str
    role: Literal["user", "model"]
    text: str = ""
    finished: bool = False


class ReasonEnd(_Lifecycle):
    """One model round ended; `event` is its stored record (or the last partial when the
    stream ended without an aggregate, None when the model returned nothing)."""

    type: Literal["reason_end"] = "reason_end"
    reason_id: str
    event: Event | None
    tool_calls: list[FunctionCall] = Field(default_factory=list[FunctionCall])
    duration_ms: float = 0.0


class ActionStart(_Lifecycle):
    """The tool calls of a model round start."""

    type: Literal["action_start"] = "action_start"
    reason_id: str
    tool_calls: list[FunctionCall] = Field(default_factory=list[FunctionCall])


class ToolCallStart(_Lifecycle):
    type: Literal["tool_call_start"] = "tool_call_start"
    reason_id: str
    call_id: str
    tool_name: str
    args: dict[str, object] = Field(default_factory=dict[str, object])


class ToolCallProgress(_Lifecycle):
    """A running call's progress: a streaming tool's chunk (or what a tool reported), in
    order (`index`), between its `ToolCallStart` and `ToolCallEnd` (SPEC G5)."""

    type: Literal["tool_call_progress"] = "tool_call_progress"
    reason_id: str
    call_id: str
    tool_name: str
    index: int = 0
    chunk: Any = None


class ToolCallEnd(_Lifecycle):
    """A tool call finished. `error` is set when it raised, had bad arguments or was unknown."""

    type: Literal["tool_call_end"] = "tool_call_end"
    reason_id: str
    call_id: str
    tool_name: str
    args: dict[str, object] = Field(default_factory=dict[str, object])
    result: dict[str, object] | None = None
    error: str | None = None
    duration_ms: float = 0.0


class ActionEnd(_Lifecycle):
    """The tool calls of a round ended and their merged record (`event`) is stored."""

    type: Literal["action_end"] = "action_end"
    reason_id: str
    event: Event | None = None


class HITLPending(_Lifecycle):
    """The run pauses: these calls wait for a human or an external result."""

    type: Literal["hitl_pending"] = "hitl_pending"
    pending: list[PendingCall] = Field(default_factory=list[PendingCall])


class HITLDecided(_Lifecycle):
    """A human decision on a paused call took effect."""

    type: Literal["hitl_decided"] = "hitl_decided"
    call_id: str | None = None
    tool_name: str = ""
    args: dict[str, object] = Field(default_factory=dict[str, object])
    decision: Literal["approve", "reject", "skip"] = "approve"
    comment: str | None = None


class PlanUpdate(_Lifecycle):
    """A plan was created, advanced or revised (`rondo.tools.plan`): the step titles, the
    step the update concerns (`index`) and each step's status; between the planning call's
    `ToolCallStart` and `ToolCallEnd`."""

    type: Literal["plan_update"] = "plan_update"
    stage: Literal["create", "progress", "revise"] = "create"
    plans: list[str] = Field(default_factory=list[str])
    index: int = 0
    statuses: list[str] = Field(default_factory=list[str])
    reason_id: str | None = None


class ContextSize(_Lifecycle):
    """Estimated context size before a model round, and the effect of compaction if any."""

    type: Literal["context_size"] = "context_size"
    # The model's context window in tokens, when the model says (`context_window`).
    context_length: int | None = None
    message_count: int = 0
    token_count: int = 0
    compressed: bool = False
    tokens_before: int = 0
    tokens_after: int = 0
    messages_before: int = 0
    messages_after: int = 0


class NodeStart(_Lifecycle):
    type: Literal["node_start"] = "node_start"


class NodeEnd(_Lifecycle):
    type: Literal["node_end"] = "node_end"
    text: str = ""


class GuardrailTriggered(_Lifecycle):
    """A guardrail's tripwire fired (SPEC G6). `stage` is where: `input` (nothing of the turn
    ran; the run ends), `output` (the answer was replaced or withheld; the run ends),
    `tool_input` / `tool_output` (that call's response is the guardrail's error; the run goes
    on). `call_id` / `tool_name` name the call of a tool guardrail."""

    type: Literal["guardrail_triggered"] = "guardrail_triggered"
    guardrail: str
    stage: Literal["input", "output", "tool_input", "tool_output"] = "input"
    message: str = ""
    output_info: Any = None
    call_id: str | None = None
    tool_name: str | None = None


class BudgetExhausted(_Lifecycle):
    """A budget ended the run (SPEC G6): `budget` names it, `scope` is `run` or `session`,
    `limit` what it allows and `used` what was used (None: unknown). No call is left without a
    response: calls it stopped got one that names the budget. `RunEnd` follows."""

    type: Literal["budget_exhausted"] = "budget_exhausted"
    budget: str
    scope: Literal["run", "session"] = "run"
    limit: float | None = None
    used: float | None = None
    message: str = ""


class RunMetrics(BaseModel):
    """What one run used. `cost_usd` is its price in US dollars (SPEC O6), None when any of
    its model calls is unpriced (`unpriced_calls` says how many) — never a partial sum.
    `free_calls` counts the calls that ran on this machine (`local:` models, free by nature):
    a run of only those costs 0 as "free (local)", not as a price."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    model_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    unpriced_calls: int = 0
    free_calls: int = 0
    duration_ms: float = 0.0


class RunEnd(_Lifecycle):
    """The run ended normally or paused (then `pending` lists what it waits for).

    `is_abnormal` is True when the run ended on a partial response (SPEC F4), its final
    answer does not fit the output schema (`error` says why; `output` is then None), or a
    guardrail or a budget ended it (G6; `error_type` is then `GuardrailTripped` or
    `BudgetExceeded`, `error` its message). The full
    result of a stream is read here, never by concatenating deltas (SPEC V4).
    """

    type: Literal["run_end"] = "run_end"
    text: str = ""
    output: Any = None
    metrics: RunMetrics = Field(default_factory=RunMetrics)
    is_abnormal: bool = False
    pending: list[PendingCall] = Field(default_factory=list[PendingCall])
    error: str | None = None
    # The class name of the error (`OutputValidationError`, `GuardrailTripped`, ...).
    error_type: str | None = None


class TaskEvent(_Lifecycle):
    """A sub-agent task's event, wrapped with its parent's correlation (SPEC V5)."""

    type: Literal["task_event"] = "task_event"
    parent_run_id: str
    task_id: str
    task_index: int = 1
    description: str = ""
    is_multitask: bool = False
    event: LifecycleEvent


LifecycleEvent = Annotated[
    RunStart
    | ReasonStart
    | ReasonDelta
    | Transcript
    | ReasonEnd
    | ActionStart
    | ToolCallStart
    | ToolCallProgress
    | ToolCallEnd
    | ActionEnd
    | HITLPending
    | HITLDecided
    | PlanUpdate
    | ContextSize
    | GuardrailTriggered
    | BudgetExhausted
    | NodeStart
    | NodeEnd
    | TaskEvent
    | RunEnd,
    Field(discriminator="type"),
]

# What a run yields, at every layer above the data: records, and the lifecycle events built
# beside them when the lifecycle view is consumed (the loop and the agents share this type).
if TYPE_CHECKING:
    Item = Event | LifecycleEvent
else:
    Item = Any


_adapter: TypeAdapter[Any] | None = None


def parse_lifecycle_event(data: dict[str, object]) -> Any:
    """Read a JSON projection back; returns None for an event type this version does not know."""
    try:
        return _get_adapter().validate_python(data)
    except ValidationError as exc:
        if any(err["type"] == "union_tag_invalid" for err in exc.errors()):
            return None
        raise


def _get_adapter() -> TypeAdapter[Any]:
    global _adapter
    if _adapter is None:
        _adapter = TypeAdapter(LifecycleEvent)
    return _adapter


def to_json(event: Any) -> str:
    """The wire projection of a lifecycle event (SPEC V6): stable, versioned JSON."""
    return event.model_dump_json()


def sse_frame(data: bytes, *, event: str | None = None, id: str | None = None) -> bytes:
    """rondo's one Server-Sent Events framer, used by every SSE route of the server.

    An `event:` line (when named), an `id:` line (when given), one `data:` line — the JSON
    payloads it frames have no newline — and the blank line that ends the frame.
    """
    head = b"" if event is None else b"event: " + event.encode() + b"\n"
    if id is not None:
        head += b"id: " + id.encode() + b"\n"
    return head + b"data: " + data + b"\n\n"


def to_sse(event: Any, *, id: str | None = None) -> str:
    """One Server-Sent Events frame: `event: <type>`, the frame's `id:` if given, and the
    JSON projection as data — byte for byte what `/run_lifecycle` streams."""
    return sse_frame(to_json(event).encode(), event=event.type, id=id).decode()


def json_schema() -> dict[str, object]:
    """The JSON schema of the wire format (the discriminated union of every event type)."""
    return _get_adapter().json_schema()
