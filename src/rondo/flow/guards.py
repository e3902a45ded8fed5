"""Guardrails and budgets inside the loop (SPEC G6): the checks behind the loop's hook points.

Nothing here runs unless it is configured: the loop reads `agent.*_guardrails` (empty tuples
by default) and `ctx.guard` (None without a budget) — attribute reads, no calls — before it
calls in. A stop (a tripped input/output guardrail, a used-up budget) is one stored record
that says why (`error_code`, `error_message`, `custom_metadata`), then, when observed, a
lifecycle event, then the error raised; the runner ends the run cleanly on it (`RunEnd`,
`RunResult.error`). A stop never leaves a call without a response: a budget that stops a
step's calls answers each of them with an error naming the budget before the run ends.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rondo._frozen import ReadOnlyDict
from rondo.context import ReadonlyContext
from rondo.errors import BudgetExceeded, GuardrailTripped
from rondo.events import Event, EventFields
from rondo.guardrails import Guardrail, GuardrailFunctionOutput
from rondo.lifecycle import BudgetExhausted, GuardrailTriggered, Item
from rondo.types import Content, FunctionResponse, Part

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

    from rondo.context import InvocationContext, ToolContext
    from rondo.flow.views import LlmAgentView
    from rondo.run_config import Budget, RunConfig
    from rondo.tools.base import BaseTool
    from rondo.types import FunctionCall

__all__ = [
    "BUDGET_EXCEEDED",
    "GUARDRAIL_TRIPPED",
    "RunGuard",
    "check_input",
    "check_output",
    "check_tool_input",
    "check_tool_output",
    "stop_items",
]

# `Event.error_code` of the record a stop leaves.
GUARDRAIL_TRIPPED = "GUARDRAIL_TRIPPED"
BUDGET_EXCEEDED = "BUDGET_EXCEEDED"


def _jsonable(value: Any) -> Any:
    """What a guardrail found, as JSON the stores accept (str() for anything else)."""
    try:
        return json.loads(json.dumps(value, default=str, allow_nan=False))
    except ValueError:
        return str(value)


# -- guardrails ----------------------------------------------------------------------------
# The loop calls the first guardrail of a kind itself and reads its verdict in line (one sync
# guardrail answering a passing `GuardrailFunctionOutput` is the common case): a configured
# guardrail costs its own call and nothing more (issue 24 item 7). The checks below are the
# rest — awaiting that first answer, running the others, and building the stop — and run only
# when there are several guardrails, an async one, or a trip:
#
#     verdict = guardrails[0].guardrail_function(*args)
#     if (guardrails[1:] or type(verdict) is not GuardrailFunctionOutput
#             or verdict.tripwire_triggered):
#         ... await check_*(..., verdict)


async def _settle(
    guardrails: Sequence[Guardrail], verdict: object, args: tuple[object, ...]
) -> tuple[Guardrail, GuardrailFunctionOutput] | None:
    """The first guardrail's answer `verdict` read (awaited, or a bool) and the others run at
    once; the first tripped guardrail in list order, if any."""
    first, *rest = guardrails
    verdicts = await asyncio.gather(first.read(verdict), *(g.run(*args) for g in rest))
    for guardrail, answer in zip(guardrails, verdicts, strict=True):
        if answer.tripwire_triggered:
            return guardrail, answer
    return None


def _tripped(guardrail: Guardrail, verdict: GuardrailFunctionOutput, what: str) -> GuardrailTripped:
    name = guardrail.label
    detail = f": {verdict.message}" if verdict.message else ""
    return GuardrailTripped(
        f"{guardrail.stage.replace('_', ' ')} guardrail {name!r} tripped on {what}{detail}",
        guardrail=name,
        stage=guardrail.stage,
        output_info=_jsonable(verdict.output_info),
        replacement=verdict.message,
    )


async def check_input(
    agent: LlmAgentView, readonly: ReadonlyContext, message: Content, verdict: object
) -> GuardrailTripped | None:
    """The agent's input guardrails on the turn's `message`, before any model call, given
    what the first one answered (`verdict`)."""
    trip = await _settle(agent.input_guardrails, verdict, (readonly, agent, message))
    return None if trip is None else _tripped(trip[0], trip[1], "the user's message")


async def check_output(
    agent: LlmAgentView, readonly: ReadonlyContext, event: Event, verdict: object
) -> tuple[Event, GuardrailTripped] | None:
    """The agent's output guardrails on a final answer (with content), given what the first
    one answered: None when it passes, else the record that replaces it (the guardrail's
    message, or no content: withheld) and the error."""
    args = (readonly, agent, event.content)
    trip = await _settle(agent.output_guardrails, verdict, args)
    if trip is None:
        return None
    exc = _tripped(trip[0], trip[1], f"the answer of agent {agent.name!r}")
    replacement = exc.replacement
    record = event.model_copy(
        update={
            "content": Content.model(replacement) if replacement else None,
            **_record_fields(exc),
        }
    )
    return record, exc


async def check_tool_input(
    agent: LlmAgentView,
    tctx: ToolContext,
    tool: BaseTool,
    args: dict[str, object],
    verdict: object,
) -> dict[str, object] | None:
    """The agent's tool input guardrails on a call's arguments, given what the first one
    answered: None to run the tool, else the error response that answers the call instead."""
    trip = await _settle(agent.tool_input_guardrails, verdict, (tctx, tool, args))
    if trip is None:
        return None
    return _tool_blocked(tctx, tool, _tripped(trip[0], trip[1], f"a call to {tool.name!r}"))


async def check_tool_output(
    agent: LlmAgentView,
    tctx: ToolContext,
    tool: BaseTool,
    args: dict[str, object],
    result: dict[str, object],
    verdict: object,
) -> dict[str, object] | None:
    """The agent's tool output guardrails on a call's result, given what the first one
    answered: None to pass it on, else the error response the model sees instead."""
    trip = await _settle(agent.tool_output_guardrails, verdict, (tctx, tool, args, result))
    if trip is None:
        return None
    return _tool_blocked(tctx, tool, _tripped(trip[0], trip[1], f"the result of {tool.name!r}"))


def _tool_blocked(tctx: ToolContext, tool: BaseTool, exc: GuardrailTripped) -> dict[str, object]:
    ctx = tctx.invocation_context
    if ctx.trace is not None:
        ctx.trace.note("rondo.guardrail.tripped", _trace_attributes(exc))
    sink = ctx.sink
    if ctx.observe and sink is not None:
        sink.emit(
            GuardrailTriggered(
                **ctx.correlation(),
                guardrail=exc.guardrail,
                stage=exc.stage,  # pyright: ignore[reportArgumentType]
                message=str(exc),
                output_info=exc.output_info,
                call_id=tctx.function_call_id,
                tool_name=tool.name,
            )
        )
    return {"error": str(exc)}


# -- budgets ---------------------------------------------------------------------------------
# Counted and mostly checked in line by the loop (issue 24.7 measures the calls a configured
# budget adds to the tool loop's); `RunGuard` holds the numbers and the full checks.


class _Spent:
    """What a session's stored records used: model calls, tool calls, tokens, dollars."""

    __slots__ = ("cost", "model_calls", "reported", "tokens", "tool_calls")

    def __init__(self, events: Sequence[Event]) -> None:
        """Every stored record with usage is a model call; tool calls are the function
        responses agents recorded."""
        self.model_calls = self.tool_calls = self.tokens = 0
        cost: float | None = 0.0
        for event in events:
            if event.partial or event.author == "user":
                continue
            usage = event.usage
            if usage is not None:
                self.model_calls += 1
                self.tokens += usage.input_tokens + usage.output_tokens
                cost = None if cost is None or usage.cost_usd is None else cost + usage.cost_usd
            content = event.content
            if content is not None and content.role == "user":
                self.tool_calls += sum(1 for p in content.parts if p.function_response is not None)
        self.cost = cost
        self.reported = self.model_calls


