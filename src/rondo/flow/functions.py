"""Tool dispatch: run a response's function calls and merge their results (SPEC T2–T6).

Calls run concurrently and are merged in call order. A tool that raises, an unknown tool or
bad arguments become `{"error": ...}` responses the model can react to (T3).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from rondo._callbacks import first_result
from rondo._fan_in import Ended, fan_in
from rondo.context import Actions, EventSink, NestedPause, ToolContext
from rondo.errors import BudgetExceeded, ToolNotFoundError
from rondo.events import NESTED_PAUSE, Event, EventActions, ToolConfirmation
from rondo.flow.guards import check_tool_input, check_tool_output, stop_items
from rondo.guardrails import GuardrailFunctionOutput
from rondo.lifecycle import ActionEnd, ActionStart, Item, ToolCallEnd, ToolCallStart
from rondo.plugins import plugins_of
from rondo.tools.base import BaseTool
from rondo.tools.function import to_response
from rondo.types import Content, FunctionCall, FunctionResponse, Part

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.views import LlmAgentView
    from rondo.telemetry import ToolTrace

__all__ = [
    "INTERRUPTED_HOLD_ERROR",
    "CallOutcome",
    "handle_function_calls",
    "merge_actions",
    "nested_pause_event",
]

# D1: the response of a non-idempotent call held on resume, until a human decides.
INTERRUPTED_HOLD_ERROR = (
    "the call was interrupted before it returned and is not idempotent: it waits for a "
    "decision (approve to run it again, respond with its result, or reject)"
)


class CallOutcome:
    """What one call produced: its response (None = no response yet), actions and error."""

    __slots__ = (
        "actions",
        "call",
        "duration_ms",
        "error",
        "nested",
        "paused",
        "response",
        "trace",
    )

    def __init__(
        self,
        call: FunctionCall,
        response: dict[str, object] | None,
        actions: Actions,
        error: str | None,
        duration_ms: float,
        *,
        paused: bool = False,
    ) -> None:
        self.call = call
        self.response = response
        self.actions = actions
        self.error = error
        self.duration_ms = duration_ms
        # Waits for a confirmation: it has not started (no ToolCallStart/End, seed 002 §6.B).
        self.paused = paused
        # Its `execute_tool` span (SPEC O1), ended once the response record exists.
        self.trace: ToolTrace | None = None
        # H4: the nested run it waits on (then it has no response yet).
        self.nested: NestedPause | None = None


def _copy_json(value: Any) -> Any:
    """A deep copy of JSON-like data (faster than copy.deepcopy for dicts/lists of scalars)."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_copy_json(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _error_text(exc: BaseException) -> str:
    message = str(exc)
    if isinstance(exc, ToolNotFoundError) or type(exc).__module__.startswith("rondo"):
        return message
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


async def _run_hooked(
    agent: LlmAgentView,
    ctx: InvocationContext,
    tool: BaseTool,
    args: dict[str, object],
    tctx: ToolContext,
    traced: ToolTrace | None,
) -> tuple[Any, str | None, str]:
    """T4: before hooks → confirmation gate → run → error hooks.

    Returns (result, error text, how): how is "ran", "paused" (waits for a confirmation; the
    call has not started) or "delayed" (a long-running tool answered nothing yet). Streaming
    tools take the same path (G5): `run` reports their chunks as progress."""
    plugins = plugins_of(ctx)
    active = plugins.active
    try:
        result = (
            await plugins.run("before_tool", tool, args, tctx) if "before_tool" in active else None
        )
        if result is None and agent.before_tool_callbacks:
            result = await first_result(agent.before_tool_callbacks, tool, args, tctx)
        if result is not None:
            await tctx.mark_started()
            return to_response(result), None, "ran"
        guardrails = agent.tool_input_guardrails
        if guardrails:
            # G6: the arguments the tool would get pass the guardrails before anything else.
            # The first is called here and a passing verdict read in line; `check_tool_input`
            # settles the rest (issue 24.7: a configured guardrail costs its own call).
            verdict = guardrails[0].guardrail_function(tctx, tool, args)
            if (
                guardrails[1:]
                or type(verdict) is not GuardrailFunctionOutput
                or verdict.tripwire_triggered
            ):
                blocked = await check_tool_input(agent, tctx, tool, args, verdict)
                if blocked is not None:
                    await tctx.mark_started()
                    return blocked, str(blocked["error"]), "ran"
        gated = await tool.confirmation_gate(args, tctx)
        confirmation = tctx.tool_confirmation
        if gated is None and confirmation is not None and not confirmation.confirmed:
            # H2: a refused call never reaches the handler, whoever asked for the decision
            # (a tool's own gate, or a resume that held an interrupted call, D1).
            gated = {"error": "This tool call was rejected by the user."}
        if gated is not None:
            if tctx.tool_confirmation is None:
                return to_response(gated), None, "paused"
            await tctx.mark_started()  # refused by the human: handled, the tool never ran
            return to_response(gated), None, "ran"
        await tctx.mark_started()
        steps = ctx.run_config.durable_steps
        if steps is None:
            raw = await tool.run(args, tctx)
        else:  # D2: the tool's own run is the engine's step; hooks are workflow code
            raw = await steps.tool_call(
                tool.name, tctx.function_call_id or "", lambda: tool.run(args, tctx)
            )
        if tctx.nested_pause is not None or (raw is None and tool.is_long_running):
            return None, None, "delayed"
        return to_response(raw), None, "ran"
    except Exception as exc:
        await tctx.mark_started()
        error = _error_text(exc)
        if traced is not None:
            traced.failed(exc)
        recovered = (
            await plugins.run("on_tool_error", tool, args, tctx, exc)
            if "on_tool_error" in active
            else None
        )
        if recovered is None and agent.on_tool_error_callbacks:
            recovered = await first_result(agent.on_tool_error_callbacks, tool, args, tctx, exc)
        if recovered is not None:
            return to_response(recovered), error, "ran"
        failed: dict[str, object] = {"error": error}
        if tctx.progress:  # what a streaming tool produced before it failed
            failed["partial_result"] = to_response(tctx.progress)["result"]
        return failed, error, "ran"


