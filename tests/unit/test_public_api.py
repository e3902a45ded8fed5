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
