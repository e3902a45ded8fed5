"""Records: the `Event` a session stores, in ADK's shape (SPEC E, F2)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict, cast

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from rondo._frozen import ReadOnlyDict, empty_map
from rondo._ids import new_event_id
from rondo.types import Content, FrozenMap, FunctionCall, FunctionResponse, Part, Usage

__all__ = [
    "NESTED_PAUSE",
    "NO_ACTIONS",
    "Event",
    "EventActions",
    "EventCompaction",
    "PendingCall",
    "ToolConfirmation",
]

# Frozen (SPEC G1): a changed record is a new record.
_config = ConfigDict(
    frozen=True,
    extra="forbid",
    ser_json_bytes="base64",
    val_json_bytes="base64",
    defer_build=True,
    # The JSON parser's string cache pays a lookup and an insert for every string value, and
    # a stored event's values (ids, texts) are unique: caching only keys took 13-45 % off
    # validating a 20,000-event history here (bench/SESSIONS.md). The store interns the few
    # repeated values (author, role).
    cache_strings="keys",
)


class ToolConfirmation(BaseModel):
    """A human's answer to a tool that asked for confirmation (SPEC H)."""

    model_config = _config

    hint: str = ""
    confirmed: bool = False
    payload: Any = None


class EventCompaction(BaseModel):
    """A summary that replaces the events between two timestamps (SPEC K)."""

    model_config = _config

    start_timestamp: float
    end_timestamp: float
    compacted_content: Content


class EventActions(BaseModel):
    """Side effects an event carries; the runner applies them when the event is stored."""

    model_config = _config

    state_delta: FrozenMap = Field(default_factory=empty_map)
    artifact_delta: Annotated[dict[str, int], AfterValidator(ReadOnlyDict)] = Field(
        default_factory=empty_map
    )
    transfer_to_agent: str | None = None
    escalate: bool | None = None
    skip_summarization: bool | None = None
    requested_tool_confirmations: Annotated[
        dict[str, ToolConfirmation], AfterValidator(ReadOnlyDict)
    ] = Field(default_factory=empty_map)
    compaction: EventCompaction | None = None
    # A rewind record (google-adk's field): the session reads as it was before the first
    # record of this invocation; the records between stay stored, hidden from the history.
    rewind_before_invocation_id: str | None = None

    def is_empty(self) -> bool:
        return (
            not self.state_delta
            and not self.artifact_delta
            and self.transfer_to_agent is None
            and not self.escalate
            and not self.skip_summarization
            and not self.requested_tool_confirmations
            and self.compaction is None
            and self.rewind_before_invocation_id is None
        )


# The actions of every event that has none: one object for all (decoding a long history builds
# no EventActions per event), whose maps refuse changes.
NO_ACTIONS = EventActions.model_construct(
    state_delta=ReadOnlyDict(),
    artifact_delta=ReadOnlyDict(),
    requested_tool_confirmations=ReadOnlyDict(),
)


# H4: the `custom_metadata` key of a nested-pause record — the calls of a step that wait on
# a nested run (an agent as a tool, a Harness task, a task sub-agent) and what that run waits
# on. Its content repeats the nested waiting calls so that the top session lists them, and
# an answer to one reaches the agent that made the waiting call; the model never sees it.
NESTED_PAUSE = "rondo:nested_pause"


class NestedPauseEntry(TypedDict, total=False):
    """One waiting call of a nested-pause record (H4), as `custom_metadata` keeps it."""

    call_id: str
    tool_name: str
    agent: str
    # What the nested run waits on: `PendingCall`s as JSON.
    pending: list[dict[str, object]]


# Issue 23: the `custom_metadata` key of the record a failed run ends on (`error_code`: the
# exception's type). It says the run failed; it does not end the invocation for SPEC D1 — a
# run started again with no new message resumes from where the failure cut it.
FAILURE = "rondo:failure"


def _no_actions() -> EventActions:
    return NO_ACTIONS


