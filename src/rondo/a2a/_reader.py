"""A2A responses → rondo events, for `RemoteA2AAgent`.

One reader per remote call. Agent messages (task history, status messages, direct replies)
and artifacts become events authored by the remote agent; tool calls and results arrive as
data parts and become function-call / function-response parts. A text-only progress message
that the answer artifact then repeats (google-adk's and rondo's servers both send the answer
twice: as the last history message and as the artifact) is kept once. A task that fails, is
canceled or rejected ends the call with `RemoteAgentFailedError`; one that waits for input
leaves its calls pending (long-running) and its task id in the session state — a question in
text (no calls) becomes one long-running `INPUT_CALL`, so the run pauses on it like on any
other call (H4).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from a2a.types import (
    Artifact,
    Message,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
)

from rondo.a2a._parts import from_a2a_parts, long_running_ids
from rondo.errors import RemoteAgentFailedError
from rondo.events import Event, EventActions
from rondo.types import Content, FunctionCall, Part

if TYPE_CHECKING:
    from rondo.context import InvocationContext

__all__ = ["INPUT_CALL", "ResponseReader", "answer_text", "state_key"]

# The long-running call a remote's text-only question becomes (H4): its answer is sent to
# the remote task as text.
INPUT_CALL = "a2a_input_required"

_FAILED = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_CANCELED: "was canceled",
    TaskState.TASK_STATE_REJECTED: "was rejected",
}
_WAITING = (TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED)
_UNFINISHED = (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)


def state_key(agent_name: str) -> str:
    """The session-state key where a remote agent's A2A context and task ids are kept."""
    return f"a2a:{agent_name}"


def _text(parts: Sequence[Part]) -> str:
    return "".join(p.text for p in parts if p.text and not p.thought)


def _is_text(event: Event) -> bool:
    content = event.content
    return (
        not event.partial
        and content is not None
        and content.role == "model"
        and all(p.text is not None for p in content.parts)
    )


def answer_text(response: dict[str, object]) -> str:
    """The text an answer to `INPUT_CALL` sends to the remote task: its `text` (what
    `PendingCall.respond("...")` sets), else the answer as JSON."""
    text = response.get("text")
    if isinstance(text, str):
        return text
    return json.dumps(response, ensure_ascii=False, default=str)


