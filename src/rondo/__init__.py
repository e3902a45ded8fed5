"""rondo — a Python runtime for LLM agents.

The names below are the public API (DESIGN §4). They load lazily, so `import rondo` stays
cheap and provider SDKs or SQLAlchemy are imported only by the code that uses them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rondo._runs import install_runner_factory
from rondo._version import __version__

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent
    from rondo.agents.graph import Graph
    from rondo.agents.harness import Harness
    from rondo.agents.llm import Agent, LlmAgent
    from rondo.agents.team import Team
    from rondo.agents.workflow import LoopAgent, ParallelAgent, SequentialAgent
    from rondo.context import CallbackContext, InvocationContext, ReadonlyContext, ToolContext
    from rondo.errors import (
        AgentCardError,
        BudgetExceeded,
        CliError,
        ConfigurationError,
        ContentsError,
        DuplicateAgentNameError,
        DurableReplayError,
        FrozenRecordError,
        GuardrailTripped,
        InstructionError,
        InvalidArtifactNameError,
        InvalidCallbackError,
        InvalidIdError,
        InvalidMessageError,
        InvalidPageError,
        InvalidStateValueError,
        InvocationNotFoundError,
        LlmCallsLimitExceeded,
        MissingAPIKeyError,
        ModelAuthError,
        ModelBadRequestError,
        ModelConnectionError,
        ModelError,
        ModelNotFoundError,
        ModelRateLimitError,
        ModelResponseError,
        ModelServerError,
        ModelTimeoutError,
        OutputValidationError,
        ReadOnlyStateError,
        RemoteAgentError,
        RemoteAgentFailedError,
        RemoteAgentTimeoutError,
        RemoteAgentUnreachableError,
        RondoError,
        SchemaVersionError,
        ScriptExhaustedError,
        SessionError,
        SessionExistsError,
        SessionNotFoundError,
        StaleSessionError,
        StoreUnavailableError,
        ToolArgumentsError,
        ToolDefinitionError,
        ToolError,
        ToolNotFoundError,
        ToolResultError,
        ToolTimeoutError,
        TransferError,
    )
    from rondo.events import Event, EventActions, PendingCall, ToolConfirmation
    from rondo.flow.context_strategies import (
        ContextStrategy,
        SlidingWindow,
        Summarizing,
        ToolResultTrimming,
    )
    from rondo.guardrails import (
        GuardrailFunctionOutput,
        InputGuardrail,
        OutputGuardrail,
        ToolInputGuardrail,
        ToolOutputGuardrail,
        input_guardrail,
        output_guardrail,
        tool_input_guardrail,
        tool_output_guardrail,
    )
    from rondo.models.live import LiveRequest, LiveRequestQueue
    from rondo.plugins import Plugin
    from rondo.run_config import Budget, RunConfig
    from rondo.runner import Runner, RunResult
    from rondo.sessions.base import BaseSessionService, ListSessionsResponse, Session
    from rondo.sessions.memory import InMemorySessionService
    from rondo.sessions.sql import SqlSessionService
    from rondo.tools.agent_tool import AgentTool
    from rondo.tools.base import BaseTool, BaseToolset
    from rondo.tools.function import FunctionTool, LongRunningFunctionTool, tool
    from rondo.types import Blob, Content, FunctionCall, FunctionResponse, Part, Usage

_EXPORTS: dict[str, str] = {
    "Agent": "rondo.agents.llm",
    "LlmAgent": "rondo.agents.llm",
    "BaseAgent": "rondo.agents.base",
    "SequentialAgent": "rondo.agents.workflow",
    "ParallelAgent": "rondo.agents.workflow",
    "LoopAgent": "rondo.agents.workflow",
    "Team": "rondo.agents.team",
    "Graph": "rondo.agents.graph",
    "Harness": "rondo.agents.harness",
    "AgentTool": "rondo.tools.agent_tool",
    "Runner": "rondo.runner",
    "RunResult": "rondo.runner",
    "RunConfig": "rondo.run_config",
    "Budget": "rondo.run_config",
    "GuardrailFunctionOutput": "rondo.guardrails",
    "InputGuardrail": "rondo.guardrails",
    "OutputGuardrail": "rondo.guardrails",
    "ToolInputGuardrail": "rondo.guardrails",
    "ToolOutputGuardrail": "rondo.guardrails",
    "input_guardrail": "rondo.guardrails",
    "output_guardrail": "rondo.guardrails",
    "tool_input_guardrail": "rondo.guardrails",
    "tool_output_guardrail": "rondo.guardrails",
    "BudgetExceeded": "rondo.errors",
    "GuardrailTripped": "rondo.errors",
    "LiveRequest": "rondo.models.live",
    "LiveRequestQueue": "rondo.models.live",
    "Content": "rondo.types",
    "Part": "rondo.types",
    "FunctionCall": "rondo.types",
    "FunctionResponse": "rondo.types",
    "Blob": "rondo.types",
    "Usage": "rondo.types",
    "Event": "rondo.events",
    "EventActions": "rondo.events",
    "ToolConfirmation": "rondo.events",
    "PendingCall": "rondo.events",
    "ContextStrategy": "rondo.flow.context_strategies",
    "SlidingWindow": "rondo.flow.context_strategies",
    "Summarizing": "rondo.flow.context_strategies",
    "ToolResultTrimming": "rondo.flow.context_strategies",
    "BaseTool": "rondo.tools.base",
    "BaseToolset": "rondo.tools.base",
    "FunctionTool": "rondo.tools.function",
    "LongRunningFunctionTool": "rondo.tools.function",
    "tool": "rondo.tools.function",
    "ToolContext": "rondo.context",
    "CallbackContext": "rondo.context",
    "ReadonlyContext": "rondo.context",
    "InvocationContext": "rondo.context",
    "Plugin": "rondo.plugins",
    "BaseSessionService": "rondo.sessions.base",
    "ListSessionsResponse": "rondo.sessions.base",
    "Session": "rondo.sessions.base",
    "InMemorySessionService": "rondo.sessions.memory",
    "SqlSessionService": "rondo.sessions.sql",
    "RondoError": "rondo.errors",
    "ConfigurationError": "rondo.errors",
    "ContentsError": "rondo.errors",
    "DuplicateAgentNameError": "rondo.errors",
    "DurableReplayError": "rondo.errors",
    "FrozenRecordError": "rondo.errors",
    "InstructionError": "rondo.errors",
    "InvalidArtifactNameError": "rondo.errors",
    "InvalidCallbackError": "rondo.errors",
    "InvalidIdError": "rondo.errors",
    "InvalidStateValueError": "rondo.errors",
    "LlmCallsLimitExceeded": "rondo.errors",
    "ModelError": "rondo.errors",
    "ModelNotFoundError": "rondo.errors",
    "SchemaVersionError": "rondo.errors",
    "ScriptExhaustedError": "rondo.errors",
    "SessionError": "rondo.errors",
    "SessionExistsError": "rondo.errors",
    "InvocationNotFoundError": "rondo.errors",
    "SessionNotFoundError": "rondo.errors",
    "StaleSessionError": "rondo.errors",
    "StoreUnavailableError": "rondo.errors",
    "ToolArgumentsError": "rondo.errors",
    "ToolDefinitionError": "rondo.errors",
    "ToolError": "rondo.errors",
    "ToolNotFoundError": "rondo.errors",
    "TransferError": "rondo.errors",
    "ToolResultError": "rondo.errors",
    "ToolTimeoutError": "rondo.errors",
    "ReadOnlyStateError": "rondo.errors",
    "OutputValidationError": "rondo.errors",
    "ModelTimeoutError": "rondo.errors",
    "ModelServerError": "rondo.errors",
    "ModelResponseError": "rondo.errors",
    "ModelRateLimitError": "rondo.errors",
    "ModelConnectionError": "rondo.errors",
    "ModelBadRequestError": "rondo.errors",
    "ModelAuthError": "rondo.errors",
    "MissingAPIKeyError": "rondo.errors",
    "InvalidMessageError": "rondo.errors",
    "AgentCardError": "rondo.errors",
    "CliError": "rondo.errors",
    "RemoteAgentError": "rondo.errors",
    "RemoteAgentFailedError": "rondo.errors",
    "RemoteAgentTimeoutError": "rondo.errors",
    "RemoteAgentUnreachableError": "rondo.errors",
    "InvalidPageError": "rondo.errors",
}

__all__ = [
    "Agent",
    "AgentCardError",
    "AgentTool",
    "BaseAgent",
    "BaseSessionService",
    "BaseTool",
    "BaseToolset",
    "Blob",
    "Budget",
    "BudgetExceeded",
    "CallbackContext",
    "CliError",
    "ConfigurationError",
    "Content",
    "ContentsError",
    "ContextStrategy",
    "DuplicateAgentNameError",
    "DurableReplayError",
    "Event",
    "EventActions",
    "FrozenRecordError",
    "FunctionCall",
    "FunctionResponse",
    "FunctionTool",
    "Graph",
    "GuardrailFunctionOutput",
    "GuardrailTripped",
    "Harness",
    "InMemorySessionService",
    "InputGuardrail",
    "InstructionError",
    "InvalidArtifactNameError",
    "InvalidCallbackError",
    "InvalidIdError",
    "InvalidMessageError",
    "InvalidPageError",
    "InvalidStateValueError",
    "InvocationContext",
    "InvocationNotFoundError",
    "ListSessionsResponse",
    "LiveRequest",
    "LiveRequestQueue",
    "LlmAgent",
    "LlmCallsLimitExceeded",
    "LongRunningFunctionTool",
    "LoopAgent",
    "MissingAPIKeyError",
    "ModelAuthError",
    "ModelBadRequestError",
    "ModelConnectionError",
    "ModelError",
    "ModelNotFoundError",
    "ModelRateLimitError",
    "ModelResponseError",
    "ModelServerError",
    "ModelTimeoutError",
    "OutputGuardrail",
    "OutputValidationError",
    "ParallelAgent",
    "Part",
    "PendingCall",
    "Plugin",
    "ReadOnlyStateError",
    "ReadonlyContext",
    "RemoteAgentError",
    "RemoteAgentFailedError",
    "RemoteAgentTimeoutError",
    "RemoteAgentUnreachableError",
    "RondoError",
    "RunConfig",
    "RunResult",
    "Runner",
    "SchemaVersionError",
    "ScriptExhaustedError",
    "SequentialAgent",
    "Session",
    "SessionError",
    "SessionExistsError",
    "SessionNotFoundError",
    "SlidingWindow",
    "SqlSessionService",
    "StaleSessionError",
    "StoreUnavailableError",
    "Summarizing",
    "Team",
    "ToolArgumentsError",
    "ToolConfirmation",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolInputGuardrail",
    "ToolNotFoundError",
    "ToolOutputGuardrail",
    "ToolResultError",
    "ToolResultTrimming",
    "ToolTimeoutError",
    "TransferError",
    "Usage",
    "__version__",
    "input_guardrail",
    "output_guardrail",
    "tool",
    "tool_input_guardrail",
    "tool_output_guardrail",
]


def _default_runner(agent: BaseAgent) -> Runner:
    # The package root wires the layers: the agents' `run` gets its runner from here, so
    # `rondo.agents` never imports `rondo.runner` (loaded on first use: import cost).
    from rondo.runner import Runner

    return Runner(agent=agent, app_name=agent.name)


install_runner_factory(_default_runner)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rondo' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
