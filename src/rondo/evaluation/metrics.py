"""The two metrics `adk eval` computes without an LLM, scored per invocation as ADK does.

`tool_trajectory_avg_score`: 1.0 for an invocation whose tool calls match the expected ones
(by default exactly: same names, same arguments, same order, nothing extra), else 0.0;
averaged over the case's invocations. `response_match_score`: ROUGE-1 F-measure of the final
response against the expected one, averaged the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rondo.evaluation.config import RESPONSE_MATCH, TOOL_TRAJECTORY, Criterion, MatchType
from rondo.evaluation.evalset import EvalSetError, ExpectedCall
from rondo.evaluation.rouge import rouge1
from rondo.types import Content

__all__ = ["ActualInvocation", "Call", "Step", "score_invocations", "trajectory_matches"]


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call as the trajectory metric compares it: a name and its arguments."""

    name: str
    args: dict[str, object]


@dataclass(frozen=True, slots=True)
class Step:
    """A record of the agent's turn other than its answer, as ADK's `invocation_events` are:
    text said before or between tool calls, the calls, their results. The answer's own record
    appears with `content=None` unless it also calls tools."""

    author: str
    content: Content | None


@dataclass(frozen=True, slots=True)
class ActualInvocation:
    """What the agent did with one user message: its tool calls and its final text
    (and, for the judges, the message itself and every step on the way)."""

    tool_calls: tuple[Call, ...]
    final_text: str
    user_text: str = ""
    steps: tuple[Step, ...] = ()
    # What it took, for ADK's informational efficiency metrics: the model calls that reported
    # usage, their tokens (None when none reported any), and the wall time in seconds.
    model_calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    seconds: float | None = None
    created: float = 0.0  # when the user's message was sent (epoch seconds)


def _same(actual: Call, expected: Call | ExpectedCall, ignore_args: bool) -> bool:
    return actual.name == expected.name and (ignore_args or actual.args == expected.args)


def _in_order(actual: Sequence[Call], expected: Sequence[ExpectedCall], ignore: bool) -> bool:
    remaining = iter(actual)
    return all(any(_same(a, e, ignore) for a in remaining) for e in expected)


def _any_order(actual: Sequence[Call], expected: Sequence[ExpectedCall], ignore: bool) -> bool:
    unused = list(actual)
    for e in expected:
        found = next((i for i, a in enumerate(unused) if _same(a, e, ignore)), None)
        if found is None:
            return False
        del unused[found]
    return True


def trajectory_matches(
    actual: Sequence[Call],
    expected: Sequence[ExpectedCall],
    match_type: MatchType = "EXACT",
    ignore_args: bool = False,
) -> bool:
    """Whether the actual calls satisfy the expected trajectory under `match_type`."""
    if match_type == "IN_ORDER":
        return _in_order(actual, expected, ignore_args)
    if match_type == "ANY_ORDER":
        return _any_order(actual, expected, ignore_args)
    return len(actual) == len(expected) and all(
        _same(a, e, ignore_args) for a, e in zip(actual, expected, strict=True)
    )


def _score_one(
    criterion: Criterion,
    actual: ActualInvocation,
    expected_calls: Sequence[ExpectedCall],
    expected_text: str,
) -> float:
    if criterion.metric == TOOL_TRAJECTORY:
        matched = trajectory_matches(
            actual.tool_calls, expected_calls, criterion.match_type, criterion.ignore_args
        )
        return 1.0 if matched else 0.0
    if criterion.metric == RESPONSE_MATCH:
        return rouge1(actual.final_text, expected_text).fmeasure
    raise EvalSetError(f"rondo eval computes no metric named {criterion.metric!r}")


def score_invocations(
    criterion: Criterion,
    actual: Sequence[ActualInvocation],
    expected: Sequence[tuple[Sequence[ExpectedCall], str]],
) -> list[float]:
    """The per-invocation scores of one metric; `expected` pairs calls with final text."""
    return [
        _score_one(criterion, a, calls, text)
        for a, (calls, text) in zip(actual, expected, strict=True)
    ]
