"""Agents as tools (SPEC T7, C2, S3, V5).

- `AgentTool`: another agent answers a request in a session of its own (nothing it does
  enters the caller's history); its lifecycle events reach the caller's stream wrapped in
  `TaskEvent`s.
- `TaskTool`: how a parent delegates to a sub-agent in `task` or `single_turn` mode. The
  sub-agent runs in the *same* session and invocation, in an isolation scope named by the
  call id (C2): its records go up through the dispatching step and are stored; its task
  input is synthesized from the call's arguments. A task agent finishes with `finish_task`
  (S3), whose arguments are the result.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from rondo.context import NestedPause, SubRunOutcome
from rondo.errors import ConfigurationError, ToolArgumentsError
from rondo.events import Event, PendingCall
from rondo.lifecycle import TaskEvent
from rondo.models.base import FunctionDeclaration
from rondo.sessions.base import apply_pending, nested_session_id, waiting_calls
from rondo.tools._schema import argument_names, format_validation_error
from rondo.tools.base import BaseTool
from rondo.types import Content, Part

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from rondo.context import AgentNode, ToolContext

__all__ = [
    "FINISH_TASK",
    "NO_REPLIES",
    "AgentTool",
    "FinishTaskTool",
    "TaskTool",
    "pause_on",
    "run_in_own_session",
]

FINISH_TASK = "finish_task"
NO_REPLIES = (
    "Important: You will not receive any user replies or clarifications. "
    "Complete the task using only the information provided above."
)

_REQUEST_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "request": {
            "type": "string",
            "description": "The task, with everything needed to do it.",
        }
    },
    "required": ["request"],
}


def _request_text(args: dict[str, object]) -> str:
    request = args.get("request")
    unknown = sorted(set(args) - {"request"})
    if unknown or not isinstance(request, str) or not request.strip():
        problem = f"unknown argument {unknown}" if unknown else "argument 'request' must be text"
        raise ToolArgumentsError(f"Invalid arguments: {problem}; allowed arguments: request")
    return request


def _final_text(events: list[Event], author: str) -> str:
    for event in reversed(events):
        if event.author == author and not event.partial and event.is_final_response():
            text = event.text
            if text:
                return text
    return ""


def _failure(events: list[Event], author: str) -> str | None:
    """The error the delegated agent's run ended on (an error record, e.g. a remote agent
    that could not be reached), if it ended on one."""
    for event in reversed(events):
        if event.author == author and not event.partial:
            if event.error_code or event.error_message:
                return event.error_message or event.error_code
            return None
    return None


def _result_of(agent: AgentNode, events: list[Event]) -> dict[str, object]:
    """The answer a delegated agent gave: finish_task's arguments, or its (validated) text;
    an `{"error": ...}` response when its run ended on an error record."""
    for event in reversed(events):
        for response in event.get_function_responses():
            if response.name == FINISH_TASK and "error" not in response.response:
                return dict(response.response)
    failure = _failure(events, agent.name)
    if failure is not None:
        return {"error": failure}
    return agent.answer_of(_final_text(events, agent.name))


async def run_in_own_session(
    agent: AgentNode,
    request: str,
    tool_context: ToolContext,
    *,
    session_id: str,
    task_id: str,
    task_index: int = 1,
    description: str = "",
    is_multitask: bool = False,
    state: dict[str, object] | None = None,
) -> tuple[dict[str, object] | None, SubRunOutcome]:
    """Run `agent` on `request` in the nested session `session_id` of the runner's store
    (created on first use; continued when this call is dispatched again), with its own run
    id. Returns its result, or None while it waits on calls of its own (H4).

    Its lifecycle events are wrapped in `TaskEvent`s carrying the caller's run id (V5).
    """
    parent = tool_context.invocation_context
    sub_run = parent.sub_run
    if sub_run is None:
        raise ConfigurationError(f"{agent.name!r} answers as a tool only inside a Runner's run")

    def wrap(item: Any) -> None:
        tool_context.emit(
            TaskEvent(
                run_id=item.run_id,
                invocation_id=item.invocation_id,
                agent_name=agent.name,
                node=parent.node,
                parent_run_id=parent.run_id,
                task_id=task_id,
                task_index=task_index,
                description=description,
                is_multitask=is_multitask,
                event=item,
            )
        )

    on_item: Callable[[Any], None] | None = wrap if tool_context.observed else None
    outcome = await sub_run(
        parent,
        agent,
        session_id=session_id,
        request=Content.user(request),
        answers=tool_context.nested_answers or [],
        state=state,
        on_item=on_item,
    )
    if outcome.pending:
        return None, outcome
    return _result_of(agent, outcome.events), outcome


def pause_on(tool_context: ToolContext, agent: AgentNode, outcome: SubRunOutcome) -> None:
    """H4: the call waits on what `agent`'s nested run waits on."""
    tool_context.pause_nested(
        NestedPause(agent=agent.name, pending=outcome.pending, calls=outcome.calls)
    )


class _DelegateTool(BaseTool):
    """A tool named after an agent, taking one `request` string."""

    def __init__(self, agent: AgentNode, fallback_description: str) -> None:
        super().__init__(name=agent.name, description=agent.description or fallback_description)
        self._declaration = FunctionDeclaration(
            name=self.name, description=self.description, parameters=_REQUEST_SCHEMA
        )

    def declaration(self) -> FunctionDeclaration:
        return self._declaration


