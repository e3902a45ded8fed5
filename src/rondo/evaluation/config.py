"""Eval criteria in ADK's `test_config.json` shape: `{"criteria": {metric: threshold}}`.

A criterion is a number (the threshold) or one of ADK's criterion objects: `{"threshold": t}`,
and for `tool_trajectory_avg_score` also `match_type` (`EXACT`, `IN_ORDER`, `ANY_ORDER`) and
`ignore_args`. The LLM-judged metrics (`final_response_match_v2`,
`rubric_based_final_response_quality_v1`, `rubric_based_tool_use_quality_v1`,
`hallucinations_v1`) take ADK's judge options: `judge_model_options` (`judge_model`,
`num_samples`, `parallelism_limit`), `rubrics` for the rubric-based two,
`include_intermediate_responses_in_final`, `evaluate_intermediate_nl_responses`. Metrics rondo
cannot compute (safety, the multi-turn ones, custom metrics) are not evaluated: ADK logs an
error for such a metric and leaves it out of the verdict, and so does rondo — with a warning,
and listed in the report. Without a config, ADK's defaults apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import ValidationError

from rondo.evaluation.evalset import EvalSetError, Rubric, read_json

__all__ = [
    "DEFAULT_CRITERIA",
    "DEFAULT_JUDGE_MODEL",
    "FINAL_RESPONSE_MATCH_V2",
    "HALLUCINATIONS_V1",
    "JUDGED_METRICS",
    "RESPONSE_MATCH",
    "RUBRIC_FINAL_RESPONSE_QUALITY",
    "RUBRIC_TOOL_USE_QUALITY",
    "TOOL_TRAJECTORY",
    "Criterion",
    "EvalConfig",
    "JudgeOptions",
    "SimulatorOptions",
    "config_beside",
    "load_eval_config",
    "parse_eval_config",
    "parse_simulator_options",
]

TOOL_TRAJECTORY = "tool_trajectory_avg_score"
RESPONSE_MATCH = "response_match_score"
DEFAULT_CRITERIA: Mapping[str, float] = {TOOL_TRAJECTORY: 1.0, RESPONSE_MATCH: 0.8}
FINAL_RESPONSE_MATCH_V2 = "final_response_match_v2"
RUBRIC_FINAL_RESPONSE_QUALITY = "rubric_based_final_response_quality_v1"
RUBRIC_TOOL_USE_QUALITY = "rubric_based_tool_use_quality_v1"
HALLUCINATIONS_V1 = "hallucinations_v1"
JUDGED_METRICS = (
    FINAL_RESPONSE_MATCH_V2,
    RUBRIC_FINAL_RESPONSE_QUALITY,
    RUBRIC_TOOL_USE_QUALITY,
    HALLUCINATIONS_V1,
)
_COMPUTED = (TOOL_TRAJECTORY, RESPONSE_MATCH, *JUDGED_METRICS)
# ADK's defaults for a judge: its model, and five samples per invocation.
DEFAULT_JUDGE_MODEL = "gemini-2.5-flash"

MatchType = Literal["EXACT", "IN_ORDER", "ANY_ORDER"]
_MATCH_TYPES: tuple[MatchType, ...] = ("EXACT", "IN_ORDER", "ANY_ORDER")

# ADK metrics that need Vertex AI or a multi-turn judge, which rondo does not run.
_NOT_RUN = {
    "response_evaluation_score",
    "safety_v1",
    "per_turn_user_simulator_quality_v1",
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
    "rubric_based_multi_turn_trajectory_quality_v1",
}


@dataclass(frozen=True, slots=True)
class JudgeOptions:
    """ADK's `judge_model_options`: which model judges, how often per invocation, how many at once.

    `judge_model` is a rondo model string (`"openai:gpt-4o"`) or a bare model name as ADK
    writes it (`"gemini-2.5-flash"`, `"gpt-4o"`, `"claude-sonnet-4"`), which resolves to that
    provider's adapter.
    """

    judge_model: str = DEFAULT_JUDGE_MODEL
    num_samples: int = 5
    parallelism_limit: int = 1


@dataclass(frozen=True, slots=True)
class Criterion:
    """A metric and the score it must reach (`score >= threshold` passes)."""

    metric: str
    threshold: float
    match_type: MatchType = "EXACT"
    ignore_args: bool = False
    judge: JudgeOptions | None = None  # set for the LLM-judged metrics
    rubrics: tuple[Rubric, ...] = ()
    include_intermediate_responses_in_final: bool = False
    evaluate_intermediate_nl_responses: bool = False


@dataclass(frozen=True, slots=True)
class SimulatorOptions:
    """ADK's `user_simulator_config` (the llm-backed simulator): which model plays the user,
    for how many user messages at most, and whether it sees tool calls."""

    model: str = DEFAULT_JUDGE_MODEL
    max_allowed_invocations: int = 20
    include_function_calls: bool = False


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """The criteria to score, and the configured metrics rondo cannot compute (with why)."""

    criteria: tuple[Criterion, ...]
    not_evaluated: tuple[tuple[str, str], ...] = field(default=())
    user_simulator: SimulatorOptions = field(default_factory=SimulatorOptions)

    @classmethod
    def default(cls) -> EvalConfig:
        return cls(tuple(Criterion(name, t) for name, t in DEFAULT_CRITERIA.items()))

    def describe(self) -> str:
        return ", ".join(f"{c.metric} >= {c.threshold:g}" for c in self.criteria)


def _threshold(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EvalSetError(f"{where}: the threshold must be a number, got {value!r}")
    return float(value)


def _match_type(value: Any, where: str) -> MatchType:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(_MATCH_TYPES):
        return _MATCH_TYPES[value]  # ADK's enum values
    if isinstance(value, str):
        normalized = value.strip().upper().replace("-", "_").replace(" ", "_")
        for match_type in _MATCH_TYPES:
            if normalized == match_type:
                return match_type
    raise EvalSetError(f"{where}: match_type must be one of {', '.join(_MATCH_TYPES)}")


def _get(spec: Mapping[str, object], key: str, default: Any) -> Any:
    # ADK's models take snake_case and camelCase keys alike.
    head, *rest = key.split("_")
    return spec.get(key, spec.get(head + "".join(w.title() for w in rest), default))


def _flag(spec: Mapping[str, object], key: str, where: str) -> bool:
    value = _get(spec, key, False)
    if not isinstance(value, bool):
        raise EvalSetError(f"{where}.{key} must be true or false")
    return value


def _count(spec: Mapping[str, object], key: str, default: int, where: str) -> int:
    value = _get(spec, key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EvalSetError(f"{where}.{key} must be a whole number of at least 1, got {value!r}")
    return value


def _judge_options(spec: Mapping[str, object], where: str) -> JudgeOptions:
    raw = _get(spec, "judge_model_options", None)
    if raw is None:
        return JudgeOptions()
    if not isinstance(raw, Mapping):
        raise EvalSetError(f"{where}.judge_model_options must be an object")
    options = cast(Mapping[str, object], raw)
    where = f"{where}.judge_model_options"
    model = _get(options, "judge_model", DEFAULT_JUDGE_MODEL)
    if not isinstance(model, str) or not model.strip():
        raise EvalSetError(f"{where}.judge_model must be a model name")
    return JudgeOptions(
        model.strip(),
        _count(options, "num_samples", 5, where),
        _count(options, "parallelism_limit", 1, where),
    )


def _rubrics(spec: Mapping[str, object], where: str) -> tuple[Rubric, ...]:
    raw: Any = _get(spec, "rubrics", None) or []
    if not isinstance(raw, list):
        raise EvalSetError(f"{where}.rubrics must be a list")
    try:
        return tuple(Rubric.model_validate(r) for r in cast(list[object], raw))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise EvalSetError(f"{where}.rubrics: {first['loc']}: {first['msg']}") from None


def _judged(metric: str, spec: Mapping[str, object], threshold: float, where: str) -> Criterion:
    return Criterion(
        metric,
        threshold,
        judge=_judge_options(spec, where),
        rubrics=_rubrics(spec, where),
        include_intermediate_responses_in_final=_flag(
            spec, "include_intermediate_responses_in_final", where
        ),
        evaluate_intermediate_nl_responses=_flag(spec, "evaluate_intermediate_nl_responses", where),
    )


def _criterion(metric: str, value: Any, where: str) -> Criterion:
    if not isinstance(value, Mapping):
        threshold = _threshold(value, where)
        if metric in JUDGED_METRICS:  # a bare threshold: ADK's default judge options
            return _judged(metric, {}, threshold, where)
        return Criterion(metric, threshold)
    spec = cast(Mapping[str, object], value)
    if "threshold" not in spec:
        raise EvalSetError(f"{where}: a criterion object needs a 'threshold'")
    threshold = _threshold(spec["threshold"], f"{where}.threshold")
    if metric in JUDGED_METRICS:
        return _judged(metric, spec, threshold, where)
    if metric != TOOL_TRAJECTORY:
        return Criterion(metric, threshold)
    match_type = spec.get("match_type", spec.get("matchType", "EXACT"))
    ignore_args = spec.get("ignore_args", spec.get("ignoreArgs", False))
    if not isinstance(ignore_args, bool):
        raise EvalSetError(f"{where}.ignore_args must be true or false")
    return Criterion(metric, threshold, _match_type(match_type, f"{where}.match_type"), ignore_args)


def _why_not(metric: str) -> str:
    if metric in _NOT_RUN:
        return "an ADK metric that needs Vertex AI or a multi-turn judge, which rondo does not run"
    return f"unknown metric (rondo eval computes {', '.join(_COMPUTED)})"


def parse_simulator_options(data: Any, where: str) -> SimulatorOptions:
    """`SimulatorOptions` from test_config.json's `user_simulator_config`."""
    if data is None:
        return SimulatorOptions()
    if not isinstance(data, Mapping):
        raise EvalSetError(f"{where} must be an object")
    spec = cast(Mapping[str, object], data)
    kind = spec.get("type", "llm_backed")
    if kind != "llm_backed":
        raise EvalSetError(f"{where}: rondo runs the 'llm_backed' user simulator, not {kind!r}")
    model = spec.get("model", DEFAULT_JUDGE_MODEL)
    if not isinstance(model, str) or not model.strip():
        raise EvalSetError(f"{where}.model must be a model name")
    return SimulatorOptions(
        model.strip(),
        _count(spec, "max_allowed_invocations", 20, where),
        _flag(spec, "include_function_calls", where),
    )