async def _after_tool(
    agent: LlmAgentView,
    ctx: InvocationContext,
    tool: BaseTool,
    args: dict[str, object],
    tctx: ToolContext,
    result: dict[str, object],
    error: str | None,
    traced: ToolTrace | None,
) -> tuple[dict[str, object], str | None]:
    """T4: plugin.after_tool, then the agent's; they see error responses too."""
    plugins = plugins_of(ctx)
    try:
        altered = (
            await plugins.run("after_tool", tool, args, tctx, result)
            if "after_tool" in plugins.active
            else None
        )
        if altered is None and agent.after_tool_callbacks:
            altered = await first_result(agent.after_tool_callbacks, tool, args, tctx, result)
        if altered is not None:
            return to_response(altered), error
    except Exception as exc:
        error = _error_text(exc)
        if traced is not None:
            traced.failed(exc)
        return {"error": error}, error
    return result, error


async def run_call(
    agent: LlmAgentView,
    ctx: InvocationContext,
    call: FunctionCall,
    tools: dict[str, BaseTool],
    reason_id: str = "",
    confirmation: ToolConfirmation | None = None,
    prefilled: dict[str, object] | None = None,
    held: bool = False,
    nested_answers: list[FunctionResponse] | None = None,
) -> CallOutcome:
    """Run one call through the tool hooks; never raises for tool-level failures.

    A `prefilled` response (a human chose "skip") is recorded without calling the tool. When
    the lifecycle view is observed, the call's `ToolCallStart` goes out through the context's
    sink once the call is handled — never for a call that waits for a confirmation.
    """
    started = time.perf_counter()
    actions = Actions()
    demand = ctx.demand
    if demand.paused:
        await demand.wait()  # R7: nothing starts while the consumer is not asking
    tctx = ToolContext(
        ctx,
        function_call_id=call.id,
        actions=actions,
        tool_confirmation=confirmation,
        function_call=call,
        reason_id=reason_id,
        nested_answers=nested_answers,
    )
    if prefilled is not None:
        await tctx.mark_started()
        return CallOutcome(call, prefilled, actions, None, 0.0)
    if held:
        # D1: not run again; the call waits for a decision, like a confirmation (H1).
        tctx.request_confirmation(
            hint=f"The call to {call.name} was interrupted before it returned and "
            f"{call.name} is not idempotent: approve to run it again, skip with its result, "
            "or reject it."
        )
        return CallOutcome(call, {"error": INTERRUPTED_HOLD_ERROR}, actions, None, 0.0, paused=True)
    tool: BaseTool | None = tools.get(call.name)
    known = tool is not None
    if tool is None:
        # T3: the hooks still have their say (a before_tool may answer, an on_tool_error
        # may recover); the after_tool hooks do not run for a tool that does not exist.
        tool = _UnknownTool(call.name, tools)
    # The hooks and the tool get their own copy: editing it never changes the stored call.
    args = _copy_json(call.args)
    if ctx.trace is not None:
        traced = ctx.trace.tool_call(call, tool.description if known else "")
        return await _run_traced(agent, ctx, traced, call, tool, known, args, tctx, started)
    try:
        result, error, how = await _run_hooked(agent, ctx, tool, args, tctx, None)
    except asyncio.CancelledError:
        tctx.cancel_event.set()  # a sync tool in its thread can see it (R7)
        raise
    if how == "delayed":
        outcome = CallOutcome(call, None, actions, None, _ms(started))
        outcome.nested = tctx.nested_pause
        return outcome
    if known:
        result, error = await _after_tool(agent, ctx, tool, args, tctx, result, error, None)
        guardrails = agent.tool_output_guardrails
        if guardrails and how == "ran":
            # G6, in line as for the tool input guardrails (issue 24.7).
            verdict = guardrails[0].guardrail_function(tctx, tool, args, result)
            if (
                guardrails[1:]
                or type(verdict) is not GuardrailFunctionOutput
                or verdict.tripwire_triggered
            ):
                blocked = await check_tool_output(agent, tctx, tool, args, result, verdict)
                if blocked is not None:  # G6: the model sees the guardrail's error instead
                    result, error = blocked, str(blocked["error"])
    return CallOutcome(call, result, actions, error, _ms(started), paused=how == "paused")


