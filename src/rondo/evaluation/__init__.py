"""Eval sets in google-adk's format, run against rondo agents and scored as `adk eval` does.

    from rondo.evaluation import load_eval_set, config_beside, run_eval
    report = await run_eval(agent, load_eval_set("weather.evalset.json"))
    report.assert_passed()

`rondo eval AGENT EVALSET [--config test_config.json]` is the same from the command line, and
`rondo.testing.evaluate` from a test.
"""

from rondo.evaluation.config import (
    DEFAULT_CRITERIA,
    RESPONSE_MATCH,
    TOOL_TRAJECTORY,
    Criterion,
    EvalConfig,
    config_beside,
    load_eval_config,
    parse_eval_config,
)
from rondo.evaluation.evalset import (
    EvalCase,
    EvalSet,
    EvalSetError,
    ExpectedCall,
    Invocation,
    SessionInput,
    load_eval_set,
    parse_eval_set,
)
from rondo.evaluation.metrics import ActualInvocation, Call, trajectory_matches
from rondo.evaluation.report import (
    CaseResult,
    EvalFailedError,
    EvalReport,
    InvocationResult,
    MetricResult,
)
from rondo.evaluation.rouge import Rouge1, rouge1
from rondo.evaluation.runner import Progress, run_case, run_eval

__all__ = [
    "DEFAULT_CRITERIA",
    "RESPONSE_MATCH",
    "TOOL_TRAJECTORY",
    "ActualInvocation",
    "Call",
    "CaseResult",
    "Criterion",
    "EvalCase",
    "EvalConfig",
    "EvalFailedError",
    "EvalReport",
    "EvalSet",
    "EvalSetError",
    "ExpectedCall",
    "Invocation",
    "InvocationResult",
    "MetricResult",
    "Progress",
    "Rouge1",
    "SessionInput",
    "config_beside",
    "load_eval_config",
    "load_eval_set",
    "parse_eval_config",
    "parse_eval_set",
    "rouge1",
    "run_case",
    "run_eval",
    "trajectory_matches",
]
