"""google-adk's four LLM-judged metrics, scored the way ADK scores them.

- `final_response_match_v2`: per invocation, `num_samples` verdicts "is the answer as good as
  the reference"; the majority decides (a tie is invalid; samples without a verdict do not
  vote); the case's score is the fraction of judged invocations that are valid.
- `rubric_based_final_response_quality_v1` / `rubric_based_tool_use_quality_v1`: per
  invocation, `num_samples` rubric verdicts; per rubric the majority decides (a tie is "no");
  the invocation's score is the mean of its rubrics, the case's the mean of every rubric of
  every invocation. Rubrics come from the criterion, and from the case and the invocation when
  their `type` is `FINAL_RESPONSE_QUALITY` / `TOOL_USE_QUALITY`.
- `hallucinations_v1`: per answer (and, with `evaluate_intermediate_nl_responses`, per text
  said on the way), the judge splits it into sentences, then labels each against the context
  (instructions, the user's message, tools, earlier steps); the score is the share of sentences
  supported or not applicable, averaged over the steps, then over invocations. One call each,
  no sampling (as in ADK).

A judge call that fails leaves its invocation not evaluated (score None); a metric with no
evaluated invocation is not evaluated and does not decide the case (ADK's NOT_EVALUATED).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from rondo.errors import ModelError, RondoError
from rondo.evaluation.config import (
    FINAL_RESPONSE_MATCH_V2,
    HALLUCINATIONS_V1,
    RUBRIC_FINAL_RESPONSE_QUALITY,
    RUBRIC_TOOL_USE_QUALITY,
    Criterion,
    JudgeOptions,
)
from rondo.evaluation.evalset import EvalCase, EvalSetError, Invocation, Rubric
from rondo.evaluation.judge import ask_judge, sample
from rondo.evaluation.labels import (
    normalize_property,
    read_rubric_verdicts,
    read_sentence_labels,
    read_sentences,
    read_validity,
)
from rondo.evaluation.metrics import ActualInvocation, Step
from rondo.evaluation.prompts import (
    FINAL_RESPONSE_MATCH,
    HALLUCINATION_SEGMENTER,
    HALLUCINATION_VALIDATOR,
    PROMPT_VERSION,
    RUBRIC_FINAL_RESPONSE,
    RUBRIC_TOOL_USE,
)
from rondo.models.base import Model

__all__ = ["AppDetails", "JudgedScores", "RubricScore", "judge_metric"]

_RUBRIC_TYPES = {
    RUBRIC_FINAL_RESPONSE_QUALITY: "FINAL_RESPONSE_QUALITY",
    RUBRIC_TOOL_USE_QUALITY: "TOOL_USE_QUALITY",
}


@dataclass(frozen=True, slots=True)
class RubricScore:
    """One rubric's verdict: 1.0 yes, 0.0 no, None when the judge gave none."""

    rubric_id: str
    score: float | None
    rationale: str | None = None


@dataclass(frozen=True, slots=True)
class AppDetails:
    """What the judges are told about the agent: instructions by agent, tool declarations."""

    instructions: dict[str, str] = field(default_factory=dict[str, str])
    tools: list[dict[str, object]] = field(default_factory=list[dict[str, object]])

    def tools_text(self) -> str:
        return json.dumps(self.tools, indent=2) if self.tools else "The agent has no tools."

    def instructions_text(self) -> str:
        return "\n\n".join(f"{name}:\n{text}" for name, text in self.instructions.items() if text)


@dataclass(frozen=True, slots=True)
class JudgedScores:
    """A judged metric on one case: per invocation and overall (None: not evaluated)."""

    per_invocation: tuple[float | None, ...]
    overall: float | None
    rubric_scores: tuple[tuple[RubricScore, ...] | None, ...] = ()
    overall_rubric_scores: tuple[RubricScore, ...] = ()


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return fmean(known) if known else None