class AgentTool(_DelegateTool):
    """Another agent as a tool: it answers `request` in a session of its own.

    The caller's state is copied into that session, and the state the agent writes comes
    back to the caller. With `skip_summarization`, its answer ends the caller's turn.
    """

    def __init__(self, agent: AgentNode, *, skip_summarization: bool = False) -> None:
        super().__init__(agent, f"Ask the {agent.name} agent.")
        self.agent = agent
        self.skip_summarization = skip_summarization

    async def run(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        request = _request_text(args)
        state = {k: v for k, v in tool_context.state.items() if not k.startswith("temp:")}
        call_id = tool_context.function_call_id or uuid.uuid4().hex
        session_id = nested_session_id(tool_context.session_id, call_id)
        result, outcome = await run_in_own_session(
            self.agent,
            request,
            tool_context,
            session_id=session_id,
            task_id=session_id,
            description=request[:200],
            state=state,
        )
        if result is None:
            pause_on(tool_context, self.agent, outcome)
            return None
        for event in outcome.events:
            for key, value in event.actions.state_delta.items():
                if not key.startswith("temp:"):
                    tool_context.state[key] = value
        if self.skip_summarization:
            tool_context.actions.skip_summarization = True
        return result


class TaskTool(_DelegateTool):
    """Delegates to a `task`/`single_turn` sub-agent inside this session (C2, S3)."""

    yields_events = True

    def __init__(self, agent: AgentNode) -> None:
        super().__init__(agent, f"Delegate a task to the {agent.name} agent.")
        self.agent = agent

    async def run(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        request = _request_text(args)
        parent = tool_context.invocation_context
        scope = tool_context.function_call_id or uuid.uuid4().hex
        child = parent.for_agent(parent.agent, isolation_scope=scope)
        child.sink = None  # the sub-agent's own tools get their own channel
        # C2: the task input, synthesized from the call's arguments (never stored).
        child.user_content = Content.user(f"{request}\n\n{NO_REPLIES}")
        answers = tool_context.nested_answers
        if answers:
            # H4: the call continues after the sub-agent paused: it gets the answers.
            child.answers = Content(role="user", parts=[Part(function_response=a) for a in answers])
        events: list[Event] = []
        async with aclosing(self.agent.run_async(child)) as items:
            async for item in items:
                if isinstance(item, Event):
                    await tool_context.send_event(item)
                    if not item.partial:
                        events.append(item)
                else:
                    tool_context.emit(
                        TaskEvent(
                            run_id=parent.run_id,
                            invocation_id=parent.invocation_id,
                            agent_name=self.agent.name,
                            node=parent.node,
                            parent_run_id=parent.run_id,
                            task_id=scope,
                            description=request[:200],
                            event=item,
                        )
                    )
        # H4: what the sub-agent's records in its scope leave waiting, and the user's
        # answers (stored at the top) have not answered, pauses this call.
        pending: list[PendingCall] = []
        if answers or any(e.long_running_tool_ids for e in events):
            scoped = [
                e for e in parent.session.events if e.isolation_scope == scope or e.author == "user"
            ]
            for event in scoped:
                pending = apply_pending(pending, event)
        if pending:
            tool_context.pause_nested(
                NestedPause(
                    agent=self.agent.name,
                    pending=pending,
                    calls=waiting_calls(list(parent.session.events), pending),
                )
            )
            return None
        return _result_of(self.agent, events)


class FinishTaskTool(BaseTool):
    """`finish_task`: a task agent's last call; its validated arguments are the result."""

    def __init__(
        self, schema: dict[str, object] | None = None, adapter: TypeAdapter[Any] | None = None
    ) -> None:
        """`schema`/`adapter`: the task agent's output schema, as JSON schema and as the
        adapter that validates its result (None: the result is text)."""
        super().__init__(
            name=FINISH_TASK,
            description="Finish the task: call this once, last, with the task's result.",
        )
        self._adapter = adapter
        self._wrapped = schema is None or schema.get("type") != "object"
        if schema is None:
            parameters: dict[str, object] = {
                "type": "object",
                "properties": {"result": {"type": "string", "description": "The result."}},
                "required": ["result"],
            }
        elif self._wrapped:
            parameters = {
                "type": "object",
                "properties": {"result": schema},
                "required": ["result"],
            }
        else:
            parameters = schema
        self._declaration = FunctionDeclaration(
            name=self.name, description=self.description, parameters=parameters
        )

    def declaration(self) -> FunctionDeclaration:
        return self._declaration

    async def run(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        adapter = self._adapter
        if adapter is not None:
            value = args.get("result") if self._wrapped else args
            try:
                validated = adapter.validate_python(value)
            except ValidationError as exc:
                allowed = argument_names(self._declaration.parameters)
                raise ToolArgumentsError(format_validation_error(exc, allowed)) from None
            dumped: Any = adapter.dump_python(validated, mode="json")
            result: dict[str, object] = dumped if isinstance(dumped, dict) else {"result": dumped}  # pyright: ignore[reportUnknownVariableType]
        else:
            result = {"result": str(args.get("result", ""))}
        # The task is over: this response ends the agent's turn (F2).
        tool_context.actions.skip_summarization = True
        return result