def parse_eval_config(data: Any, *, source: str = "eval config") -> EvalConfig:
    """An `EvalConfig` from decoded `test_config.json` content."""
    document: Mapping[str, object] = (
        cast(Mapping[str, object], data) if isinstance(data, Mapping) else {}
    )
    entries: Any = document.get("criteria")
    if not isinstance(entries, Mapping):
        raise EvalSetError(f'{source}: expected {{"criteria": {{metric: threshold, ...}}}}')
    entries = cast(Mapping[str, object], entries)
    criteria: list[Criterion] = []
    skipped: list[tuple[str, str]] = []
    for metric, value in entries.items():
        where = f"{source}: criteria.{metric}"
        if metric in _COMPUTED:
            criteria.append(_criterion(metric, value, where))
        else:
            skipped.append((metric, _why_not(metric)))
    if not criteria:
        raise EvalSetError(
            f"{source}: no criterion rondo eval can compute (it computes {', '.join(_COMPUTED)})"
        )
    simulator = _get(document, "user_simulator_config", None)
    return EvalConfig(
        tuple(criteria),
        tuple(skipped),
        parse_simulator_options(simulator, f"{source}: user_simulator_config"),
    )


def load_eval_config(path: str | Path) -> EvalConfig:
    """Read a `test_config.json`; `EvalSetError` if it cannot be used."""
    return parse_eval_config(read_json(path, "config file"), source=str(path))


def config_beside(eval_set_path: str | Path) -> EvalConfig:
    """The `test_config.json` next to an eval set, as `adk eval` finds it, or ADK's defaults."""
    candidate = Path(eval_set_path).parent / "test_config.json"
    return load_eval_config(candidate) if candidate.is_file() else EvalConfig.default()