def _answer_text(actual: ActualInvocation, with_steps: bool) -> str:
    if not with_steps:
        return actual.final_text
    texts = [_content_text(s) for s in actual.steps]
    return "\n".join(t for t in [*texts, actual.final_text] if t)


def _reference_text(expected: Invocation, with_steps: bool) -> str:
    if not with_steps:
        return expected.expected_text()
    return "\n".join(t for t in [*expected.intermediate_texts(), expected.expected_text()] if t)


def _content_text(step: Step) -> str:
    content = step.content
    return "\n".join(p.text for p in content.parts if p.text) if content else ""


async def _samples(
    judge: Model, prompt: str, options: JudgeOptions
) -> list[str | BaseException | None]:
    return await sample(
        [lambda: ask_judge(judge, prompt)] * options.num_samples, options.parallelism_limit
    )


# -- final_response_match_v2 ----------------------------------------------------------------


def _majority(scores: Sequence[float | None]) -> float | None:
    yes = sum(1 for s in scores if s == 1.0)
    no = sum(1 for s in scores if s == 0.0)
    if not yes and not no:
        return None
    return 1.0 if yes > no else 0.0


def _verdict(answer: str | None) -> float | None:
    valid = read_validity(answer) if answer is not None else None
    return None if valid is None else float(valid)


async def _final_response_match(
    criterion: Criterion,
    judge: Model,
    actual: Sequence[ActualInvocation],
    expected: Sequence[Invocation],
) -> JudgedScores:
    options = criterion.judge or JudgeOptions()
    per: list[float | None] = []
    with_steps = criterion.include_intermediate_responses_in_final
    for did, wanted in zip(actual, expected, strict=True):
        prompt = FINAL_RESPONSE_MATCH.format(
            version=PROMPT_VERSION,
            prompt=wanted.user_content.text(),
            response=_answer_text(did, with_steps),
            reference=_reference_text(wanted, with_steps),
        )
        samples = await _samples(judge, prompt, options)
        if any(isinstance(s, BaseException) for s in samples):
            per.append(None)
            continue
        per.append(_majority([_verdict(s) for s in samples if not isinstance(s, BaseException)]))
    return JudgedScores(tuple(per), _mean(per))


# -- the rubric-based metrics -----------------------------------------------------------------


def _rubrics(criterion: Criterion, case: EvalCase, wanted: Invocation | None) -> list[Rubric]:
    kind = _RUBRIC_TYPES[criterion.metric]
    found: dict[str, Rubric] = {}
    sources = (
        ("the criterion", list(criterion.rubrics)),
        ("the eval case", [r for r in case.rubrics or () if r.type == kind]),
        (
            "the invocation",
            [r for r in (wanted.rubrics if wanted else None) or () if r.type == kind],
        ),
    )
    for where, rubrics in sources:
        for rubric in rubrics:
            if rubric.rubric_id in found:
                raise EvalSetError(
                    f"{criterion.metric}: rubric {rubric.rubric_id!r} of {where} repeats an id"
                )
            found[rubric.rubric_id] = rubric
    if not found:
        raise EvalSetError(
            f"{criterion.metric} needs rubrics: give the criterion 'rubrics', or the case or "
            f"invocation rubrics of type {kind}"
        )
    return list(found.values())


def _steps_json(actual: ActualInvocation) -> str:
    calls: list[dict[str, Any]] = []
    results: dict[str | None, Any] = {}
    for step in actual.steps:
        for part in step.content.parts if step.content else ():
            if part.function_call is not None:
                call = part.function_call
                calls.append({"id": call.id, "name": call.name, "args": dict(call.args)})
            if part.function_response is not None:
                response = part.function_response
                results[response.id] = dict(response.response)
    if not calls:
        return "No tool was called."
    rows = [
        {"step": i, "call": {"name": c["name"], "args": c["args"]}, "result": results.get(c["id"])}
        for i, c in enumerate(calls)
    ]
    return json.dumps(rows, indent=2, ensure_ascii=False, default=str)