class ResponseReader:
    """Turns the responses of one remote call into events, in order."""

    def __init__(
        self, ctx: InvocationContext, author: str, sent_id: str, previous: dict[str, object]
    ) -> None:
        self._ctx = ctx
        self._author = author
        self._sent_id = sent_id
        self._previous = previous
        self._partials = ctx.run_config.streaming_mode == "sse"
        self.context_id = str(previous.get("context_id") or "")
        self.task_id = ""
        self.state: TaskState = TaskState.TASK_STATE_UNSPECIFIED
        self.failure: RemoteAgentFailedError | None = None
        self._seen: set[str] = {sent_id}
        self._held: Event | None = None
        self._artifacts: dict[str, list[Part]] = {}
        self._delta: dict[str, object] | None = None
        self._waits_on_calls = False
        self._asked = ""  # the INPUT_CALL the task waits on, when it asked in text

    # -- reading ------------------------------------------------------------------------------

    def read(self, response: StreamResponse) -> list[Event]:
        which = response.WhichOneof("payload")
        out: list[Event] = []
        if which == "message":
            self._ids(response.message.context_id, "")
            out += self._message(response.message)
        elif which == "task":
            out += self._task(response.task)
        elif which == "status_update":
            update = response.status_update
            self._ids(update.context_id, update.task_id)
            out += self._status(update.status)
        elif which == "artifact_update":
            self._ids(response.artifact_update.context_id, response.artifact_update.task_id)
            out += self._artifact_update(response.artifact_update)
        return self._stamp(out)

    def finish(self) -> list[Event]:
        """The events still held when the remote's answer is over."""
        if self.failure is None and self.state in _UNFINISHED:
            self.failure = RemoteAgentFailedError(
                f"the answer of remote agent {self._author!r} ended before its task finished "
                f"(last state {TaskState.Name(self.state)})"
            )
        out: list[Event] = []
        for artifact_id in list(self._artifacts):
            out += self._close_artifact(artifact_id)
        out += self._release()
        self._want_state()
        out = self._stamp(out)
        if self._delta is not None:
            out = self._stamp([self._event(None)])
        return out

    def _ids(self, context_id: str, task_id: str) -> None:
        if context_id and context_id != self.context_id:
            self.context_id = context_id
        if task_id:
            self.task_id = task_id
        self._want_state()

    def _task(self, task: Task) -> list[Event]:
        self._ids(task.context_id, task.id)
        out: list[Event] = []
        # The whole task (a blocking answer, or the first streamed view): what is new in it,
        # which in a task continued after input is what follows the message just sent.
        history = list(task.history)
        sent = [i for i, m in enumerate(history) if m.message_id == self._sent_id]
        for message in history[sent[-1] + 1 :] if sent else history:
            out += self._message(message)
        for artifact in task.artifacts:
            out += self._artifact(artifact, append=False, last=True)
        return out + self._status(task.status)

    def _status(self, status: TaskStatus) -> list[Event]:
        self.state = status.state
        message = status.message if status.HasField("message") else None
        if status.state in _FAILED:
            text = _text(from_a2a_parts(message.parts)) if message is not None else ""
            verb = _FAILED[status.state]
            self.failure = RemoteAgentFailedError(
                f"the task of remote agent {self._author!r} {verb}" + (f": {text}" if text else "")
            )
            return self._release()
        if status.state not in _WAITING:
            return self._message(message) if message is not None else []
        self._waits_on_calls = message is not None and bool(long_running_ids(message.parts))
        out = self._message(message, waiting=True) if message is not None else []
        if self._waits_on_calls:
            self._want_state()
            return out or [*self._release(), self._event(None)]
        return self._ask(out or self._release())

    def _ask(self, out: list[Event]) -> list[Event]:
        """H4: the task waits on input but asked no call — a question in text. It becomes a
        long-running call (`INPUT_CALL`, the question as its argument) on the question's
        event, so the run pauses at any depth and the answer to it (text) goes to the task."""
        asked = out.pop() if out and _is_text(out[-1]) else None
        question = asked.text if asked is not None else ""
        call_id = f"a2a-input-{uuid.uuid4().hex[:16]}"
        self._asked = call_id
        self._want_state()
        call = FunctionCall(
            name=INPUT_CALL, id=call_id, args={"question": question, "task_id": self.task_id}
        )
        parts = list(asked.content.parts) if asked is not None and asked.content else []
        return [
            *out,
            self._event([*parts, Part(function_call=call)], long_running=frozenset({call_id})),
        ]

    def _message(self, message: Message, *, waiting: bool = False) -> list[Event]:
        if message.role == Role.ROLE_USER or (message.message_id in self._seen):
            return []
        if message.message_id:
            self._seen.add(message.message_id)
        parts = from_a2a_parts(message.parts)
        if not parts:
            return []
        long_running = long_running_ids(message.parts) if waiting else frozenset[str]()
        out = self._release()
        event = self._event(parts, long_running=long_running)
        if waiting or any(not p.text for p in parts):
            return [*out, event]
        self._held = event  # text only: the answer artifact may repeat it
        return out

    # -- artifacts ----------------------------------------------------------------------------

    def _artifact_update(self, update: TaskArtifactUpdateEvent) -> list[Event]:
        return self._artifact(update.artifact, append=update.append, last=update.last_chunk)

    def _artifact(self, artifact: Artifact, *, append: bool, last: bool) -> list[Event]:
        key = artifact.artifact_id or f"artifact-{len(self._artifacts)}"
        if f"artifact:{key}" in self._seen:
            return []
        chunk = from_a2a_parts(artifact.parts)
        parts = self._artifacts.setdefault(key, [])
        if not append:
            parts.clear()
        parts.extend(chunk)
        if last:
            return self._close_artifact(key)
        if self._partials and chunk:
            return [self._event(chunk, partial=True)]
        return []

    def _close_artifact(self, key: str) -> list[Event]:
        parts = self._artifacts.pop(key, [])
        self._seen.add(f"artifact:{key}")
        if not parts:
            return []
        held = self._held
        if (
            held is not None
            and held.content is not None
            and _text(held.content.parts) == _text(parts)
        ):
            self._held = None  # the answer was already sent as a message: keep one copy
            return [self._event(parts)]
        return [*self._release(), self._event(parts)]

    # -- events -------------------------------------------------------------------------------

    def _release(self) -> list[Event]:
        held, self._held = self._held, None
        return [held] if held is not None else []

    def _want_state(self) -> None:
        """The session state to record: the context id, and the task id while it waits."""
        waiting = self.state in _WAITING
        wanted: dict[str, object] = {
            "context_id": self.context_id or None,
            "task_id": self.task_id if waiting else None,
            "waits_on_calls": waiting and self._waits_on_calls,
            "asked": self._asked if waiting and self._asked else None,
        }
        current = {**self._previous, **(self._delta or {})}
        if any(current.get(k) != v for k, v in wanted.items()):
            self._delta = {**current, **wanted}

    def _stamp(self, events: list[Event]) -> list[Event]:
        """Put the pending state change on the first stored (non-partial) event."""
        delta = self._delta
        if delta is None:
            return events
        for i, event in enumerate(events):
            if not event.partial:
                actions = EventActions(state_delta={state_key(self._author): delta})
                events[i] = event.model_copy(update={"actions": actions})
                self._previous, self._delta = delta, None
                break
        return events

    def _event(
        self,
        parts: list[Part] | None,
        *,
        long_running: frozenset[str] = frozenset(),
        partial: bool = False,
    ) -> Event:
        ctx = self._ctx
        content = None
        if parts is not None:
            responses_only = all(p.function_response is not None for p in parts)
            content = Content(role="user" if responses_only else "model", parts=parts)
        return ctx.new_event(
            self._author,
            content=content,
            partial=partial,
            long_running_tool_ids=long_running,
            custom_metadata={"a2a_context_id": self.context_id, "a2a_task_id": self.task_id},
        )
