"""Running an eval set against an agent, the way `adk eval` gathers its inferences.

Every case gets a fresh session (its `session_input` gives the app, the user, an optional
fixed id and the initial state); its invocations run in order on that session. Of each
invocation's records, every function call of the agent (sub-agents included) is its tool
trajectory, and the last final response — one with text preferred over one without — is its
answer. An exception inside a case fails that case and the run goes on.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import replace
from statistics import fmean
from typing import TYPE_CHECKING

from rondo.errors import ModelError, ModelNotFoundError, RondoError
from rondo.evaluation.config import RESPONSE_MATCH, Criterion, EvalConfig, SimulatorOptions
from rondo.evaluation.cost import is_local, metered, record_usage
from rondo.evaluation.evalset import EvalCase, EvalSet, EvalSetError, Scenario
from rondo.evaluation.judge import JudgeResolver, resolve_judge_model
from rondo.evaluation.judged import AppDetails, judge_metric
from rondo.evaluation.metrics import ActualInvocation, Call, Step, score_invocations
from rondo.evaluation.report import CaseResult, EvalReport, InvocationResult, MetricResult
from rondo.evaluation.rouge import require_rouge
from rondo.evaluation.simulation import next_user_message
from rondo.models.base import FunctionDeclaration, Model

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent
    from rondo.events import Event
    from rondo.runner import Runner
    from rondo.sessions.base import BaseSessionService
    from rondo.types import Content

__all__ = ["Progress", "app_details", "run_case", "run_eval"]

# ADK's user id when a case names none.
DEFAULT_USER_ID = "test_user_id"

Progress = Callable[[CaseResult, int, int], None]
"""Called after each case with its result, the number of cases done and the total."""


def _text(content: Content | None) -> str:
    # ADK's text of a response: every text part, thoughts included, joined by newlines.
    if content is None:
        return ""
    return "\n".join(part.text for part in content.parts if part.text)


def _observe(events: list[Event], user_text: str = "") -> ActualInvocation:
    calls: list[Call] = []
    final: Event | None = None
    kept: list[Event] = []
    for event in events:
        content = event.content
        if event.author == "user" or event.partial or content is None or not content.parts:
            continue
        calls.extend(Call(c.name, dict(c.args)) for c in event.get_function_calls())
        if event.is_final_response() and (
            final is None or not _text(final.content) or _text(content)
        ):
            final = event
        kept.append(event)
    # The answer's text is the invocation's final text; as a step it counts only for its calls.
    steps = tuple(
        Step(e.author, None if e is final and not e.get_function_calls() else e.content)
        for e in kept
    )
    usages = [e.usage for e in events if e.usage is not None and not e.partial]
    return ActualInvocation(
        tuple(calls),
        _text(final.content if final else None),
        user_text,
        steps,
        model_calls=len(usages),
        input_tokens=sum(u.input_tokens for u in usages) if usages else None,
        output_tokens=sum(u.output_tokens for u in usages) if usages else None,
    )


async def _invoke(
    runner: Runner,
    user_id: str,
    session_id: str,
    message: Content,
    text: str,
    local_authors: frozenset[str],
) -> ActualInvocation:
    events: list[Event] = []
    created, started = time.time(), time.perf_counter()
    stream = runner.run_async(user_id=user_id, session_id=session_id, new_message=message)
    async with aclosing(stream) as records:
        async for event in records:
            events.append(event)
            if event.usage is not None and not event.partial:  # priced where it was made
                record_usage(event.usage, local=event.author in local_authors)
    seconds = round(time.perf_counter() - started, 3)
    return replace(_observe(events, text), seconds=seconds, created=created)


def _local_authors(agent: BaseAgent) -> frozenset[str]:
    """The agents of the tree whose model runs on this machine (their calls are free)."""
    found: set[str] = set()

    def visit(node: BaseAgent) -> None:
        try:
            model = getattr(node, "canonical_model", None)  # a property on LLM agents
        except RondoError:  # an agent without a model makes no calls
            model = None
        if model is not None and is_local(model):
            found.add(node.name)
        for child in node.sub_agents:
            visit(child)

    visit(agent)
    return frozenset(found)


async def _simulate(
    invoke: Callable[[Content, str], Awaitable[ActualInvocation]],
    scenario: Scenario,
    simulator: JudgeResolver,
    options: SimulatorOptions,
) -> list[ActualInvocation]:
    from rondo.types import Content

    turns: list[ActualInvocation] = []
    model: Model | None = None
    while True:
        if turns and model is None:
            model = simulator(options.model)  # built only once a second message is needed
        message = await next_user_message(model, scenario, turns, options)
        if message is None:
            return turns
        turns.append(await invoke(Content.user(message), message))


async def _run_conversation(
    agent: BaseAgent,
    case: EvalCase,
    service: BaseSessionService,
    simulator: JudgeResolver,
    options: SimulatorOptions,
) -> list[ActualInvocation]:
    from rondo.runner import Runner

    given = case.session_input
    app_name = given.app_name if given and given.app_name else agent.name
    user_id = given.user_id if given and given.user_id else DEFAULT_USER_ID
    session_id = given.session_id if given and given.session_id else f"eval-{uuid.uuid4().hex}"
    await service.create_session(
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        state=given.state if given else None,
    )
    runner = Runner(agent=agent, app_name=app_name, session_service=service)
    local = _local_authors(agent)

    async def invoke(message: Content, text: str) -> ActualInvocation:
        return await _invoke(runner, user_id, session_id, message, text, local)

    scenario = case.scenario()
    if scenario is not None:
        return await _simulate(invoke, scenario, simulator, options)
    return [
        await invoke(inv.user_content.to_content("user"), inv.user_content.text())
        for inv in case.conversation or ()
    ]


def app_details(agent: BaseAgent) -> AppDetails:
    """What the judges are told about the agent tree: string instructions, tool declarations."""
    instructions: dict[str, str] = {}
    tools: list[dict[str, object]] = []

    def visit(node: BaseAgent) -> None:
        instruction = getattr(node, "instruction", "")
        if isinstance(instruction, str) and instruction:
            instructions[node.name] = instruction
        for tool in getattr(node, "tools", ()):
            declare = getattr(tool, "declaration", None)
            declaration = declare() if callable(declare) else None
            if isinstance(declaration, FunctionDeclaration):
                tools.append(declaration.model_dump(mode="json", exclude_none=True))
        for child in node.sub_agents:
            visit(child)

    visit(agent)
    return AppDetails(instructions, tools)


async def _judged(
    criterion: Criterion,
    case: EvalCase,
    actual: list[ActualInvocation],
    judge: JudgeResolver,
    app: AppDetails,
) -> MetricResult:
    try:
        scores = await judge_metric(criterion, judge, actual, case, app)
    except (EvalSetError, ModelError, ModelNotFoundError) as exc:  # as in ADK: a metric
        # that cannot be judged (no rubrics, no judge model) is not evaluated; anything else
        # fails the case.
        n = len(actual)
        error = f"{type(exc).__name__}: {exc}"
        return MetricResult(criterion.metric, criterion.threshold, None, (None,) * n, error)
    return MetricResult(
        criterion.metric,
        criterion.threshold,
        scores.overall,
        scores.per_invocation,
        rubric_scores=scores.rubric_scores,
        overall_rubric_scores=scores.overall_rubric_scores,
    )


async def _score_case(
    case: EvalCase,
    actual: list[ActualInvocation],
    config: EvalConfig,
    judge: JudgeResolver,
    app: AppDetails,
) -> CaseResult:
    expected = [(inv.expected_calls(), inv.expected_text()) for inv in case.conversation or ()]
    metrics: list[MetricResult] = []
    for criterion in config.criteria:
        if criterion.judge is not None:
            metrics.append(await _judged(criterion, case, actual, judge, app))
        elif case.conversation is None:  # a simulated conversation has nothing to match
            error = "needs an expected conversation; a simulated one has none"
            none = (None,) * len(actual)
            metrics.append(MetricResult(criterion.metric, criterion.threshold, None, none, error))
        else:
            scores = score_invocations(criterion, actual, expected)
            metrics.append(
                MetricResult(criterion.metric, criterion.threshold, fmean(scores), tuple(scores))
            )
    if case.conversation is None:
        expected = [((), "")] * len(actual)
    invocations = tuple(
        InvocationResult(did.user_text, tuple(calls), text, did)
        for (calls, text), did in zip(expected, actual, strict=True)
    )
    return CaseResult(case.eval_id, tuple(metrics), invocations)


async def run_case(
    agent: BaseAgent,
    case: EvalCase,
    config: EvalConfig,
    service: BaseSessionService,
    *,
    judge: JudgeResolver = resolve_judge_model,
) -> CaseResult:
    """Run one case on a fresh session of `service` and score it; its cost counts every
    model call of the case (agent, judges, user simulator)."""
    with metered() as meter:
        try:
            actual = await _run_conversation(agent, case, service, judge, config.user_simulator)
            result = await _score_case(case, actual, config, judge, app_details(agent))
        except Exception as exc:  # a failing case is a result, not the end of the run
            result = CaseResult(case.eval_id, error=f"{type(exc).__name__}: {exc}")
    return replace(result, cost=meter.cost)


def _cached(judge: JudgeResolver) -> JudgeResolver:
    # One model per judge name for the whole run (a provider client is built once).
    models: dict[str, Model] = {}

    def resolve(name: str) -> Model:
        if name not in models:
            models[name] = judge(name)
        return models[name]

    return resolve


async def run_eval(
    agent: BaseAgent,
    eval_set: EvalSet,
    config: EvalConfig | None = None,
    *,
    progress: Progress | None = None,
    judge: JudgeResolver | Model | None = None,
) -> EvalReport:
    """Run every case of `eval_set` against `agent`, one after another, and score them.

    `judge` answers the LLM-judged metrics: a model (for every judge name), or a function from
    the criterion's `judge_model` name to a model; by default the name resolves as
    `resolve_judge_model` does.
    """
    from rondo.sessions.memory import InMemorySessionService

    config = config or EvalConfig.default()
    if any(c.metric == RESPONSE_MATCH for c in config.criteria):
        require_rouge()  # before the first case runs, not after
    resolver = _cached(_resolver(judge))
    service = InMemorySessionService()
    results: list[CaseResult] = []
    total = len(eval_set.eval_cases)
    try:
        for case in eval_set.eval_cases:
            results.append(await run_case(agent, case, config, service, judge=resolver))
            if progress is not None:
                progress(results[-1], len(results), total)
    finally:
        await service.close()
    return EvalReport(eval_set.eval_set_id, tuple(results), config)


def _resolver(judge: JudgeResolver | Model | None) -> JudgeResolver:
    if judge is None:
        return resolve_judge_model
    if isinstance(judge, Model):
        model = judge
        return lambda _name: model
    return judge
