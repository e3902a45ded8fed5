"""Eval criteria in ADK's `test_config.json` shape: `{"criteria": {metric: threshold}}`.

A criterion is a number (the threshold) or one of ADK's criterion objects: `{"threshold": t}`,
and for `tool_trajectory_avg_score` also `match_type` (`EXACT`, `IN_ORDER`, `ANY_ORDER`) and
`ignore_args`. Metrics rondo cannot compute (ADK's LLM-judged ones, custom metrics) are not
evaluated: ADK logs an error for such a metric and leaves it out of the verdict, and so does
rondo — with a warning, and listed in the report. Without a config, ADK's defaults apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from rondo.evaluation.evalset import EvalSetError, read_json

__all__ = [
    "DEFAULT_CRITERIA",
    "RESPONSE_MATCH",
    "TOOL_TRAJECTORY",
    "Criterion",
    "EvalConfig",
    "config_beside",
    "load_eval_config",
    "parse_eval_config",
]

TOOL_TRAJECTORY = "tool_trajectory_avg_score"
RESPONSE_MATCH = "response_match_score"
DEFAULT_CRITERIA: Mapping[str, float] = {TOOL_TRAJECTORY: 1.0, RESPONSE_MATCH: 0.8}

MatchType = Literal["EXACT", "IN_ORDER", "ANY_ORDER"]
_MATCH_TYPES: tuple[MatchType, ...] = ("EXACT", "IN_ORDER", "ANY_ORDER")

# ADK metrics that need an LLM judge, a user simulator or Vertex AI.
_JUDGED = {
    "response_evaluation_score",
    "safety_v1",
    "final_response_match_v2",
    "rubric_based_final_response_quality_v1",
    "hallucinations_v1",
    "rubric_based_tool_use_quality_v1",
    "per_turn_user_simulator_quality_v1",
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
    "rubric_based_multi_turn_trajectory_quality_v1",
}


@dataclass(frozen=True, slots=True)
class Criterion:
    """A metric and the score it must reach (`score >= threshold` passes)."""

    metric: str
    threshold: float
    match_type: MatchType = "EXACT"
    ignore_args: bool = False


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """The criteria to score, and the configured metrics rondo cannot compute (with why)."""

    criteria: tuple[Criterion, ...]
    not_evaluated: tuple[tuple[str, str], ...] = field(default=())

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


def _criterion(metric: str, value: Any, where: str) -> Criterion:
    if not isinstance(value, Mapping):
        return Criterion(metric, _threshold(value, where))
    spec = cast(Mapping[str, Any], value)
    if "threshold" not in spec:
        raise EvalSetError(f"{where}: a criterion object needs a 'threshold'")
    threshold = _threshold(spec["threshold"], f"{where}.threshold")
    if metric != TOOL_TRAJECTORY:
        return Criterion(metric, threshold)
    match_type = spec.get("match_type", spec.get("matchType", "EXACT"))
    ignore_args = spec.get("ignore_args", spec.get("ignoreArgs", False))
    if not isinstance(ignore_args, bool):
        raise EvalSetError(f"{where}.ignore_args must be true or false")
    return Criterion(metric, threshold, _match_type(match_type, f"{where}.match_type"), ignore_args)


def _why_not(metric: str) -> str:
    if metric in _JUDGED:
        return "an LLM-judged ADK metric, which rondo eval does not run"
    return f"unknown metric (rondo eval computes {TOOL_TRAJECTORY} and {RESPONSE_MATCH})"


def parse_eval_config(data: Any, *, source: str = "eval config") -> EvalConfig:
    """An `EvalConfig` from decoded `test_config.json` content."""
    document: Mapping[str, Any] = cast(Mapping[str, Any], data) if isinstance(data, Mapping) else {}
    entries: Any = document.get("criteria")
    if not isinstance(entries, Mapping):
        raise EvalSetError(f'{source}: expected {{"criteria": {{metric: threshold, ...}}}}')
    entries = cast(Mapping[str, Any], entries)
    criteria: list[Criterion] = []
    skipped: list[tuple[str, str]] = []
    for metric, value in entries.items():
        where = f"{source}: criteria.{metric}"
        if metric in (TOOL_TRAJECTORY, RESPONSE_MATCH):
            criteria.append(_criterion(metric, value, where))
        else:
            skipped.append((metric, _why_not(metric)))
    if not criteria:
        raise EvalSetError(
            f"{source}: no criterion rondo eval can compute "
            f"(it computes {TOOL_TRAJECTORY} and {RESPONSE_MATCH})"
        )
    return EvalConfig(tuple(criteria), tuple(skipped))


def load_eval_config(path: str | Path) -> EvalConfig:
    """Read a `test_config.json`; `EvalSetError` if it cannot be used."""
    return parse_eval_config(read_json(path, "config file"), source=str(path))


def config_beside(eval_set_path: str | Path) -> EvalConfig:
    """The `test_config.json` next to an eval set, as `adk eval` finds it, or ADK's defaults."""
    candidate = Path(eval_set_path).parent / "test_config.json"
    return load_eval_config(candidate) if candidate.is_file() else EvalConfig.default()