def _exceeded(budget: str, limit: float, used: float | None, scope: str) -> BudgetExceeded:
    shown = "unknown" if used is None else f"{used:g}"
    field = "budget" if scope == "run" else "session_budget"
    return BudgetExceeded(
        f"the {scope}'s {budget} budget is used up ({shown} used of {limit:g}); raise "
        f"RunConfig.{field}.{budget} to allow more",
        budget=budget,
        limit=limit,
        used=used,
        scope=scope,
    )


def _over(
    budget: Budget, calls: int, tokens: int, cost: float | None, scope: str
) -> BudgetExceeded | None:
    """The first of `budget`'s model-side limits that what was used reached."""
    if budget.model_calls is not None and calls >= budget.model_calls:
        return _exceeded("model_calls", budget.model_calls, calls, scope)
    if budget.total_tokens is not None and tokens >= budget.total_tokens:
        return _exceeded("total_tokens", budget.total_tokens, tokens, scope)
    if budget.cost_usd is not None and (cost is None or cost >= budget.cost_usd):
        return _exceeded("cost_usd", budget.cost_usd, cost, scope)
    return None


class RunGuard:
    """One invocation's budgets (`ctx.guard`): what the run used, checked at the boundaries.
    The runner makes one only when `RunConfig` sets a budget.

    The loop does the counting and the common check in line, on the numbers kept here
    (issue 24 item 7: a configured budget costs the tool loop a few calls, not one per
    check): the model boundary adds each call and its usage (`model_calls`, `reported`,
    `tokens`, `cost`); before a model call the loop compares `model_calls`, `tokens` and the
    step's clock reading with `call_limit`, `token_limit` and `deadline` (inf: not set) and
    calls `before_model` — the full check, which names the budget — only when one of them is
    reached or when a limit needs more than a comparison (`exact`: a cost or a session
    budget). Times are `time.perf_counter()` readings, the clock the step already reads."""

    __slots__ = (
        "budget",
        "call_limit",
        "cost",
        "deadline",
        "exact",
        "last_call",
        "model_calls",
        "prior",
        "reported",
        "session_budget",
        "started",
        "streak",
        "token_limit",
        "tokens",
        "tool_calls",
    )

    def __init__(self, config: RunConfig, events: Sequence[Event]) -> None:
        self.budget = budget = config.budget
        self.session_budget = session = config.session_budget
        self.started = started = time.perf_counter()
        inf = math.inf
        self.call_limit: float = inf
        self.token_limit: float = inf
        self.deadline: float = inf
        self.exact = session is not None
        if budget is not None:
            if budget.model_calls is not None:
                self.call_limit = budget.model_calls
            if budget.total_tokens is not None:
                self.token_limit = budget.total_tokens
            if budget.wall_time is not None:
                self.deadline = started + budget.wall_time
            self.exact = self.exact or budget.cost_usd is not None
        # Real model calls (counted at the model boundary), tool calls started, tokens, and
        # the calls whose usage arrived; sub-runs (agents answering as tools) add theirs.
        self.model_calls = self.tool_calls = self.tokens = self.reported = self.streak = 0
        self.cost: float | None = 0.0
        self.last_call: FunctionCall | None = None
        # What the session's stored records used before this run (G6 per session).
        self.prior = _Spent(events) if session is not None else None

    def before_model(self) -> BudgetExceeded | None:
        """The reason not to make another model call, if a budget says so (the full check;
        the loop calls it when its in-line comparison says a limit may be reached)."""
        calls = self.model_calls
        # A call that reported no usage has no price either: the spend is unknown.
        cost = self.cost if self.reported >= calls else None
        budget = self.budget
        if budget is not None:
            stop = _over(budget, calls, self.tokens, cost, "run")
            if stop is not None:
                return stop
            if budget.wall_time is not None:
                elapsed = time.perf_counter() - self.started
                if elapsed >= budget.wall_time:
                    return _exceeded("wall_time", budget.wall_time, round(elapsed, 3), "run")
        session, prior = self.session_budget, self.prior
        if session is not None and prior is not None:
            if cost is not None and prior.cost is not None:
                cost += prior.cost
            else:
                cost = None
            return _over(
                session, calls + prior.model_calls, self.tokens + prior.tokens, cost, "session"
            )
        return None

    def admit(
        self, calls: Sequence[FunctionCall]
    ) -> tuple[dict[str, object], BudgetExceeded | None]:
        """Which of a step's calls may run: the responses of those that may not (by call id),
        and the budget that stops the run after this step (None: all may run). Once one call
        is refused, the calls after it in the step are refused too: the run ends here."""
        refused: dict[str, object] = {}
        budget, session = self.budget, self.session_budget
        stop: BudgetExceeded | None = None
        if budget is not None and budget.wall_time is not None:
            elapsed = time.perf_counter() - self.started
            if elapsed >= budget.wall_time:
                stop = _exceeded("wall_time", budget.wall_time, round(elapsed, 3), "run")
        for call in calls:
            if stop is None and budget is not None and budget.repeated_calls is not None:
                # Solon's StopLoop: the same tool with the same arguments, again and again
                # (arguments compare as JSON values; the frozen map is kept, not copied).
                last = self.last_call
                same = last is not None and last.name == call.name and last.args == call.args
                self.streak = self.streak + 1 if same else 1
                self.last_call = call
                if self.streak > budget.repeated_calls:
                    stop = _exceeded("repeated_calls", budget.repeated_calls, self.streak, "run")
            limit = budget.tool_calls if budget is not None else None
            if stop is None and limit is not None and self.tool_calls >= limit:
                stop = _exceeded("tool_calls", limit, self.tool_calls + 1, "run")
            if stop is None and session is not None and session.tool_calls is not None:
                used = self.tool_calls + (self.prior.tool_calls if self.prior else 0)
                if used >= session.tool_calls:
                    stop = _exceeded("tool_calls", session.tool_calls, used + 1, "session")
            if stop is None:
                self.tool_calls += 1
            else:
                refused[call.id or ""] = {"error": f"not run: {stop}"}
        return refused, stop


