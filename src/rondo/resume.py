"""Where an interrupted invocation stopped, read from the session log (SPEC D1).

The log is the whole truth: the runner stores every model response and every merged tool
result before the loop goes on, so the last stored event of an invocation says which step
boundary the process died at:

- the user's message: the first model call never completed → call the model;
- a model event whose calls have no response: the calls were in flight → run them again
  with the same call ids (the idempotency key), except tools declared `idempotent=False`,
  which wait for a decision;
- a tool-response event: the tools finished → do what follows them in the step
  (confirmation request, structured output, transfer), then call the model.

A final response, a pending call (HITL) or a user's answer to one is not an interruption —
except a final response of an agent that a workflow (sequence, loop, parallel agent) has more
to run after (`find_resume_point`): the process died between the two, and the workflow goes on
after it. Only reading this tail costs anything, and only when a run starts with no new
message. It lives beside the runner, which calls it; the record it returns is data
(`rondo.outcome.ResumePoint`), so the context and the loop read it without this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rondo.events import FAILURE, Event, PendingCall
from rondo.outcome import ResumePoint
from rondo.types import Content

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent

__all__ = ["ResumePoint", "find_interrupted", "find_resume_point", "is_failure"]


def find_resume_point(
    events: Sequence[Event], pending: Sequence[PendingCall], root: BaseAgent
) -> ResumePoint | None:
    """Where the session's last invocation stopped, if it was cut short: inside a step
    (`find_interrupted`) or between two agents of a workflow."""
    events = _without_failure(events)
    return find_interrupted(events) or _between_agents(events, pending, root)


def _between_agents(
    events: Sequence[Event], pending: Sequence[PendingCall], root: BaseAgent
) -> ResumePoint | None:
    """The last record is an agent's final answer, and a workflow around it has more to run:
    a sequence (or a sequential team) agents after it that never started, a loop a later
    sub-agent or round (while `max_iterations` allows, and not after an escalation, the
    loop's end), a parallel agent (or parallel team) branches that did not finish in this
    invocation (counted from the log). The run died in between, or failed there. Not when
    the run waits on an answer (H3).

    The point names the highest agent on that path that finished (the leaf, or the
    sequence / parallel agent / loop it completed), so the workflow around it goes on after
    it; under a parallel agent, `done` names the branches that finished."""
    if not events:
        return None
    last = events[-1]
    if (
        last.author == "user"
        or last.partial
        or last.isolation_scope
        or not last.invocation_id
        or not last.is_final_response()
        or last.long_running_tool_ids
    ):
        return None
    if any(p.run_id == last.run_id for p in pending):
        return None
    from rondo.agents.workflow import LoopAgent, completions

    agent = root.find_agent(last.author)
    if agent is None:
        return None
    mine = [e for e in events if e.invocation_id == last.invocation_id]
    done_node = node = agent
    done: tuple[str, ...] = ()
    more = False
    while (parent := node.parent_agent) is not None and (kind := parent.run_order) is not None:
        if isinstance(parent, LoopAgent):
            # An escalation ends every loop it passes through (each sees the event).
            limit = parent.max_iterations
            more = not last.actions.escalate and (
                parent.sub_agents[-1] is not node
                or limit is None
                or completions(node, mine) < limit
            )
        elif kind == "parallel":
            count = completions(node, mine)
            finished = tuple(
                s.name for s in parent.sub_agents if s is node or completions(s, mine) >= count
            )
            more = len(finished) < len(parent.sub_agents)
            if more:
                done = finished
        else:
            more = parent.sub_agents[-1] is not node
        if more:
            break
        done_node = node = parent
    if not more:
        return None
    user_content = _opening_message(events, _invocation_start(events, last.invocation_id))
    return ResumePoint(
        last.invocation_id,
        last.run_id,
        "after_agent",
        done_node.name,
        user_content,
        last,
        done=done,
    )


def _opening_message(events: Sequence[Event], start: int) -> Content | None:
    """The user's message that started the invocation at `start` (None when it continued a
    paused run with an answer)."""
    first = events[start]
    if (
        first.author == "user"
        and first.content is not None
        and not any(p.function_response is not None for p in first.content.parts)
    ):
        return first.content
    return None


def _invocation_start(events: Sequence[Event], invocation_id: str) -> int:
    index = len(events) - 1
    while index > 0 and events[index - 1].invocation_id == invocation_id:
        index -= 1
    return index


def find_interrupted(events: Sequence[Event]) -> ResumePoint | None:
    """The resume point of the session's last invocation, or None when it was not
    interrupted (it ended, or it waits on a human)."""
    events = _without_failure(events)
    if not events:
        return None
    last = events[-1]
    invocation_id = last.invocation_id
    if not invocation_id or last.partial:
        return None
    if last.author == "user":
        content = last.content
        if content is None or not content.parts:
            return None
        if any(p.function_response is not None for p in content.parts):
            return None  # an answer to pending calls: the HITL resume handles it
        return ResumePoint(invocation_id, last.run_id, "model", "", content, last)
    start = _invocation_start(events, invocation_id)
    # Events of a task agent run inside a tool call (their own isolation scope) belong to
    # that call: the step to resume is the last one at the invocation's top level.
    top_index = len(events) - 1
    while top_index >= start and events[top_index].isolation_scope:
        top_index -= 1
    if top_index < start:
        return None
    top = events[top_index]
    if top.author == "user":
        return None
    # A tool event asking for confirmations ends its step only with the request stored after
    # it; without that request the step was cut short.
    if top.is_final_response() and not top.actions.requested_tool_confirmations:
        return None
    user_content = _opening_message(events, start)
    calls = top.get_function_calls()
    if calls and top.content is not None and top.content.role == "model":
        waiting = top.long_running_tool_ids
        in_flight = tuple(c for c in calls if c.id and c.id not in waiting)
        if in_flight:
            return ResumePoint(
                invocation_id,
                top.run_id,
                "calls",
                top.author,
                user_content,
                top,
                model_event=top,
                calls=in_flight,
            )
        return None
    if top.get_function_responses():
        model_event: Event | None = None
        answered = {r.id for r in top.get_function_responses()}
        for index in range(top_index - 1, start - 1, -1):
            event = events[index]
            if event.author == top.author and any(
                c.id in answered for c in event.get_function_calls()
            ):
                model_event = event
                break
        return ResumePoint(
            invocation_id,
            top.run_id,
            "after_tools",
            top.author,
            user_content,
            top,
            model_event=model_event,
        )
    # Anything else (a compaction record): the next model call.
    return ResumePoint(invocation_id, top.run_id, "model", top.author, user_content, top)


def is_failure(event: Event) -> bool:
    """Whether `event` is the record a failed run ended on (issue 23)."""
    metadata = event.custom_metadata
    return metadata is not None and FAILURE in metadata


def _without_failure(events: Sequence[Event]) -> Sequence[Event]:
    """The log without the failure records it ends on: a failure is where a run stopped,
    not an answer, so the step before it is where a resume goes on."""
    end = len(events)
    while end and is_failure(events[end - 1]):
        end -= 1
    return events if end == len(events) else events[:end]
