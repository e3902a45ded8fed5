"""Human-in-the-loop confirmation (SPEC H1–H3).

H1: after a step's tool responses, a tool's confirmation request becomes an
`adk_request_confirmation` function call whose id is new and long-running, so the run pauses.
H2/H3: the next run finds the human's answer in the latest user message, re-dispatches the
original call with the decision in its tool context (approve → runs, reject → refused without
reaching the handler, skip → a pre-filled observation), and never dispatches a call twice.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Literal

from rondo._ids import new_client_call_id, new_reason_id
from rondo.events import Event, ToolConfirmation
from rondo.flow.functions import handle_function_calls
from rondo.flow.processors.nested import latest_answers
from rondo.lifecycle import HITLDecided
from rondo.sessions.base import CONFIRMATION_FUNCTION_NAME
from rondo.types import Content, FunctionCall, FunctionResponse, Part

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.views import FlowView
    from rondo.lifecycle import Item
    from rondo.models.base import ModelRequest

__all__ = ["CONFIRMATION_FUNCTION_NAME", "confirmation_event", "confirmation_processor"]

logger = logging.getLogger("rondo.confirmation")

Decision = Literal["approve", "reject", "skip"]


def confirmation_event(
    ctx: InvocationContext, author: str, calls: Sequence[FunctionCall], tool_event: Event
) -> Event | None:
    """H1: one `adk_request_confirmation` call per call that asked for confirmation."""
    requested = tool_event.actions.requested_tool_confirmations
    if not requested:
        return None
    by_id = {c.id: c for c in calls}
    parts: list[Part] = []
    ids: set[str] = set()
    for call_id, confirmation in requested.items():
        original = by_id.get(call_id)
        if original is None:
            continue
        confirm_id = new_client_call_id()
        ids.add(confirm_id)
        parts.append(
            Part(
                function_call=FunctionCall(
                    name=CONFIRMATION_FUNCTION_NAME,
                    id=confirm_id,
                    args={
                        "originalFunctionCall": {
                            "id": original.id,
                            "name": original.name,
                            "args": original.args,
                        },
                        "toolConfirmation": {
                            "hint": confirmation.hint,
                            "confirmed": False,
                            "payload": confirmation.payload,
                        },
                    },
                )
            )
        )
    if not parts:
        return None
    return ctx.new_event(
        author,
        content=Content(role="model", parts=parts),
        long_running_tool_ids=frozenset(ids),
    )


def _decision(response: dict[str, object]) -> tuple[Decision, ToolConfirmation, str | None]:
    raw = response.get("decision")
    confirmed = bool(response.get("confirmed", raw in ("approve", "skip")))
    decision: Decision = (
        raw if raw in ("approve", "reject", "skip") else ("approve" if confirmed else "reject")
    )
    comment = response.get("comment")
    payload = response.get("payload")
    if decision == "reject" and comment and payload is None:
        payload = {"comment": comment}
    confirmation = ToolConfirmation(
        hint=str(response.get("hint") or ""),
        confirmed=decision != "reject",
        payload=payload,
    )
    return decision, confirmation, str(comment) if comment is not None else None


def _confirmation_answers(ctx: InvocationContext) -> list[FunctionResponse]:
    # H2: only the latest user message counts; never look past newer user text for approvals.
    return [a for a in latest_answers(ctx) if a.name == CONFIRMATION_FUNCTION_NAME]


def confirmation_processor(
    flow: FlowView, ctx: InvocationContext, request: ModelRequest
) -> AsyncGenerator[Item, None] | None:
    answers = _confirmation_answers(ctx)
    if not answers:
        return None
    return _resume(flow, ctx, request, answers)


async def _resume(
    flow: FlowView, ctx: InvocationContext, request: ModelRequest, answers: list[FunctionResponse]
) -> AsyncGenerator[Item, None]:
    agent = flow.agent
    wanted = {a.id: a for a in answers if a.id}
    events = ctx.session.events
    found: dict[str, tuple[FunctionCall, int]] = {}
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.author != agent.name or event.nested_pause is not None:
            continue  # H4: a nested run's request, listed here, is that run's to resume
        for call in event.get_function_calls():
            if (
                call.name == CONFIRMATION_FUNCTION_NAME
                and call.id in wanted
                and call.id not in found
            ):
                original = FunctionCall.model_validate(call.args.get("originalFunctionCall") or {})
                found[call.id] = (original, index)
        if len(found) == len(wanted):
            break
    calls: list[FunctionCall] = []
    confirmations: dict[str, ToolConfirmation] = {}
    prefilled: dict[str, dict[str, object]] = {}
    decided: list[HITLDecided] = []
    seen_originals: set[str] = set()
    for confirm_id, (original, index) in found.items():
        if not original.id or original.id in seen_originals:
            logger.warning("confirmation %s does not name a distinct original call", confirm_id)
            continue
        seen_originals.add(original.id)
        if _already_resumed(events, original.id, index):
            continue  # H2: a resumed call is never dispatched again.
        decision, confirmation, comment = _decision(wanted[confirm_id].response)
        calls.append(original)
        if decision == "skip":
            observation = wanted[confirm_id].response.get("observation")
            prefilled[original.id] = {
                "result": observation if observation is not None else "skipped by the user"
            }
        else:
            confirmations[original.id] = confirmation
        if ctx.observe:
            decided.append(
                HITLDecided(
                    **ctx.correlation(),
                    call_id=original.id,
                    tool_name=original.name,
                    args=original.args,
                    decision=decision,
                    comment=comment,
                )
            )
    for item in decided:
        yield item
    if not calls:
        return
    dispatch = handle_function_calls(
        agent, ctx, calls, request.tools, new_reason_id(), confirmations, prefilled
    )
    async with aclosing(dispatch) as items:
        async for item in items:
            yield item


def _already_resumed(events: Sequence[Event], call_id: str, confirm_index: int) -> bool:
    for index in range(confirm_index + 1, len(events)):
        for response in events[index].get_function_responses():
            if response.id == call_id:
                return True
    return False
