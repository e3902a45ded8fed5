"""Continuing a call whose nested run paused (SPEC H4).

A call that runs another agent (an agent as a tool, a Harness task, a task sub-agent) and
whose nested run waits on a confirmation or a long-running call records no response: the
step ends on a nested-pause record instead (`flow.functions.nested_pause_event`), and the
whole run pauses. When the next message answers calls that record lists, this processor
dispatches the waiting call again with those answers (`ToolContext.nested_answers`); the
tool hands them to its nested run, which continues where it stopped. The call's response
— the nested agent's real answer — is stored before the model is called, or, when the
nested run waits again, a new nested-pause record ends the step.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING

from rondo._ids import new_reason_id
from rondo.events import Event
from rondo.flow.functions import handle_function_calls
from rondo.lifecycle import HITLPending
from rondo.sessions.base import apply_pending
from rondo.types import FunctionCall, FunctionResponse

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.views import FlowView
    from rondo.lifecycle import Item
    from rondo.models.base import ModelRequest

__all__ = ["latest_answers", "nested_resume_processor"]


def latest_answers(ctx: InvocationContext) -> list[FunctionResponse]:
    """The function responses of the latest user message (H2: only that one counts): the
    answers handed to this agent, the message, or — on an empty-message resume — the latest
    stored user event."""
    message = ctx.answers or ctx.user_content
    if message is None:
        for event in reversed(ctx.session.events):
            if event.author == "user":
                message = event.content
                break
    if message is None:
        return []
    return [
        p.function_response
        for p in message.parts
        if p.function_response is not None and p.function_response.id
    ]


def nested_resume_processor(
    flow: FlowView, ctx: InvocationContext, request: ModelRequest
) -> AsyncGenerator[Item, None] | None:
    message = ctx.user_content
    if ctx.answers is None and message is not None:
        parts = message.parts
        if parts and not parts[1:] and parts[0].function_response is None:
            return None  # a one-part message that answers nothing (every step: no call)
    answers = latest_answers(ctx)
    if not answers:
        return None
    return _continue(flow, ctx, request, answers)


def _waiting_calls(
    events: Sequence[Event], ctx: InvocationContext, agent_name: str, wanted: set[str]
) -> dict[str, tuple[int, list[str]]]:
    """Parent call id → (index of its latest nested-pause record, the answered ids it
    waits on). Only the latest record of a call counts: what an older one listed was
    answered since."""
    found: dict[str, tuple[int, list[str]]] = {}
    seen: set[str] = set()
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.author != agent_name or event.isolation_scope != ctx.isolation_scope:
            continue
        waiting = event.nested_pause
        if waiting is None:
            continue
        for entry in waiting:
            call_id = str(entry.get("call_id") or "")
            if not call_id or call_id in seen:
                continue
            seen.add(call_id)
            ids = [str(p.get("call_id")) for p in entry.get("pending") or ()]
            hit = [i for i in ids if i in wanted]
            if hit:
                found[call_id] = (index, hit)
    return found


def _call_before(events: Sequence[Event], index: int, call_id: str) -> FunctionCall | None:
    for i in range(index - 1, -1, -1):
        for call in events[i].get_function_calls():
            if call.id == call_id:
                return call
    return None


def _responded_after(events: Sequence[Event], index: int, call_id: str) -> bool:
    for i in range(index + 1, len(events)):
        if any(r.id == call_id for r in events[i].get_function_responses()):
            return True
    return False


async def _continue(
    flow: FlowView, ctx: InvocationContext, request: ModelRequest, answers: list[FunctionResponse]
) -> AsyncGenerator[Item, None]:
    agent = flow.agent
    by_id = {a.id: a for a in answers if a.id}
    events = ctx.session.events
    found = _waiting_calls(events, ctx, agent.name, set(by_id))
    calls: list[FunctionCall] = []
    nested: dict[str, list[FunctionResponse]] = {}
    for call_id, (index, ids) in found.items():
        if _responded_after(events, index, call_id):
            continue  # answered already: never dispatched again (as H2)
        call = _call_before(events, index, call_id)
        if call is None:
            continue
        calls.append(call)
        nested[call_id] = [by_id[i] for i in ids]
    if not calls:
        return
    dispatch = handle_function_calls(
        agent, ctx, calls, request.tools, new_reason_id(), nested=nested
    )
    async with aclosing(dispatch) as items:
        async for item in items:
            yield item
            if ctx.observe and isinstance(item, Event) and item.nested_pause is not None:
                yield HITLPending(**ctx.correlation(), pending=apply_pending([], item))
