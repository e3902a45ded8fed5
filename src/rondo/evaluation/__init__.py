"""Eval sets in google-adk's format, run against rondo agents and scored as `adk eval` does.

    from rondo.evaluation import load_eval_set, config_beside, run_eval
    report = await run_eval(agent, load_eval_set("weather.evalset.json"))
    report.assert_passed()

`rondo eval AGENT EVALSET [--config test_config.json]` is the same from the command line, and
`rondo.testing.evaluate` from a test.
"""

from rondo.evaluation.config import (
    DEFAULT_CRITERIA,
    FINAL_RESPONSE_MATCH_V2,
    HALLUCINATIONS_V1,
    JUDGED_METRICS,
    RESPONSE_MATCH,
    RUBRIC_FINAL_RESPONSE_QUALITY,
    RUBRIC_TOOL_USE_QUALITY,
    TOOL_TRAJECTORY,
    Criterion,
    EvalConfig,
    JudgeOptions,
    config_beside,
    load_eval_config,
    parse_eval_config,
)
from rondo.evaluation.cost import Cost
from rondo.evaluation.evalset import (
    EvalCase,
    EvalSet,
    EvalSetError,
    ExpectedCall,
    Invocation,
    Rubric,
    SessionInput,
    load_eval_set,
    parse_eval_set,
)
from rondo.evaluation.judge import JudgeResolver, resolve_judge_model
from rondo.evaluation.judged import AppDetails, RubricScore
from rondo.evaluation.metrics import ActualInvocation, Call, Step, trajectory_matches
from rondo.evaluation.prompts import PROMPT_VERSION
from rondo.evaluation.report import (
    CaseResult,
    EvalFailedError,
    EvalReport,
    InvocationResult,
    MetricResult,
)
from rondo.evaluation.rouge import Rouge1, rouge1
from rondo.evaluation.runner import Progress, app_details, run_case, run_eval

__all__ = [
    "DEFAULT_CRITERIA",
    "FINAL_RESPONSE_MATCH_V2",
    "HALLUCINATIONS_V1",
    "JUDGED_METRICS",
    "PROMPT_VERSION",
    "RESPONSE_MATCH",
    "RUBRIC_FINAL_RESPONSE_QUALITY",
    "RUBRIC_TOOL_USE_QUALITY",
    "TOOL_TRAJECTORY",
    "ActualInvocation",
    "AppDetails",
    "Call",
    "CaseResult",
    "Cost",
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
    "JudgeOptions",
    "JudgeResolver",
    "MetricResult",
    "Progress",
    "Rouge1",
    "Rubric",
    "RubricScore",
    "SessionInput",
    "Step",
    "app_details",
    "config_beside",
    "load_eval_config",
    "load_eval_set",
    "parse_eval_config",
    "parse_eval_set",
    "resolve_judge_model",
    "rouge1",
    "run_case",
    "run_eval",
    "trajectory_matches",
]
