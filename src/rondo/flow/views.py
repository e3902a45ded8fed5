"""What the parts of the loop see of the agent and of each other.

The loop runs one LLM agent, but it sits below the agents: it reads the agent through
`LlmAgentView` (`rondo.agents.llm.Agent` implements it) and never imports its class. The
request processors read the flow through `FlowView` (`rondo.flow.loop.Flow` implements it),
and every processor is a `RequestProcessor`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from rondo.context import AgentNode

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from rondo._callbacks import Callbacks
    from rondo.context import InvocationContext
    from rondo.events import Event
    from rondo.flow.context_strategies import ContextStrategy
    from rondo.guardrails import (
        InputGuardrail,
        OutputGuardrail,
        ToolInputGuardrail,
        ToolOutputGuardrail,
    )
    from rondo.lifecycle import Item
    from rondo.models.base import GenerateConfig, Model, ModelRequest
    from rondo.tools.base import BaseTool, BaseToolset

__all__ = ["AgentMode", "FlowView", "LlmAgentView", "RequestProcessor"]

# How a parent reaches the agent: by transfer ("chat"), or by a call that gives it a task
# to finish ("task") or one question to answer ("single_turn") (SPEC X1, C2).
AgentMode = Literal["chat", "task", "single_turn"]


class LlmAgentView(AgentNode, Protocol):
    """The LLM agent as its loop reads it: configuration, callbacks and guardrails."""

    @property
    def tools(self) -> Sequence[BaseTool | BaseToolset]: ...
    @property
    def canonical_model(self) -> Model: ...
    @property
    def instruction(self) -> str | Callable[..., object]: ...
    @property
    def mode(self) -> AgentMode: ...
    @property
    def include_contents(self) -> Literal["default", "none"]: ...
    @property
    def generate_config(self) -> GenerateConfig | None: ...
    @property
    def disallow_transfer_to_parent(self) -> bool: ...
    @property
    def disallow_transfer_to_peers(self) -> bool: ...
    @property
    def max_concurrent_tool_calls(self) -> int | None: ...
    @property
    def context_strategies(self) -> tuple[ContextStrategy, ...]: ...
    @property
    def output_key(self) -> str | None: ...
    @property
    def output_schema(self) -> object: ...
    @property
    def output_json_schema(self) -> dict[str, object] | None: ...
    @property
    def output_adapter(self) -> TypeAdapter[Any] | None: ...
    @property
    def before_model_callbacks(self) -> Callbacks: ...
    @property
    def after_model_callbacks(self) -> Callbacks: ...
    @property
    def on_model_error_callbacks(self) -> Callbacks: ...
    @property
    def before_tool_callbacks(self) -> Callbacks: ...
    @property
    def after_tool_callbacks(self) -> Callbacks: ...
    @property
    def on_tool_error_callbacks(self) -> Callbacks: ...
    @property
    def input_guardrails(self) -> tuple[InputGuardrail, ...]: ...
    @property
    def output_guardrails(self) -> tuple[OutputGuardrail, ...]: ...
    @property
    def tool_input_guardrails(self) -> tuple[ToolInputGuardrail, ...]: ...
    @property
    def tool_output_guardrails(self) -> tuple[ToolOutputGuardrail, ...]: ...

    def with_output_key(self, event: Event) -> Event:
        """E3: the event with the final answer saved to `state[output_key]`."""
        ...


class FlowView(Protocol):
    """One agent's flow as the request processors read it."""

    @property
    def agent(self) -> LlmAgentView: ...
    @property
    def model(self) -> Model: ...
    @property
    def tools(self) -> list[BaseTool] | None:
        """The expanded tools (None until the first step expands them)."""
        ...

    @property
    def relist_tools(self) -> bool:
        """Whether a toolset asks to be listed again before every model call."""
        ...

    @property
    def transfer_targets(self) -> list[AgentNode]: ...

    async def expand_tools(self, ctx: InvocationContext) -> list[BaseTool]: ...


class RequestProcessor(Protocol):
    """One step of building a model request (SPEC P1–P9): it may change `request`, and
    returns None when done, an awaitable when it has async work, or an async generator when
    it yields items of its own before the model is called (so the common case costs one
    plain call)."""

    def __call__(
        self, flow: FlowView, ctx: InvocationContext, request: ModelRequest, /
    ) -> AsyncGenerator[Item, None] | Awaitable[None] | None: ...