class PendingCall(BaseModel):
    """A call the run waits on: a confirmation request or a long-running tool (SPEC H3)."""

    model_config = _config

    call_id: str
    tool_name: str
    args: FrozenMap = Field(default_factory=empty_map)
    kind: Literal["confirmation", "long_running"] = "long_running"
    hint: str = ""
    run_id: str = ""
    invocation_id: str = ""
    agent_name: str = ""
    # For a confirmation request: the tool call it guards, and its id (what `HITLDecided`
    # reports as `call_id`), so a UI can match "asked" to "decided".
    original_call: FunctionCall | None = None
    original_call_id: str | None = None
    # H4: for a call asked inside a nested run (an agent as a tool, a Harness task, a task
    # sub-agent), the way to it from the top: `("main", "worker@<call id>")` — each agent
    # reached through a call is named with that call's id. Empty for the top run's own calls.
    path: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        """The path as text (`main → worker@call-1`), or "" for a call of the top run."""
        return " → ".join(self.path)

    def _answer(self, response: Mapping[str, object]) -> Part:
        name = "adk_request_confirmation" if self.kind == "confirmation" else self.tool_name
        return Part(
            function_response=FunctionResponse(name=name, response=dict(response), id=self.call_id)
        )

    def approve(self, payload: Any = None) -> Part:
        """The message part that approves this confirmation (send it as the next message)."""
        return self._answer({"confirmed": True, "decision": "approve", "payload": payload})

    def reject(self, comment: str | None = None) -> Part:
        """The message part that refuses this call; the tool is not run."""
        return self._answer({"confirmed": False, "decision": "reject", "comment": comment})

    def skip(self, observation: Any = None) -> Part:
        """The message part that skips this call: `observation` is recorded as its result."""
        return self._answer({"confirmed": True, "decision": "skip", "observation": observation})

    def respond(self, result: Mapping[str, object] | str) -> Part:
        """The message part that delivers a long-running call's result; text is the result
        `{"text": ...}` (the answer to a remote A2A agent's question is sent to it as text)."""
        return self._answer({"text": result} if isinstance(result, str) else result)


class Event(BaseModel):
    """One record of a session: a user message, a model response or tool results.

    `author` is `"user"` or the agent's name; `content.role` is the model-protocol role, so a
    tool result is authored by the agent yet has role `"user"`.
    """

    model_config = _config

    author: str
    id: str = Field(default_factory=new_event_id)
    invocation_id: str = ""
    run_id: str = ""
    branch: str = ""
    isolation_scope: str = ""
    timestamp: float = Field(default_factory=time.time)
    content: Content | None = None
    partial: bool = False
    turn_complete: bool | None = None
    finish_reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    interrupted: bool = False
    usage: Usage | None = None
    actions: EventActions = Field(default_factory=_no_actions)
    long_running_tool_ids: frozenset[str] = frozenset()
    input_transcription: str | None = None
    output_transcription: str | None = None
    custom_metadata: FrozenMap | None = None

    def get_function_calls(self) -> list[FunctionCall]:
        content = self.content
        if content is None:
            return []
        return [p.function_call for p in content.parts if p.function_call is not None]

    def get_function_responses(self) -> list[FunctionResponse]:
        content = self.content
        if content is None:
            return []
        return [p.function_response for p in content.parts if p.function_response is not None]

    @property
    def text(self) -> str:
        """The event's non-thought text ("" when none)."""
        return self.content.text if self.content is not None else ""

    @property
    def nested_pause(self) -> list[NestedPauseEntry] | None:
        """H4: on a nested-pause record, the waiting calls (`call_id`, `tool_name`, `agent`,
        `pending`: what the nested run waits on); None on any other record."""
        metadata = self.custom_metadata
        if not metadata:
            return None
        waiting = metadata.get(NESTED_PAUSE)
        return list(cast(list[NestedPauseEntry], waiting)) if waiting is not None else None

    def is_final_response(self) -> bool:
        """Whether this event ends the agent's turn (SPEC F2), in the seed's order of checks."""
        actions = self.actions
        if actions.compaction is not None:
            return False
        if actions.skip_summarization or self.long_running_tool_ids:
            return True
        if self.partial:
            return False
        content = self.content
        if content is None:
            return True
        parts = content.parts
        for part in parts:
            if part.function_call is not None or part.function_response is not None:
                return False
        return not (parts and parts[-1].code_execution_result is not None)


class EventFields(TypedDict, total=False):
    """An `Event`'s fields other than its author and the ids its invocation gives it: what
    `InvocationContext.new_event` takes (a test keeps the two equal)."""

    id: str
    branch: str
    isolation_scope: str
    timestamp: float
    content: Content | None
    partial: bool
    turn_complete: bool | None
    finish_reason: str | None
    error_code: str | None
    error_message: str | None
    interrupted: bool
    usage: Usage | None
    actions: EventActions
    long_running_tool_ids: frozenset[str]
    input_transcription: str | None
    output_transcription: str | None
    custom_metadata: FrozenMap | None
