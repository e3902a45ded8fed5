"""What an eval run found: per case, per metric, per invocation — and a table of it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from io import StringIO
from typing import Literal

from rich.console import Console
from rich.table import Table

from rondo.errors import RondoError
from rondo.evaluation.config import EvalConfig
from rondo.evaluation.cost import Cost
from rondo.evaluation.evalset import ExpectedCall
from rondo.evaluation.judged import RubricScore
from rondo.evaluation.metrics import ActualInvocation, Call

__all__ = [
    "CaseResult",
    "EvalFailedError",
    "EvalReport",
    "InvocationResult",
    "MetricResult",
    "MetricStatus",
]

_SHOWN = 200


class EvalFailedError(RondoError, AssertionError):
    """`EvalReport.assert_passed()`: a case failed. An `AssertionError`, so pytest reports a
    failed test (with the report) rather than an error."""


MetricStatus = Literal["passed", "failed", "not_evaluated"]


@dataclass(frozen=True, slots=True)
class MetricResult:
    """One metric of one case: the average over its invocations against a threshold.

    A score of None means not evaluated (a judge that gave no usable verdict, or `error`):
    such a metric neither passes nor fails its case, as in ADK.
    """

    metric: str
    threshold: float
    score: float | None
    per_invocation: tuple[float | None, ...]
    error: str | None = None
    # The LLM-judged rubric metrics: each invocation's rubric verdicts, and per rubric overall.
    rubric_scores: tuple[tuple[RubricScore, ...] | None, ...] = ()
    overall_rubric_scores: tuple[RubricScore, ...] = ()

    @property
    def status(self) -> MetricStatus:
        if self.score is None:
            return "not_evaluated"
        return "passed" if self.score >= self.threshold else "failed"

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def falls_short(self, index: int) -> bool:
        """Whether invocation `index` scored below the threshold (not when unscored)."""
        score = self.per_invocation[index]
        return score is not None and score < self.threshold


@dataclass(frozen=True, slots=True)
class InvocationResult:
    """One user message of a case: what was expected and what the agent did."""

    prompt: str
    expected_calls: tuple[ExpectedCall, ...]
    expected_text: str
    actual: ActualInvocation


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One eval case. It passes when it ran and every scored metric reached its threshold.
    `cost` is what its model calls (agent, judges, user simulator) took."""

    eval_id: str
    metrics: tuple[MetricResult, ...] = ()
    invocations: tuple[InvocationResult, ...] = ()
    error: str | None = None
    cost: Cost = field(default_factory=Cost)

    @property
    def passed(self) -> bool:
        """ADK's verdict: no metric failed and at least one passed (unevaluated ones abstain)."""
        statuses = [m.status for m in self.metrics]
        return self.error is None and "failed" not in statuses and "passed" in statuses

    def explain(self) -> list[str]:
        """Lines that show why the case failed: the error, or each invocation that fell short."""
        if self.error is not None:
            return [f"{self.eval_id}: the run failed: {self.error}"]
        lines = [
            f"{self.eval_id}: {m.metric} not evaluated: {m.error}" for m in self.metrics if m.error
        ]
        for index, invocation in enumerate(self.invocations):
            failing = [m.metric for m in self.metrics if m.falls_short(index)]
            if not failing:
                continue
            lines.append(
                f"{self.eval_id}, invocation {index + 1} ({', '.join(failing)}): "
                f"{_short(invocation.prompt)}"
            )
            lines.append(f"  expected tools: {_calls(invocation.expected_calls)}")
            lines.append(f"  actual tools:   {_calls(invocation.actual.tool_calls)}")
            lines.append(f"  expected text:  {_short(invocation.expected_text)}")
            lines.append(f"  actual text:    {_short(invocation.actual.final_text)}")
        return lines


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= _SHOWN else flat[: _SHOWN - 1] + "…")


def _calls(calls: tuple[Call, ...] | tuple[ExpectedCall, ...]) -> str:
    if not calls:
        return "(none)"
    return ", ".join(
        f"{c.name}({json.dumps(c.args, ensure_ascii=False, sort_keys=True)})" for c in calls
    )


def _score(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.4f}".rstrip("0").rstrip(".") if value not in (0.0, 1.0) else f"{value:.1f}"


def _rubric_dicts(scores: tuple[RubricScore, ...] | None) -> list[dict[str, object]] | None:
    if scores is None:
        return None
    return [{"rubric_id": s.rubric_id, "score": s.score, "rationale": s.rationale} for s in scores]


def _metric_dict(m: MetricResult) -> dict[str, object]:
    found: dict[str, object] = {
        "metric": m.metric,
        "threshold": m.threshold,
        "score": m.score,
        "status": m.status,
        "per_invocation": list(m.per_invocation),
    }
    if m.error is not None:
        found["error"] = m.error
    if m.rubric_scores:
        found["rubric_scores"] = [_rubric_dicts(r) for r in m.rubric_scores]
        found["overall_rubric_scores"] = _rubric_dicts(m.overall_rubric_scores)
    return found


