"""google-adk's eval JSON for what the dev server's eval routes store and answer.

A session's records as an eval case's conversation (ADK's "add session to eval set"), a
rondo `CaseResult` as ADK's `EvalCaseResult`, and the metrics ADK's `metrics-info` lists —
all snake_case, as ADK writes them to disk (the routes answer with the camelCase aliases).
ADK's informational efficiency metrics (`tool_call_count_v1`, `inference_call_count_v1`,
`token_usage_v1`, `invocation_duration_v1`) are reported for every run, as ADK 2.13 does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean
from typing import TYPE_CHECKING, cast

from rondo.evaluation.adk_json import content_json, invocation_json
from rondo.evaluation.config import (
    FINAL_RESPONSE_MATCH_V2,
    HALLUCINATIONS_V1,
    JUDGED_METRICS,
    RESPONSE_MATCH,
    RUBRIC_FINAL_RESPONSE_QUALITY,
    RUBRIC_TOOL_USE_QUALITY,
    TOOL_TRAJECTORY,
)
from rondo.evaluation.metrics import ActualInvocation
from rondo.evaluation.report import CaseResult, MetricResult

if TYPE_CHECKING:
    from rondo.events import Event

__all__ = [
    "COMPUTED_METRICS",
    "EFFICIENCY_METRICS",
    "METRICS_INFO",
    "PASSED",
    "case_result_json",
    "invocations_from_events",
]

# ADK's EvalStatus values.
PASSED, FAILED, NOT_EVALUATED, INFORMATIONAL = 1, 2, 3, 4

TOOL_CALL_COUNT = "tool_call_count_v1"
INFERENCE_CALL_COUNT = "inference_call_count_v1"
TOKEN_USAGE = "token_usage_v1"
INVOCATION_DURATION = "invocation_duration_v1"
EFFICIENCY_METRICS = (TOOL_CALL_COUNT, INFERENCE_CALL_COUNT, TOKEN_USAGE, INVOCATION_DURATION)
COMPUTED_METRICS = (TOOL_TRAJECTORY, RESPONSE_MATCH, *JUDGED_METRICS)


def _info(name: str, description: str, low: float = 0.0, high: float = 1.0) -> dict[str, object]:
    interval = {"min_value": low, "open_at_min": False, "max_value": high, "open_at_max": False}
    return {
        "metric_name": name,
        "description": description,
        "metric_value_info": {"interval": interval},
        "requires_threshold": True,
    }


def _informational(name: str, description: str) -> dict[str, object]:
    return {
        "metric_name": name,
        "description": description,
        "metric_value_info": {},
        "requires_threshold": False,
    }


# The metrics rondo scores, described in rondo's words (ADK's ranges and threshold rules).
METRICS_INFO: tuple[dict[str, object], ...] = (
    _info(TOOL_TRAJECTORY, "1.0 when the agent's tool calls match the expected ones, else 0.0."),
    _info(RESPONSE_MATCH, "ROUGE-1 F-measure of the final response against the expected one."),
    _info(
        FINAL_RESPONSE_MATCH_V2,
        "Share of judge samples that find the final response equivalent to the expected one.",
    ),
    _info(
        RUBRIC_FINAL_RESPONSE_QUALITY,
        "Share of the final-response rubrics an LLM judge finds satisfied.",
    ),
    _info(HALLUCINATIONS_V1, "Share of the response's claims an LLM judge finds supported."),
    _info(RUBRIC_TOOL_USE_QUALITY, "Share of the tool-use rubrics an LLM judge finds satisfied."),
    _informational(TOOL_CALL_COUNT, "Tool calls per invocation (reported, never judged)."),
    _informational(INFERENCE_CALL_COUNT, "Model calls per invocation (reported, never judged)."),
    _informational(TOKEN_USAGE, "Tokens per invocation (reported, never judged)."),
    _informational(INVOCATION_DURATION, "Seconds per invocation (reported, never judged)."),
)


def invocations_from_events(events: Iterable[Event]) -> list[dict[str, object]]:
    """A session's records as ADK `Invocation`s, one per invocation id: the user's message,
    the final response (text preferred), and every other record with content as a step."""
    grouped: dict[str, list[Event]] = {}
    for event in events:
        grouped.setdefault(event.invocation_id, []).append(event)
    out: list[dict[str, object]] = []
    for invocation_id, records in grouped.items():
        user: dict[str, object] = {"parts": []}
        created = 0.0
        final: Event | None = None
        kept: list[Event] = []
        for event in records:
            content = event.content
            if event.author.lower() == "user":
                if content is not None:
                    user, created = content_json(content), event.timestamp
                continue
            if content is None or not content.parts or event.partial:
                continue
            if event.is_final_response():
                has_text = final is not None and any(p.text for p in final.content.parts)  # pyright: ignore[reportOptionalMemberAccess]
                if not has_text or any(p.text for p in content.parts):
                    final = event
            if any(
                p.function_call or p.function_response or p.text or p.inline_data
                for p in content.parts
            ):
                kept.append(event)
        steps: list[dict[str, object]] = []
        for event in kept:
            step: dict[str, object] = {"author": event.author}
            if event is not final or event.get_function_calls():
                step["content"] = content_json(event.content)  # pyright: ignore[reportArgumentType]
            steps.append(step)
        invocation: dict[str, object] = {"invocation_id": invocation_id, "user_content": user}
        if final is not None and final.content is not None:
            invocation["final_response"] = content_json(final.content)
        invocation["intermediate_data"] = {"invocation_events": steps}
        invocation["creation_timestamp"] = created
        out.append(invocation)
    return out


def _status(metric: MetricResult) -> int:
    return {"passed": PASSED, "failed": FAILED, "not_evaluated": NOT_EVALUATED}[metric.status]


def _metric(
    name: str, threshold: float | None, score: float | None, status: int
) -> dict[str, object]:
    found: dict[str, object] = {"metric_name": name}
    if threshold is not None:
        found["threshold"] = threshold
    if score is not None:
        found["score"] = score
    found["eval_status"] = status
    found["details"] = {}
    return found


def _efficiency(name: str, did: ActualInvocation) -> dict[str, object]:
    if name == TOOL_CALL_COUNT:
        return _metric(name, None, float(len(did.tool_calls)), INFORMATIONAL)
    if name == INFERENCE_CALL_COUNT:
        return _metric(name, None, float(did.model_calls), INFORMATIONAL)
    if name == TOKEN_USAGE:
        found = _metric(name, None, None, INFORMATIONAL)
        details: dict[str, object] = {}
        if did.input_tokens is not None or did.output_tokens is not None:
            total = (did.input_tokens or 0) + (did.output_tokens or 0)
            found["score"] = float(total)
            details = {
                "input_tokens": did.input_tokens,
                "output_tokens": did.output_tokens,
                "total_tokens": total,
            }
        found["details"] = {"token_usage_details": details}
        return found
    found = _metric(name, None, did.seconds, INFORMATIONAL)
    found["details"] = {"duration_details": {"total_seconds": did.seconds}}
    return found


def _overall_efficiency(name: str, per: Sequence[dict[str, object]]) -> dict[str, object]:
    scores = [s for p in per if isinstance(s := p.get("score"), float)]
    overall = _metric(name, None, fmean(scores) if scores else None, INFORMATIONAL)
    if name == TOKEN_USAGE:
        overall["details"] = {"token_usage_details": {}}
        if scores:
            overall["details"] = {"token_usage_details": {"total_tokens": fmean(scores)}}
    elif name == INVOCATION_DURATION:
        overall["details"] = {"duration_details": {"total_seconds": overall.get("score")}}
    return overall


def case_result_json(
    result: CaseResult,
    case: Mapping[str, object],
    eval_set_id: str,
    *,
    user_id: str,
    session_id: str,
    skipped: Sequence[str] = (),
) -> dict[str, object]:
    """One case's result as ADK's `EvalCaseResult`: overall and per-invocation metric results
    (the requested metrics, then ADK's efficiency metrics), the final status, the session."""
    conversation = case.get("conversation")
    expected = cast("list[object]", conversation) if isinstance(conversation, list) else []
    overall = [_metric(m.metric, m.threshold, m.score, _status(m)) for m in result.metrics] + [
        _metric(name, None, None, NOT_EVALUATED) for name in skipped
    ]
    per_invocation: list[dict[str, object]] = []
    efficiency: dict[str, list[dict[str, object]]] = {name: [] for name in EFFICIENCY_METRICS}
    for index, invocation in enumerate(result.invocations):
        did = invocation.actual
        scored = [
            _metric(m.metric, m.threshold, m.per_invocation[index], _invocation_status(m, index))
            for m in result.metrics
        ] + [_metric(name, None, None, NOT_EVALUATED) for name in skipped]
        for name in EFFICIENCY_METRICS:
            efficiency[name].append(_efficiency(name, did))
            scored.append(efficiency[name][-1])
        actual = invocation_json(did)
        actual["creation_timestamp"] = did.created
        entry: dict[str, object] = {"actual_invocation": actual}
        if index < len(expected):
            entry["expected_invocation"] = expected[index]
        entry["eval_metric_results"] = scored
        per_invocation.append(entry)
    if result.invocations:
        overall += [_overall_efficiency(name, efficiency[name]) for name in EFFICIENCY_METRICS]
    statuses = [m.status for m in result.metrics]
    if result.error is not None or "failed" in statuses:
        final = FAILED
    elif "passed" in statuses:
        final = PASSED
    else:
        final = NOT_EVALUATED
    return {
        "eval_set_file": eval_set_id,
        "eval_set_id": eval_set_id,
        "eval_id": result.eval_id,
        "final_eval_status": final,
        "eval_metric_results": [],
        "overall_eval_metric_results": overall,
        "eval_metric_result_per_invocation": per_invocation,
        "session_id": session_id,
        "user_id": user_id,
    }


def _invocation_status(metric: MetricResult, index: int) -> int:
    score = metric.per_invocation[index]
    if score is None:
        return NOT_EVALUATED
    return PASSED if score >= metric.threshold else FAILED