def _rubric_prompt(
    criterion: Criterion, rubrics: Sequence[Rubric], did: ActualInvocation, app: AppDetails
) -> str:
    listed = "\n".join(f"* [id: {r.rubric_id}] {r.text}" for r in rubrics)
    common: dict[str, str] = {
        "version": PROMPT_VERSION,
        "tools": app.tools_text(),
        "user_input": did.user_text,
        "steps": _steps_json(did),
        "rubrics": listed,
    }
    if criterion.metric == RUBRIC_TOOL_USE_QUALITY:
        return RUBRIC_TOOL_USE.format(**common)
    return RUBRIC_FINAL_RESPONSE.format(
        **common,
        instructions=app.instructions_text() or "(none)",
        final_response=_answer_text(did, criterion.include_intermediate_responses_in_final),
    )


def _rubric_sample(answer: str | None, rubrics: Sequence[Rubric]) -> list[RubricScore]:
    by_id = {r.rubric_id: r for r in rubrics}
    by_text = {normalize_property(r.text): r for r in rubrics}
    scores: list[RubricScore] = []
    for verdict in read_rubric_verdicts(answer or ""):
        rubric = by_id.get(verdict.rubric_id or "") or by_text.get(
            normalize_property(verdict.property_text)
        )
        if rubric is not None:  # a rubric the judge made up is not scored
            scores.append(RubricScore(rubric.rubric_id, verdict.score, verdict.rationale))
    return scores


def _rubric_majority(samples: Sequence[Sequence[RubricScore]]) -> tuple[RubricScore, ...]:
    votes: dict[str, list[RubricScore]] = {}
    for scores in samples:
        for score in scores:
            votes.setdefault(score.rubric_id, []).append(score)
    decided: list[RubricScore] = []
    for cast_votes in votes.values():
        yes = [v for v in cast_votes if v.score == 1.0]
        no = [v for v in cast_votes if v.score is not None and v.score != 1.0]
        if not yes and not no:
            decided.append(cast_votes[0])
        else:
            decided.append(yes[0] if len(yes) > len(no) else no[0])
    return tuple(decided)


_AGGREGATED = "the mean of this rubric's verdicts over the case's invocations"


def _rubric_overall(
    per: Sequence[tuple[RubricScore, ...] | None],
) -> tuple[float | None, tuple[RubricScore, ...]]:
    every = [s for scores in per if scores for s in scores]
    by_id: dict[str, list[RubricScore]] = {}
    for score in every:
        by_id.setdefault(score.rubric_id, []).append(score)
    overall = tuple(
        RubricScore(rid, _mean([s.score for s in scores]), _AGGREGATED)
        for rid, scores in by_id.items()
    )
    return _mean([s.score for s in every]), overall


async def _rubric_based(
    criterion: Criterion,
    judge: Model,
    actual: Sequence[ActualInvocation],
    expected: Sequence[Invocation | None],
    case: EvalCase,
    app: AppDetails,
) -> JudgedScores:
    options = criterion.judge or JudgeOptions()
    per: list[tuple[RubricScore, ...] | None] = []
    for did, wanted in zip(actual, expected, strict=True):
        rubrics = _rubrics(criterion, case, wanted)
        prompt = _rubric_prompt(criterion, rubrics, did, app)
        samples = await _samples(judge, prompt, options)
        if any(isinstance(s, BaseException) for s in samples):
            per.append(None)
            continue
        answers = [s for s in samples if not isinstance(s, BaseException)]
        per.append(_rubric_majority([_rubric_sample(a, rubrics) for a in answers]))
    overall, overall_rubrics = _rubric_overall(per)
    scores = tuple(_mean([s.score for s in r]) if r is not None else None for r in per)
    return JudgedScores(scores, overall, tuple(per), overall_rubrics)


# -- hallucinations_v1 ----------------------------------------------------------------------