# -- stopping ----------------------------------------------------------------------------------


def _mark(ctx: InvocationContext, exc: GuardrailTripped | BudgetExceeded) -> None:
    exc.agent_name = ctx.agent.name
    exc.branch = ctx.branch
    exc.recorded = True  # the runner stores no second record for it


def _record_fields(exc: GuardrailTripped | BudgetExceeded) -> EventFields:
    if isinstance(exc, GuardrailTripped):
        code = GUARDRAIL_TRIPPED
        meta = {
            "guardrail": exc.guardrail,
            "stage": exc.stage,
            "output_info": exc.output_info,
        }
        key = "rondo:guardrail"
    else:
        code = BUDGET_EXCEEDED
        meta = {"budget": exc.budget, "scope": exc.scope, "limit": exc.limit, "used": exc.used}
        key = "rondo:budget"
    # Frozen like every record's maps (G1): the output guardrail's record is a model_copy.
    metadata = ReadOnlyDict({key: ReadOnlyDict(meta)})
    return EventFields(error_code=code, error_message=str(exc), custom_metadata=metadata)


def stop_record(
    ctx: InvocationContext, exc: GuardrailTripped | BudgetExceeded, author: str | None = None
) -> Event:
    """The record that says why the run stopped (an input guardrail's reply as its text)."""
    replacement = exc.replacement if isinstance(exc, GuardrailTripped) else None
    fields = _record_fields(exc)
    if replacement:
        fields["content"] = Content.model(replacement)
    return ctx.new_event(author or None, **fields)


