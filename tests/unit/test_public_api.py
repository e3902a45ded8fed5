"""The public surface (DESIGN §4) is pinned: a rename here breaks users' code."""

from __future__ import annotations

import rondo
import rondo.lifecycle
import rondo.models
import rondo.testing

EXPECTED_ROOT = {
    "Agent",
    "LlmAgent",
    "SequentialAgent",
    "ParallelAgent",
    "LoopAgent",
    "BaseAgent",
    "Runner",
    "RunConfig",
    "RunResult",
    "Content",
    "Part",
    "FunctionCall",
    "FunctionResponse",
    "Blob",
    "Event",
    "EventActions",
    "FunctionTool",
    "LongRunningFunctionTool",
    "tool",
    "ToolContext",
    "CallbackContext",
    "ReadonlyContext",
    "ToolConfirmation",
    "Plugin",
    "InMemorySessionService",
    "SqlSessionService",
    "Session",
    "RondoError",
    "LlmCallsLimitExceeded",
    "StaleSessionError",
}


def test_root_exports_the_design_contract() -> None:
    assert set(rondo.__all__) >= EXPECTED_ROOT
    for name in rondo.__all__:
        assert getattr(rondo, name) is not None, name


def test_models_exports() -> None:
    expected = {
        "Model",
        "ModelRequest",
        "ModelResponse",
        "GenerateConfig",
        "FunctionDeclaration",
        "Usage",
    }
    assert expected <= set(rondo.models.__all__)


def test_lifecycle_exports() -> None:
    expected = {
        "RunStart",
        "RunEnd",
        "ReasonStart",
        "ReasonDelta",
        "ReasonEnd",
        "ActionStart",
        "ActionEnd",
        "ToolCallStart",
        "ToolCallEnd",
        "HITLPending",
        "HITLDecided",
        "PlanUpdate",
        "ContextSize",
        "NodeStart",
        "NodeEnd",
        "TaskEvent",
    }
    assert expected <= set(rondo.lifecycle.__all__)


def test_testing_exports() -> None:
    assert {"ScriptedModel", "check_stream"} <= set(rondo.testing.__all__)


def test_every_framework_error_derives_from_rondo_error() -> None:
    import rondo.errors

    for name in rondo.errors.__all__:
        assert issubclass(getattr(rondo.errors, name), rondo.RondoError), name


# Pinned exactly (as httpx pins its exports): adding or removing a public name is a decision
# made here, in one place, never by accident.
EXACT_ROOT = [
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

EXACT_LIFECYCLE = [
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
    "SCHEMA_VERSION",
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


def test_root_all_is_pinned_exactly() -> None:
    assert sorted(rondo.__all__) == EXACT_ROOT
    assert len(set(rondo.__all__)) == len(rondo.__all__)
    assert dir(rondo) == rondo.__all__
    for name in EXACT_ROOT:
        assert getattr(rondo, name) is not None, name


def test_lifecycle_all_is_pinned_exactly() -> None:
    assert sorted(rondo.lifecycle.__all__) == EXACT_LIFECYCLE
    for name in EXACT_LIFECYCLE:
        assert getattr(rondo.lifecycle, name) is not None, name
