"""A checker for the lifecycle-stream contract (SPEC V3). Every lifecycle test runs it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rondo.lifecycle import (
    ActionEnd,
    ActionStart,
    HITLPending,
    NodeEnd,
    NodeStart,
    ReasonDelta,
    ReasonEnd,
    ReasonStart,
    RunEnd,
    RunStart,
    TaskEvent,
    ToolCallEnd,
    ToolCallStart,
    parse_lifecycle_event,
)

__all__ = ["StreamContractError", "check_stream"]


class StreamContractError(AssertionError):
    """A lifecycle stream broke the contract of SPEC V3."""


def _fail(index: int, event: Any, message: str) -> StreamContractError:
    kind = getattr(event, "type", type(event).__name__)
    return StreamContractError(f"event #{index} ({kind}): {message}")


def check_stream(events: Sequence[Any], *, completed: bool = True) -> None:
    """Check a top-level lifecycle stream.

    `completed=True`: it starts with `RunStart` and ends with exactly one `RunEnd`, nothing
    after. `completed=False` (cancelled or failed): no `RunEnd` at all — no synthetic end.
    Always: every event round-trips through its JSON projection; reason rounds, actions and
    tool calls open before they close and close only what they opened; deltas stay inside
    their blocks; a HITL pause ends with a normal `RunEnd` that lists what is pending; a
    later `RunStart` is a team member's own start, inside that member's open node.
    """
    _check_sequence(events, completed=completed, top_level=True)
    children: dict[str, list[Any]] = {}
    for event in events:
        if isinstance(event, TaskEvent):
            children.setdefault(event.task_id, []).append(event.event)
    for task_events in children.values():
        ended = any(isinstance(e, RunEnd) for e in task_events)
        _check_sequence(task_events, completed=ended, top_level=False)


def _check_sequence(events: Sequence[Any], *, completed: bool, top_level: bool) -> None:
    if not events:
        if completed:
            raise StreamContractError("the stream is empty")
        return
    run_ends = [i for i, e in enumerate(events) if isinstance(e, RunEnd)]
    if completed:
        if not isinstance(events[0], RunStart):
            raise _fail(0, events[0], "a stream must start with run_start")
        if len(run_ends) != 1:
            raise StreamContractError(f"expected exactly one run_end, found {len(run_ends)}")
        if run_ends[0] != len(events) - 1:
            raise _fail(run_ends[0] + 1, events[run_ends[0] + 1], "an event follows run_end")
    elif run_ends:
        raise _fail(run_ends[0], events[run_ends[0]], "an unfinished stream has a run_end")

    run_id = events[0].run_id
    open_reasons: set[str] = set()
    closed_reasons: set[str] = set()
    open_actions: set[str] = set()
    open_calls: dict[str, str] = {}
    block: dict[str, str | None] = {}
    open_nodes: set[str] = set()
    saw_pending = False
    for index, event in enumerate(events):
        if not hasattr(event, "type") or not hasattr(event, "model_dump"):
            raise _fail(index, event, "not a lifecycle event")
        data = event.model_dump(mode="json")
        back = parse_lifecycle_event(data)
        if back is None or back.model_dump(mode="json") != data:
            raise _fail(index, event, "does not round-trip through its JSON projection")
        if isinstance(event, TaskEvent):
            if top_level and event.parent_run_id != run_id:
                raise _fail(index, event, "task_event's parent_run_id is not the run's id")
            continue
        if top_level and event.run_id != run_id:
            raise _fail(index, event, f"run_id {event.run_id!r} differs from {run_id!r}")
        if isinstance(event, NodeStart) and event.node:
            open_nodes.add(event.node)
        elif isinstance(event, NodeEnd) and event.node:
            open_nodes.discard(event.node)
        elif isinstance(event, RunStart) and index > 0:
            # A team member's own start (seed 002 §4.E): only inside its open node.
            if event.node is None or event.node not in open_nodes:
                raise _fail(index, event, "a second run_start outside a team member's node")
        elif isinstance(event, ReasonStart):
            if event.reason_id in open_reasons or event.reason_id in closed_reasons:
                raise _fail(index, event, "reason round started twice")
            open_reasons.add(event.reason_id)
            block[event.reason_id] = None
        elif isinstance(event, ReasonDelta):
            if event.reason_id not in open_reasons:
                raise _fail(index, event, "delta outside an open reason round")
            _check_delta(index, event, block)
        elif isinstance(event, ReasonEnd):
            if event.reason_id not in open_reasons:
                raise _fail(index, event, "reason_end closes a round that is not open")
            if block.get(event.reason_id) is not None:
                raise _fail(index, event, "reason_end inside an unclosed text/thinking block")
            open_reasons.discard(event.reason_id)
            closed_reasons.add(event.reason_id)
        elif isinstance(event, ActionStart):
            open_actions.add(event.reason_id)
        elif isinstance(event, ToolCallStart):
            if event.call_id in open_calls:
                raise _fail(index, event, "tool call started twice")
            open_calls[event.call_id] = event.tool_name
        elif isinstance(event, ToolCallEnd):
            if open_calls.pop(event.call_id, None) is None:
                raise _fail(index, event, "tool_call_end without its tool_call_start")
        elif isinstance(event, ActionEnd):
            if event.reason_id not in open_actions:
                raise _fail(index, event, "action_end without its action_start")
            open_actions.discard(event.reason_id)
        elif isinstance(event, HITLPending):
            saw_pending = True
        elif isinstance(event, RunEnd) and saw_pending:
            if event.is_abnormal:
                raise _fail(index, event, "a HITL pause is not an abnormal end")
            if not event.pending:
                raise _fail(index, event, "run_end after hitl_pending lists nothing pending")
    if completed:
        if open_reasons:
            raise StreamContractError(f"reason rounds never ended: {sorted(open_reasons)}")
        if open_calls:
            raise StreamContractError(f"tool calls never ended: {sorted(open_calls)}")
        if open_actions:
            raise StreamContractError(f"actions never ended: {sorted(open_actions)}")


def _check_delta(index: int, event: ReasonDelta, block: dict[str, str | None]) -> None:
    current = block.get(event.reason_id)
    kind = event.kind
    if kind == "media":
        if current is not None:
            raise _fail(index, event, "media inside an open text/thinking block")
        return
    family, _, phase = kind.partition("_")
    if phase == "start":
        if current is not None:
            raise _fail(index, event, f"{kind} while a {current} block is open")
        block[event.reason_id] = family
    elif phase == "delta":
        if current != family:
            raise _fail(index, event, f"{kind} outside a {family} block")
        if event.is_thinking != (family == "thinking"):
            raise _fail(index, event, "is_thinking does not match the delta kind")
    elif phase == "end":
        if current != family:
            raise _fail(index, event, f"{kind} closes a block that is not open")
        block[event.reason_id] = None