def _trace_attributes(exc: GuardrailTripped | BudgetExceeded) -> dict[str, AttributeValue]:
    if isinstance(exc, GuardrailTripped):
        return {"rondo.guardrail.name": exc.guardrail, "rondo.guardrail.stage": exc.stage}
    attributes: dict[str, AttributeValue] = {
        "rondo.budget.name": exc.budget,
        "rondo.budget.scope": exc.scope,
    }
    if exc.limit is not None:
        attributes["rondo.budget.limit"] = exc.limit
    if exc.used is not None:
        attributes["rondo.budget.used"] = exc.used
    return attributes


def stop_items(
    ctx: InvocationContext, exc: GuardrailTripped | BudgetExceeded, record: Event | None = None
) -> list[Item]:
    """What a stop yields before its error is raised: the record that says why (a new one
    unless `record`, an answer already replaced, is it), then the lifecycle event."""
    items: list[Item] = []
    if record is None:
        items.append(stop_record(ctx, exc))
    _mark(ctx, exc)
    if ctx.trace is not None:
        name = (
            "rondo.guardrail.tripped"
            if isinstance(exc, GuardrailTripped)
            else ("rondo.budget.exceeded")
        )
        ctx.trace.note(name, _trace_attributes(exc))
    if ctx.observe:
        if isinstance(exc, GuardrailTripped):
            items.append(
                GuardrailTriggered(
                    **ctx.correlation(),
                    guardrail=exc.guardrail,
                    stage=exc.stage,  # pyright: ignore[reportArgumentType]
                    message=str(exc),
                    output_info=exc.output_info,
                )
            )
        else:
            items.append(
                BudgetExhausted(
                    **ctx.correlation(),
                    budget=exc.budget,
                    scope=exc.scope,  # pyright: ignore[reportArgumentType]
                    limit=exc.limit,
                    used=exc.used,
                    message=str(exc),
                )
            )
    return items


def answer_unanswered(
    events: Sequence[Event],
    invocation_id: str,
    pending: set[str],
    exc: GuardrailTripped | BudgetExceeded,
) -> list[Event]:
    """The records that answer this invocation's calls left without a response when a stop
    cut them short (a parallel branch's call in flight), one per agent and branch; calls that
    wait for a decision or an external result (`pending`) keep waiting."""
    answered: set[str] = set()
    open_calls: dict[str, tuple[Event, FunctionCall]] = {}
    for event in events:
        if event.invocation_id != invocation_id:
            continue
        content = event.content
        if content is None:
            continue
        for part in content.parts:
            call, response = part.function_call, part.function_response
            if response is not None and response.id:
                answered.add(response.id)
            elif call is not None and call.id and call.id not in event.long_running_tool_ids:
                open_calls.setdefault(call.id, (event, call))
    groups: dict[tuple[str, str, str], list[Part]] = {}
    for call_id, (event, call) in open_calls.items():
        if call_id in answered or call_id in pending:
            continue
        message = f"interrupted: the run ended before this call returned ({exc})"
        part = Part(
            function_response=FunctionResponse(
                name=call.name, response={"error": message}, id=call_id
            )
        )
        groups.setdefault((event.author, event.branch, event.isolation_scope), []).append(part)
    return [
        Event(
            author=author,
            invocation_id=invocation_id,
            run_id=next((e.run_id for e in events if e.invocation_id == invocation_id), ""),
            branch=branch,
            isolation_scope=scope,
            content=Content(role="user", parts=parts),
        )
        for (author, branch, scope), parts in groups.items()
    ]
