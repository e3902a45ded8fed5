"""`Harness`: a main agent that hands tasks to sub-agents (Solon's HarnessEngine, SPEC V5).

The main agent gets two tools: `task` runs one sub-agent, `multitask` runs several
concurrently. Every task runs in a session of its own with its own run id; when the run is
streamed, the task's lifecycle events arrive wrapped in `TaskEvent`s (parent run id, task id,
task index). A sub-agent that fails does not fail the run: the failure is the tool's result.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rondo.agents.base import BaseAgent
from rondo.agents.llm import Agent
from rondo.context import NestedPause, SubRunOutcome
from rondo.errors import ConfigurationError, ToolArgumentsError
from rondo.models.base import FunctionDeclaration
from rondo.sessions.base import nested_session_id
from rondo.tools.agent_tool import pause_on, run_in_own_session
from rondo.tools.base import BaseTool, BaseToolset

if TYPE_CHECKING:
    from rondo.context import ToolContext

__all__ = ["Harness"]


def _task_schema(names: list[str]) -> dict[str, object]:
    return {
        "type": "object",
        "properties": {
            "agent_name": {"type": "string", "enum": names, "description": "Who does the task."},
            "description": {"type": "string", "description": "A short summary of the task."},
            "prompt": {"type": "string", "description": "The full task, self-contained."},
        },
        "required": ["agent_name", "prompt"],
    }


class _Tasks:
    def __init__(self, agents: Sequence[BaseAgent]) -> None:
        self.by_name = {a.name: a for a in agents}

    def roster(self) -> str:
        return "; ".join(
            f"{a.name}: {a.description or 'no description'}" for a in self.by_name.values()
        )

    def parse(self, spec: Any) -> tuple[BaseAgent, str, str]:
        if not isinstance(spec, dict):
            raise ToolArgumentsError("Invalid arguments: each task must be an object")
        task: dict[str, object] = spec  # pyright: ignore[reportUnknownVariableType]
        name = task.get("agent_name")
        agent = self.by_name.get(str(name))
        if agent is None:
            raise ToolArgumentsError(
                f"Invalid arguments: argument 'agent_name': {name!r} is not an agent; "
                f"choose one of: {', '.join(self.by_name)}"
            )
        prompt = task.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ToolArgumentsError("Invalid arguments: argument 'prompt' must be non-empty text")
        return agent, prompt, str(task.get("description") or prompt[:200])

    async def run_one(
        self,
        tool_context: ToolContext,
        agent: BaseAgent,
        prompt: str,
        description: str,
        *,
        index: int,
        multitask: bool,
    ) -> tuple[dict[str, object], SubRunOutcome | None]:
        """One task in its nested session (keyed by the call and, in a multitask, the
        task's index): its result, and the outcome when it waits on calls (H4)."""
        call_id = tool_context.function_call_id or uuid.uuid4().hex
        task_id = nested_session_id(tool_context.session_id, call_id, index if multitask else None)
        try:
            result, outcome = await run_in_own_session(
                agent,
                prompt,
                tool_context,
                session_id=task_id,
                task_id=task_id,
                task_index=index,
                description=description,
                is_multitask=multitask,
            )
        except Exception as exc:  # V5: a failed task is the tool's result, not the run's end
            return {
                "agent": agent.name,
                "task_id": task_id,
                "error": f"{type(exc).__name__}: {exc}",
            }, None
        if result is None:
            return {"agent": agent.name, "task_id": task_id}, outcome
        return {"agent": agent.name, "task_id": task_id, **result}, None


class _TaskTool(BaseTool):
    def __init__(self, tasks: _Tasks) -> None:
        super().__init__(
            name="task",
            description=f"Give one task to a sub-agent and get its answer. Agents: {tasks.roster()}",
        )
        self._tasks = tasks
        self._declaration = FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters=_task_schema(list(tasks.by_name)),
        )

    def declaration(self) -> FunctionDeclaration:
        return self._declaration

    async def run(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        agent, prompt, description = self._tasks.parse(args)
        result, waiting = await self._tasks.run_one(
            tool_context, agent, prompt, description, index=1, multitask=False
        )
        if waiting is not None:
            pause_on(tool_context, agent, waiting)
            return None
        return result


class _MultitaskTool(BaseTool):
    def __init__(self, tasks: _Tasks) -> None:
        super().__init__(
            name="multitask",
            description=(
                "Give several independent tasks to sub-agents at once; they run concurrently. "
                f"Agents: {tasks.roster()}"
            ),
        )
        self._tasks = tasks
        self._declaration = FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {
                    "tasks": {"type": "array", "items": _task_schema(list(tasks.by_name))}
                },
                "required": ["tasks"],
            },
        )

    def declaration(self) -> FunctionDeclaration:
        return self._declaration

    async def run(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        specs = args.get("tasks")
        if not isinstance(specs, list) or not specs:
            raise ToolArgumentsError("Invalid arguments: argument 'tasks' must be a non-empty list")
        parsed = [self._tasks.parse(spec) for spec in specs]  # pyright: ignore[reportUnknownVariableType]
        done = await asyncio.gather(
            *(
                self._tasks.run_one(tool_context, agent, prompt, desc, index=i, multitask=True)
                for i, (agent, prompt, desc) in enumerate(parsed, start=1)
            )
        )
        waiting = [outcome for _, outcome in done if outcome is not None]
        if waiting:
            # H4: the tasks that finished keep their results in their sessions; the call
            # waits until every paused task is answered, one by one or together.
            tool_context.pause_nested(
                NestedPause(
                    agent=self.name,
                    pending=[p for o in waiting for p in o.pending],
                    calls=[c for o in waiting for c in o.calls],
                )
            )
            return None
        return {"results": [result for result, _ in done]}


class Harness(Agent):
    """A main agent with `task` and `multitask` tools over `agents` (which need a model of
    their own: they run in sessions of their own, outside this agent's tree)."""

    def __init__(
        self,
        name: str,
        model: Any = None,
        instruction: str | Callable[..., object] = "",
        *,
        agents: Sequence[BaseAgent],
        tools: Sequence[BaseTool | BaseToolset | Callable[..., object]] = (),
        **kwargs: Any,
    ) -> None:
        if not agents:
            raise ConfigurationError("a Harness needs at least one sub-agent")
        names = [a.name for a in agents]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"harness sub-agent names must be unique: {names}")
        tasks = _Tasks(agents)
        self.task_agents = list(agents)
        super().__init__(
            name,
            model,
            instruction=instruction,
            tools=[*tools, _TaskTool(tasks), _MultitaskTool(tasks)],
            **kwargs,
        )
