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
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from rondo.errors import OutputValidationError, ToolArgumentsError
from rondo.events import Event
from rondo.lifecycle import TaskEvent
from rondo.models.base import FunctionDeclaration
from rondo.tools._schema import format_validation_error
from rondo.tools.base import BaseTool
from rondo.types import Content

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent
    from rondo.agents.llm import Agent
    from rondo.context import ToolContext

__all__ = [
    "FINISH_TASK",
    "NO_REPLIES",
    "AgentTool",
    "FinishTaskTool",
    "TaskTool",
    "run_in_own_session",
]

FINISH_TASK = "finish_task"
NO_REPLIES = (
    "Important: You will not receive any user replies or clarifications. "
    "Complete the task using only the information provided above."
)

_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "request": {
            "type": "string",
            "description": "The task, with everything needed to do it.",
        }
    },
    "required": ["request"],
}


def _request_text(args: dict[str, Any]) -> str:
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


def _result_of(agent: BaseAgent, events: list[Event]) -> dict[str, Any]:
    """The answer a delegated agent gave: finish_task's arguments, or its (validated) text."""
    from rondo.agents.llm import Agent

    for event in reversed(events):
        for response in event.get_function_responses():
            if response.name == FINISH_TASK and "error" not in response.response:
                return dict(response.response)
    text = _final_text(events, agent.name)
    if isinstance(agent, Agent) and agent.output_adapter is not None and text:
        try:
            value = agent.parse_output(text)
        except OutputValidationError as exc:
            return {"error": str(exc)}
        dumped = agent.output_adapter.dump_python(value, mode="json")
        return dumped if isinstance(dumped, dict) else {"result": dumped}  # pyright: ignore[reportUnknownVariableType]
    return {"result": text}


async def run_in_own_session(
    agent: BaseAgent,
    request: str,
    tool_context: ToolContext,
    *,
    task_id: str,
    task_index: int = 1,
    description: str = "",
    is_multitask: bool = False,
    state: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[Event]]:
    """Run `agent` on `request` in a fresh in-memory session with its own run id.

    Its lifecycle events are wrapped in `TaskEvent`s carrying the caller's run id (V5).
    """
    from rondo.runner import Runner

    parent = tool_context.invocation_context
    runner = Runner(
        agent=agent,
        app_name=parent.app_name,
        artifact_service=parent.artifact_service,
        memory_service=parent.memory_service,
        plugins=parent.plugins.plugins,
    )
    session = await runner.session_service.create_session(
        app_name=parent.app_name, user_id=parent.user_id, state=state
    )
    events: list[Event] = []
    observed = tool_context.observed
    execution = runner.execute(
        parent.user_id,
        session.id,
        Content.user(request),
        parent.run_config,
        None,
        observe=observed,
        demand=parent.demand,
    )
    async with aclosing(execution) as items:
        async for item in items:
            if isinstance(item, Event):
                if not item.partial:
                    events.append(item)
                continue
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
    return _result_of(agent, events), events


class _DelegateTool(BaseTool):
    """A tool named after an agent, taking one `request` string."""

    def __init__(self, agent: BaseAgent, fallback_description: str) -> None:
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

    def __init__(self, agent: BaseAgent, *, skip_summarization: bool = False) -> None:
        super().__init__(agent, f"Ask the {agent.name} agent.")
        self.agent = agent
        self.skip_summarization = skip_summarization

    async def run(self, args: dict[str, Any], tool_context: ToolContext) -> Any:
        request = _request_text(args)
        state = {k: v for k, v in tool_context.state.items() if not k.startswith("temp:")}
        result, events = await run_in_own_session(
            self.agent,
            request,
            tool_context,
            task_id=tool_context.function_call_id or uuid.uuid4().hex,
            description=request[:200],
            state=state,
        )
        for event in events:
            for key, value in event.actions.state_delta.items():
                if not key.startswith("temp:"):
                    tool_context.state[key] = value
        if self.skip_summarization:
            tool_context.actions.skip_summarization = True
        return result


class TaskTool(_DelegateTool):
    """Delegates to a `task`/`single_turn` sub-agent inside this session (C2, S3)."""

    yields_events = True

    def __init__(self, agent: Agent) -> None:
        super().__init__(agent, f"Delegate a task to the {agent.name} agent.")
        self.agent = agent

    async def run(self, args: dict[str, Any], tool_context: ToolContext) -> Any:
        request = _request_text(args)
        parent = tool_context.invocation_context
        scope = tool_context.function_call_id or uuid.uuid4().hex
        child = parent.for_agent(parent.agent, isolation_scope=scope)
        child.sink = None  # the sub-agent's own tools get their own channel
        # C2: the task input, synthesized from the call's arguments (never stored).
        child.user_content = Content.user(f"{request}\n\n{NO_REPLIES}")
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
        return _result_of(self.agent, events)


class FinishTaskTool(BaseTool):
    """`finish_task`: a task agent's last call; its validated arguments are the result."""

    def __init__(self, agent: Agent) -> None:
        super().__init__(
            name=FINISH_TASK,
            description="Finish the task: call this once, last, with the task's result.",
        )
        self.agent = agent
        schema = agent.output_json_schema
        self._wrapped = schema is None or schema.get("type") != "object"
        if schema is None:
            parameters: dict[str, Any] = {
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

    async def run(self, args: dict[str, Any], tool_context: ToolContext) -> Any:
        adapter = self.agent.output_adapter
        if adapter is not None:
            value = args.get("result") if self._wrapped else args
            try:
                validated = adapter.validate_python(value)
            except ValidationError as exc:
                allowed = list(self._declaration.parameters.get("properties", {}))
                raise ToolArgumentsError(format_validation_error(exc, allowed)) from None
            dumped: Any = adapter.dump_python(validated, mode="json")
            result: dict[str, Any] = dumped if isinstance(dumped, dict) else {"result": dumped}  # pyright: ignore[reportUnknownVariableType]
        else:
            result = {"result": str(args.get("result", ""))}
        # The task is over: this response ends the agent's turn (F2).
        tool_context.actions.skip_summarization = True
        return result