def _calls_list(calls: tuple[Call, ...] | tuple[ExpectedCall, ...]) -> list[dict[str, object]]:
    return [{"name": c.name, "args": c.args} for c in calls]


def _tokens(cost: Cost) -> str:
    return f"{cost.total_tokens:,}" if cost.calls else "-"


def _case_dict(case: CaseResult) -> dict[str, object]:
    return {
        "eval_id": case.eval_id,
        "passed": case.passed,
        "error": case.error,
        "usage": case.cost.to_dict(),
        "metrics": [_metric_dict(m) for m in case.metrics],
        "invocations": [
            {
                "prompt": inv.prompt,
                "expected_tool_calls": _calls_list(inv.expected_calls),
                "actual_tool_calls": _calls_list(inv.actual.tool_calls),
                "expected_text": inv.expected_text,
                "actual_text": inv.actual.final_text,
            }
            for inv in case.invocations
        ],
    }


@dataclass(frozen=True, slots=True)
class EvalReport:
    """The result of running an eval set: `.passed`, `.failures`, a table, `assert_passed()`."""

    eval_set_id: str
    cases: tuple[CaseResult, ...]
    config: EvalConfig = field(default_factory=EvalConfig.default)

    @property
    def passed(self) -> bool:
        return all(case.passed for case in self.cases)

    @property
    def failures(self) -> tuple[CaseResult, ...]:
        return tuple(case for case in self.cases if not case.passed)

    @property
    def cost(self) -> Cost:
        """Tokens and dollars of every case together (unpriced if any call was)."""
        total = Cost()
        for case in self.cases:
            total = total + case.cost
        return total

    def table(self) -> Table:
        """One row per case and metric: case, metric, score, threshold, pass; each case's
        tokens and cost on its first row."""
        table = Table(title=f"eval set {self.eval_set_id}", title_justify="left")
        table.add_column("case", overflow="fold")
        table.add_column("metric", no_wrap=True)
        for column in ("score", "threshold", "pass"):
            table.add_column(column, no_wrap=True)
        table.add_column("per invocation", overflow="fold")
        table.add_column("tokens", justify="right", no_wrap=True)
        table.add_column("cost", no_wrap=True)
        for case in self.cases:
            spent = [_tokens(case.cost), case.cost.label]
            if case.error is not None:
                table.add_row(case.eval_id, "(run)", "-", "-", "[red]ERROR[/]", case.error, *spent)
                continue
            for index, m in enumerate(case.metrics):
                per = ", ".join(_score(s) for s in m.per_invocation)
                verdict = {
                    "passed": "[green]PASS[/]",
                    "failed": "[red]FAIL[/]",
                    "not_evaluated": "[yellow]N/A[/]",
                }[m.status]
                table.add_row(
                    case.eval_id,
                    m.metric,
                    _score(m.score),
                    _score(m.threshold),
                    verdict,
                    per,
                    *(spent if index == 0 else ["", ""]),
                )
        return table

    def summary(self) -> str:
        passed = len(self.cases) - len(self.failures)
        total = len(self.cases)
        line = f"{passed} of {total} case{'' if total == 1 else 's'} passed"
        if self.failures:
            line += "; failed: " + ", ".join(case.eval_id for case in self.failures)
        return line

    def cost_line(self) -> str:
        """The run's total: `total: 1,234 tokens in 5 model calls, $0.000321`."""
        cost = self.cost
        if not cost.calls:
            return "total: no model call reported usage"
        calls = f"{cost.calls} model call{'' if cost.calls == 1 else 's'}"
        return f"total: {cost.total_tokens:,} tokens in {calls}, {cost.label}"

    def render(self, *, width: int = 120) -> str:
        """The table, the skipped metrics, the failures explained and the summary, as text."""
        buffer = StringIO()
        console = Console(file=buffer, width=width, no_color=True, highlight=False)
        console.print(self.table())
        for line in self.notes():
            console.print(line, markup=False)
        console.print(self.cost_line(), markup=False)
        console.print(self.summary(), markup=False)
        return buffer.getvalue()

    def notes(self) -> list[str]:
        """Metrics not evaluated, then why each failing case failed."""
        lines = [f"not evaluated: {name}: {why}" for name, why in self.config.not_evaluated]
        for case in self.cases:
            if case.passed:  # a passing case's unjudged metric is still worth a line
                lines.extend(
                    f"{case.eval_id}: {m.metric} not evaluated: {m.error}"
                    for m in case.metrics
                    if m.error
                )
            else:
                lines.extend(case.explain())
        return lines

    def to_dict(self) -> dict[str, object]:
        """The whole report as JSON-ready data (what `rondo eval --json` writes)."""
        return {
            "eval_set_id": self.eval_set_id,
            "passed": self.passed,
            "summary": self.summary(),
            "usage": self.cost.to_dict(),
            "not_evaluated": [{"metric": m, "why": why} for m, why in self.config.not_evaluated],
            "cases": [_case_dict(case) for case in self.cases],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def assert_passed(self) -> None:
        """Raise `EvalFailedError` (an `AssertionError`) with the report unless all passed."""
        if not self.passed:
            raise EvalFailedError(f"eval failed: {self.summary()}\n{self.render()}")