def _step_block(step: Step) -> list[str]:
    content = step.content
    if content is None or not content.parts:
        return []
    lines: list[str] = []
    texts = [p.text for p in content.parts if p.text]
    calls = [
        {"name": p.function_call.name, "args": dict(p.function_call.args)}
        for p in content.parts
        if p.function_call is not None
    ]
    results = [
        {"name": p.function_response.name, "response": dict(p.function_response.response)}
        for p in content.parts
        if p.function_response is not None
    ]
    if texts:
        lines.append("The agent said:\n" + "\n".join(texts) + "\n")
    if calls:
        lines.append("Tool calls:\n" + json.dumps(calls, indent=2, default=str) + "\n")
    if results:
        lines.append("Tool results:\n" + json.dumps(results, indent=2, default=str) + "\n")
    return lines


def _context(app: AppDetails, did: ActualInvocation, before: Sequence[Step]) -> str:
    parts = [
        f"Developer instructions:\n{app.instructions_text() or '(none)'}\n",
        f"User's message:\n{did.user_text}\n",
        f"Tool definitions:\n{app.tools_text()}\n",
    ]
    for step in before:
        parts.extend(_step_block(step))
    return "\n".join(parts)


def _texts_to_check(
    criterion: Criterion, did: ActualInvocation, app: AppDetails
) -> list[tuple[str, str]]:
    checks: list[tuple[str, str]] = []
    if criterion.evaluate_intermediate_nl_responses:
        for index, step in enumerate(did.steps):
            content = step.content
            texts = [p.text for p in content.parts if p.text] if content else []
            if texts:
                context = _context(app, did, did.steps[:index])
                checks.extend((text, context) for text in texts)
    if did.final_text:
        checks.append((did.final_text, _context(app, did, did.steps)))
    return checks


async def _accuracy(judge: Model, text: str, context: str) -> float | None:
    try:
        segmented = await ask_judge(
            judge, HALLUCINATION_SEGMENTER.format(version=PROMPT_VERSION, response=text)
        )
        sentences = read_sentences(segmented) if segmented is not None else []
        if not sentences:
            return None
        listed = "\n".join(f"<sentence>{s}</sentence>" for s in sentences)
        labelled = await ask_judge(
            judge,
            HALLUCINATION_VALIDATOR.format(
                version=PROMPT_VERSION, context=context, sentences=listed
            ),
        )
    except ModelError:  # a failed judge call leaves this text unscored, as in ADK
        return None
    if labelled is None:
        return None
    return _mean([label.score for label in read_sentence_labels(labelled)])


async def _hallucinations(
    criterion: Criterion, judge: Model, actual: Sequence[ActualInvocation], app: AppDetails
) -> JudgedScores:
    per: list[float | None] = []
    for did in actual:
        scores = [
            await _accuracy(judge, text, context)
            for text, context in _texts_to_check(criterion, did, app)
        ]
        per.append(_mean(scores))
    return JudgedScores(tuple(per), _mean(per))


async def judge_metric(
    criterion: Criterion,
    judge: Callable[[str], Model],
    actual: Sequence[ActualInvocation],
    case: EvalCase,
    app: AppDetails,
) -> JudgedScores:
    """Score one LLM-judged metric on one case; `judge` turns the judge's name into a model."""
    options = criterion.judge or JudgeOptions()
    model = judge(options.judge_model)
    if criterion.metric == FINAL_RESPONSE_MATCH_V2:
        if case.conversation is None:
            raise EvalSetError(
                f"{criterion.metric} needs an expected conversation; a simulated one has none"
            )
        return await _final_response_match(criterion, model, actual, case.conversation)
    expected: list[Invocation | None] = (
        list(case.conversation) if case.conversation is not None else [None] * len(actual)
    )
    if criterion.metric in _RUBRIC_TYPES:
        return await _rubric_based(criterion, model, actual, expected, case, app)
    if criterion.metric == HALLUCINATIONS_V1:
        return await _hallucinations(criterion, model, actual, app)
    raise RondoError(f"{criterion.metric!r} is not an LLM-judged metric")