async def _run_traced(
    agent: LlmAgentView,
    ctx: InvocationContext,
    traced: ToolTrace,
    call: FunctionCall,
    tool: BaseTool,
    known: bool,
    args: dict[str, object],
    tctx: ToolContext,
    started: float,
) -> CallOutcome:
    """`run_call` inside an `execute_tool` span (SPEC O1), current while the tool runs."""
    token = traced.attach()
    try:
        result, error, how = await _run_hooked(agent, ctx, tool, args, tctx, traced)
        if how != "delayed" and known:
            result, error = await _after_tool(agent, ctx, tool, args, tctx, result, error, traced)
            guardrails = agent.tool_output_guardrails
            if guardrails and how == "ran":
                verdict = guardrails[0].guardrail_function(tctx, tool, args, result)
                if (
                    guardrails[1:]
                    or type(verdict) is not GuardrailFunctionOutput
                    or verdict.tripwire_triggered
                ):
                    blocked = await check_tool_output(agent, tctx, tool, args, result, verdict)
                    if blocked is not None:  # G6: the model sees the guardrail's error instead
                        result, error = blocked, str(blocked["error"])
    except BaseException as exc:
        if isinstance(exc, asyncio.CancelledError):
            tctx.cancel_event.set()  # a sync tool in its thread can see it (R7)
        traced.failed(exc)
        traced.done(None)
        traced.finish(None)
        raise
    finally:
        traced.detach(token)
    if how == "delayed":
        result, error = None, None
    traced.done(result)
    outcome = CallOutcome(call, result, tctx.actions, error, _ms(started), paused=how == "paused")
    outcome.trace = traced
    outcome.nested = tctx.nested_pause
    return outcome


