"""Tool dispatch: run a response's function calls and merge their results (SPEC T2–T6).

Calls run concurrently and are merged in call order. A tool that raises, an unknown tool or
bad arguments become `{"error": ...}` responses the model can react to (T3).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from rondo._callbacks import first_result
from rondo.agents.base import Item
from rondo.context import Actions, EventSink, ToolContext
from rondo.errors import ToolNotFoundError
from rondo.events import Event, EventActions, ToolConfirmation
from rondo.lifecycle import ActionEnd, ActionStart, ToolCallEnd, ToolCallStart
from rondo.tools.base import BaseTool
from rondo.tools.function import to_response
from rondo.types import Content, FunctionCall, FunctionResponse, Part

if TYPE_CHECKING:
    from rondo.agents.llm import Agent
    from rondo.context import InvocationContext

__all__ = ["CallOutcome", "handle_function_calls", "merge_actions"]


class CallOutcome:
    """What one call produced: its response (None = no response yet), actions and error."""

    __slots__ = ("actions", "call", "duration_ms", "error", "response")

    def __init__(
        self,
        call: FunctionCall,
        response: dict[str, Any] | None,
        actions: Actions,
        error: str | None,
        duration_ms: float,
    ) -> None:
        self.call = call
        self.response = response
        self.actions = actions
        self.error = error
        self.duration_ms = duration_ms


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
    agent: Agent,
    ctx: InvocationContext,
    tool: BaseTool,
    args: dict[str, Any],
    tctx: ToolContext,
) -> tuple[Any, str | None, bool]:
    """T4: before hooks → run → error hooks. Returns (result, error text, delayed)."""
    if tool.is_streaming:
        return await _run_streaming(tool, args, tctx)
    plugins = ctx.plugins
    active = plugins.active
    try:
        result = (
            await plugins.run("before_tool", tool, args, tctx) if "before_tool" in active else None
        )
        if result is None and agent.before_tool_callbacks:
            result = await first_result(agent.before_tool_callbacks, tool, args, tctx)
        if result is not None:
            return to_response(result), None, False
        raw = await tool.run(args, tctx)
        if raw is None and tool.is_long_running:
            return None, None, True
        return to_response(raw), None, False
    except Exception as exc:
        error = _error_text(exc)
        recovered = (
            await plugins.run("on_tool_error", tool, args, tctx, exc)
            if "on_tool_error" in active
            else None
        )
        if recovered is None and agent.on_tool_error_callbacks:
            recovered = await first_result(agent.on_tool_error_callbacks, tool, args, tctx, exc)
        return (to_response(recovered) if recovered is not None else {"error": error}), error, False


async def _run_streaming(
    tool: BaseTool, args: dict[str, Any], tctx: ToolContext
) -> tuple[Any, str | None, bool]:
    """T5: a streaming tool bypasses the hook chain; a normal run aggregates its chunks."""
    chunks: list[Any] = []
    try:
        async for chunk in tool.stream(args, tctx):
            chunks.append(chunk)
    except Exception as exc:
        error = _error_text(exc)
        return {"error": error, "partial_result": to_response(chunks)["result"]}, error, False
    if chunks and all(isinstance(c, str) for c in chunks):
        return {"result": "".join(chunks)}, None, False
    return to_response(chunks), None, False


async def run_call(
    agent: Agent,
    ctx: InvocationContext,
    call: FunctionCall,
    tools: dict[str, Any],
    confirmation: ToolConfirmation | None = None,
    prefilled: dict[str, Any] | None = None,
) -> CallOutcome:
    """Run one call through the tool hooks; never raises for tool-level failures.

    A `prefilled` response (a human chose "skip") is recorded without calling the tool.
    """
    started = time.perf_counter()
    actions = Actions()
    if prefilled is not None:
        return CallOutcome(call, prefilled, actions, None, 0.0)
    tool = tools.get(call.name)
    if tool is None:
        available = ", ".join(sorted(tools)) or "none"
        error = f"Tool '{call.name}' not found. Available tools: {available}"
        return CallOutcome(call, {"error": error}, actions, error, _ms(started))
    tctx = ToolContext(
        ctx, function_call_id=call.id, actions=actions, tool_confirmation=confirmation
    )
    # The hooks and the tool get their own copy: editing it never changes the stored call.
    args = _copy_json(call.args)
    await ctx.demand.wait()  # R7: nothing starts while the consumer is not asking
    try:
        result, error, delayed = await _run_hooked(agent, ctx, tool, args, tctx)
    except asyncio.CancelledError:
        tctx.cancel_event.set()  # a sync tool in its thread can see it (R7)
        raise
    if delayed:
        return CallOutcome(call, None, actions, None, _ms(started))
    if tool.is_streaming:
        return CallOutcome(call, result, actions, error, _ms(started))
    plugins = ctx.plugins
    try:
        altered = (
            await plugins.run("after_tool", tool, args, tctx, result)
            if "after_tool" in plugins.active
            else None
        )
        if altered is None and agent.after_tool_callbacks:
            altered = await first_result(agent.after_tool_callbacks, tool, args, tctx, result)
        if altered is not None:
            result = to_response(altered)
    except Exception as exc:
        error = _error_text(exc)
        result = {"error": error}
    return CallOutcome(call, result, actions, error, _ms(started))


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def _deep_merge(dst: dict[str, Any], src: dict[str, Any]) -> dict[str, Any]:
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
    return Event(
        author=author,
        invocation_id=ctx.invocation_id,
        run_id=ctx.run_id,
        branch=ctx.branch,
        isolation_scope=ctx.isolation_scope,
        content=Content(role="user", parts=parts),
        actions=merge_actions([o.actions for o in outcomes]),
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


def _start(ctx: InvocationContext, reason_id: str, call: FunctionCall) -> ToolCallStart:
    return ToolCallStart(
        **ctx.correlation(),
        reason_id=reason_id,
        call_id=call.id or "",
        tool_name=call.name,
        args=call.args,
    )


async def _cancel_unfinished(tasks: Sequence[asyncio.Task[Any]]) -> None:
    unfinished = [t for t in tasks if not t.done()]
    for task in unfinished:
        task.cancel()
    if unfinished:
        await asyncio.gather(*unfinished, return_exceptions=True)


async def _run_unobserved(
    agent: Agent,
    ctx: InvocationContext,
    calls: Sequence[FunctionCall],
    tools: dict[str, Any],
    confirmations: dict[str, ToolConfirmation],
    prefilled: dict[str, dict[str, Any]],
) -> list[CallOutcome]:
    """No lifecycle consumer: one call runs inline (no task), several run concurrently."""
    if len(calls) == 1:
        call = calls[0]
        cid = call.id or ""
        return [await run_call(agent, ctx, call, tools, confirmations.get(cid), prefilled.get(cid))]
    tasks = [
        asyncio.ensure_future(
            run_call(agent, ctx, c, tools, confirmations.get(c.id or ""), prefilled.get(c.id or ""))
        )
        for c in calls
    ]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        await _cancel_unfinished(tasks)


async def _run_streamed(
    agent: Agent,
    ctx: InvocationContext,
    calls: Sequence[FunctionCall],
    tools: dict[str, Any],
    reason_id: str,
    confirmations: dict[str, ToolConfirmation],
    prefilled: dict[str, dict[str, Any]],
    outcomes: list[CallOutcome],
) -> AsyncGenerator[Item, None]:
    """Each call is a task with a sink for what it sends: lifecycle events (sub-agent tasks,
    plan updates) and records (task agents in this session). They are yielded between the
    call's start and end; each `ToolCallEnd` is yielded as its call completes."""
    observe = ctx.observe
    queue: asyncio.Queue[tuple[Any, asyncio.Future[None] | None]] = asyncio.Queue()
    sink = EventSink(queue.put_nowait)
    tasks: list[asyncio.Task[CallOutcome]] = []
    try:
        for call in calls:
            if observe:
                yield _start(ctx, reason_id, call)
            call_ctx = ctx.for_agent(ctx.agent)
            call_ctx.sink = sink
            cid = call.id or ""
            tasks.append(
                asyncio.ensure_future(
                    run_call(
                        agent, call_ctx, call, tools, confirmations.get(cid), prefilled.get(cid)
                    )
                )
            )
        pending: set[asyncio.Future[Any]] = set(tasks)
        while pending:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({*pending, getter}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                item, ack = getter.result()
                yield item
                if ack is not None and not ack.done():
                    ack.set_result(None)
            else:
                getter.cancel()
            for task in tasks:
                if task in done:
                    pending.discard(task)
                    while not queue.empty():  # what the call sent comes before its end
                        item, ack = queue.get_nowait()
                        yield item
                        if ack is not None and not ack.done():
                            ack.set_result(None)
                    if observe:
                        yield _end(ctx, reason_id, task.result())
        outcomes.extend(t.result() for t in tasks)
    finally:
        await _cancel_unfinished(tasks)


async def handle_function_calls(
    agent: Agent,
    ctx: InvocationContext,
    calls: Sequence[FunctionCall],
    tools: dict[str, Any],
    reason_id: str,
    confirmations: dict[str, ToolConfirmation] | None = None,
    prefilled: dict[str, dict[str, Any]] | None = None,
) -> AsyncGenerator[Item, None]:
    """Run `calls` concurrently; yields lifecycle items (when observed) and the merged
    record, then `ActionEnd` once that record is stored.

    Closing this generator (the consumer stopped) cancels calls still in flight.
    """
    confirmations = confirmations or {}
    prefilled = prefilled or {}
    observe = ctx.observe
    streamed = observe or any(getattr(tools.get(c.name), "yields_events", False) for c in calls)
    if not streamed:
        outcomes = await _run_unobserved(agent, ctx, calls, tools, confirmations, prefilled)
        event = response_event(ctx, agent.name, outcomes)
        if event is not None:
            yield event
        return
    if observe:
        yield ActionStart(**ctx.correlation(), reason_id=reason_id, tool_calls=list(calls))
    outcomes: list[CallOutcome] = []
    dispatch = _run_streamed(
        agent, ctx, calls, tools, reason_id, confirmations, prefilled, outcomes
    )
    async with aclosing(dispatch) as items:
        async for item in items:
            yield item
    event = response_event(ctx, agent.name, outcomes)
    if event is not None:
        yield event  # the runner stores it before this generator resumes
    if observe:
        yield ActionEnd(**ctx.correlation(), reason_id=reason_id, event=event)