class _UnknownTool(BaseTool):
    """What the hooks see for a call to a tool the agent does not have."""

    def __init__(self, name: str, tools: dict[str, BaseTool]) -> None:
        # No name check: the model may invent any name, and it is reported as it came.
        self.name = name
        self.description = ""
        self._available = ", ".join(sorted(tools)) or "none"

    async def run(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        raise ToolNotFoundError(f"Tool '{self.name}' not found. Available tools: {self._available}")


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def _deep_merge(dst: dict[str, object], src: dict[str, object]) -> dict[str, object]:
    for key, value in src.items():
        current = dst.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            dst[key] = _deep_merge(dict(current), value)  # pyright: ignore[reportUnknownArgumentType]
        else:
            dst[key] = value
    return dst


def merge_actions(all_actions: Sequence[Actions]) -> EventActions:
    """T2: merge in call order; maps deep-merge, later calls win conflicts."""
    if len(all_actions) == 1:
        return all_actions[0].to_record()
    merged = Actions()
    for actions in all_actions:
        if actions.state_delta:
            _deep_merge(merged.state_delta, actions.state_delta)
        merged.artifact_delta.update(actions.artifact_delta)
        merged.requested_tool_confirmations.update(actions.requested_tool_confirmations)
        if actions.transfer_to_agent:
            merged.transfer_to_agent = actions.transfer_to_agent
        if actions.escalate:
            merged.escalate = True
        if actions.skip_summarization:
            merged.skip_summarization = True
    return merged.to_record()


def response_event(
    ctx: InvocationContext, author: str, outcomes: Sequence[CallOutcome]
) -> Event | None:
    """The merged tool-response record (role "user", authored by the agent)."""
    parts = [
        Part(
            function_response=FunctionResponse(name=o.call.name, response=o.response, id=o.call.id)
        )
        for o in outcomes
        if o.response is not None
    ]
    if not parts:
        return None
    return ctx.new_event(
        author,
        content=Content(role="user", parts=parts),
        actions=merge_actions([o.actions for o in outcomes]),
    )


def nested_pause_event(
    ctx: InvocationContext, author: str, outcomes: Sequence[CallOutcome]
) -> Event | None:
    """H4: the record of the calls whose nested runs wait (None when none does). Its content
    repeats the calls they wait on, long-running, so the run pauses and the session lists
    them; its metadata says which of this step's calls waits on which."""
    waiting: list[dict[str, object]] = []
    parts: list[Part] = []
    for outcome in outcomes:
        pause = outcome.nested
        if pause is None:
            continue
        waiting.append(
            {
                "call_id": outcome.call.id or "",
                "tool_name": outcome.call.name,
                "agent": pause.agent,
                "pending": [p.model_dump(mode="json") for p in pause.pending],
            }
        )
        parts.extend(Part(function_call=call) for call in pause.calls)
    if not waiting:
        return None
    return ctx.new_event(
        author,
        content=Content(role="model", parts=parts),
        long_running_tool_ids=frozenset(
            p.call_id for o in outcomes if o.nested for p in o.nested.pending
        ),
        custom_metadata={NESTED_PAUSE: waiting},
    )


def _end(ctx: InvocationContext, reason_id: str, outcome: CallOutcome) -> ToolCallEnd:
    call = outcome.call
    return ToolCallEnd(
        **ctx.correlation(),
        reason_id=reason_id,
        call_id=call.id or "",
        tool_name=call.name,
        args=call.args,
        result=outcome.response,
        error=outcome.error,
        duration_ms=outcome.duration_ms,
    )


async def _dispatch(
    agent: LlmAgentView,
    ctx: InvocationContext,
    calls: Sequence[FunctionCall],
    tools: dict[str, BaseTool],
    reason_id: str,
    confirmations: dict[str, ToolConfirmation],
    prefilled: dict[str, dict[str, object]],
    outcomes: list[CallOutcome],
    held: frozenset[str] = frozenset(),
    nested: dict[str, list[FunctionResponse]] | None = None,
) -> AsyncGenerator[Item, None]:
    """Run the calls; what they send comes out in order, then `outcomes` holds them.

    Each call is a task with a sink for what it sends — its `ToolCallStart`, progress, sub-agent lifecycle events,
    records of task agents in this session (stored before the sender goes on) — and, when
    observed, each call's `ToolCallEnd` follows as it completes. `ActionStart` precedes the
    first call that starts: a round whose calls all wait for a confirmation has none (seed
    002 §6.B). Closing this generator cancels the calls still in flight.
    """

    def run(call: FunctionCall, call_ctx: InvocationContext) -> Awaitable[CallOutcome]:
        return _start_call(
            agent, call_ctx, call, tools, reason_id, confirmations, prefilled, held, nested
        )

    queue: asyncio.Queue[tuple[Any, asyncio.Future[None] | None]] = asyncio.Queue()
    sink = EventSink(queue.put_nowait)
    limit = agent.max_concurrent_tool_calls
    # One after another: each call is a group of its own, so its end precedes the next
    # call's start (seed 002 §4.C); a larger limit bounds how many run at once.
    groups = [[c] for c in calls] if limit == 1 else [list(calls)]
    gate = asyncio.Semaphore(limit) if limit is not None and 1 < limit < len(calls) else None
    started: list[asyncio.Task[CallOutcome]] = []
    state = [False]  # whether ActionStart went out
    for group in groups:
        tasks: list[asyncio.Task[CallOutcome]] = []
        for call in group:
            call_ctx = ctx.for_agent(ctx.agent)
            call_ctx.sink = sink
            running = run(call, call_ctx)
            tasks.append(
                asyncio.ensure_future(_gated(gate, running) if gate is not None else running)
            )
        started.extend(tasks)
        relay = _relay(ctx, calls, reason_id, queue, tasks, state)
        async with aclosing(relay) as items:
            async for item in items:
                yield item
    outcomes.extend(t.result() for t in started)


def _start_call(
    agent: LlmAgentView,
    call_ctx: InvocationContext,
    call: FunctionCall,
    tools: dict[str, BaseTool],
    reason_id: str,
    confirmations: dict[str, ToolConfirmation],
    prefilled: dict[str, dict[str, object]],
    held: frozenset[str],
    nested: dict[str, list[FunctionResponse]] | None,
) -> Awaitable[CallOutcome]:
    """One call of the step, with what this round knows about it by its id."""
    cid = call.id or ""
    return run_call(
        agent,
        call_ctx,
        call,
        tools,
        reason_id,
        confirmations.get(cid),
        prefilled.get(cid),
        cid in held,
        nested.get(cid) if nested else None,
    )


async def _gated(gate: asyncio.Semaphore, run: Awaitable[CallOutcome]) -> CallOutcome:
    async with gate:
        return await run


async def _relay(
    ctx: InvocationContext,
    calls: Sequence[FunctionCall],
    reason_id: str,
    queue: asyncio.Queue[tuple[Any, asyncio.Future[None] | None]],
    tasks: list[asyncio.Task[CallOutcome]],
    state: list[bool],
) -> AsyncGenerator[Item, None]:
    """What the running `tasks` send, in order, and each one's end as it completes;
    closing this generator cancels the ones still in flight."""
    observe = ctx.observe
    async with aclosing(fan_in(queue, tasks)) as merged:
        async for got in merged:
            if isinstance(got, Ended):
                outcome = got.task.result()
                if observe and not outcome.paused:
                    yield _end(ctx, reason_id, outcome)
                continue
            item, ack = got
            if observe and not state[0] and isinstance(item, ToolCallStart):
                state[0] = True
                yield ActionStart(**ctx.correlation(), reason_id=reason_id, tool_calls=list(calls))
            yield item
            if ack is not None and not ack.done():
                ack.set_result(None)


async def handle_function_calls(
    agent: LlmAgentView,
    ctx: InvocationContext,
    calls: Sequence[FunctionCall],
    tools: dict[str, BaseTool],
    reason_id: str,
    confirmations: dict[str, ToolConfirmation] | None = None,
    prefilled: dict[str, dict[str, object]] | None = None,
    held: frozenset[str] = frozenset(),
    nested: dict[str, list[FunctionResponse]] | None = None,
) -> AsyncGenerator[Item, None]:
    """Run `calls` concurrently; yields lifecycle items (when observed) and the merged
    record, then `ActionEnd` once that record is stored (when an `ActionStart` opened it).
    Calls whose ids are `held` are not run: they wait for a decision (D1). Calls continued
    after a nested pause get the answers in `nested` (H4); calls whose nested run waits
    again are recorded after the merged record, in a nested-pause record."""
    outcomes: list[CallOutcome] = []
    stop: BudgetExceeded | None = None
    if ctx.guard is not None:
        # G6: calls beyond a budget are answered (not run), and the run ends after this step.
        refused, stop = ctx.guard.admit(calls)
        if refused:
            prefilled = {**(prefilled or {}), **refused}
    confirmations, prefilled = confirmations or {}, prefilled or {}
    action_started = False
    try:
        if (
            not ctx.observe
            and len(calls) == 1
            and not getattr(tools.get(calls[0].name), "yields_events", False)
        ):
            # Nobody watching and one call: it runs inline (no task, no generator).
            outcomes.append(
                await _start_call(
                    agent, ctx, calls[0], tools, reason_id, confirmations, prefilled, held, nested
                )
            )
        else:
            dispatch = _dispatch(
                agent,
                ctx,
                calls,
                tools,
                reason_id,
                confirmations,
                prefilled,
                outcomes,
                held,
                nested,
            )
            try:
                async for item in dispatch:
                    if isinstance(item, ActionStart):
                        action_started = True
                    yield item
            finally:
                await dispatch.aclose()
    except BaseException:
        if ctx.trace is not None:
            _end_spans(outcomes, None)
        raise
    event = response_event(ctx, agent.name, outcomes)
    if ctx.trace is not None:
        _end_spans(outcomes, event)  # O1: each call's span carries its record's id
    if event is not None:
        yield event  # the runner stores it before this generator resumes
    waiting = nested_pause_event(ctx, agent.name, outcomes)
    if waiting is not None:
        yield waiting
    if action_started:
        yield ActionEnd(**ctx.correlation(), reason_id=reason_id, event=event)
    if stop is not None:
        for item in stop_items(ctx, stop):
            yield item
        raise stop


def _end_spans(outcomes: Sequence[CallOutcome], event: Event | None) -> None:
    for outcome in outcomes:
        if outcome.trace is not None:
            outcome.trace.finish(event)
            outcome.trace = None
