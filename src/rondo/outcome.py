"""How a run ended, as plain records: `RunResult` (what `Runner.run_to_result` and
`Agent.run` return) and `ResumePoint` (where an interrupted invocation stopped, read from its
log by `rondo.resume`). Data only: the context, the loop and the agents use them without
importing the runner that makes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rondo.errors import RondoError
    from rondo.events import Event, PendingCall
    from rondo.lifecycle import RunMetrics
    from rondo.types import Content, FunctionCall

__all__ = ["Boundary", "ResumePoint", "RunResult"]


def _run_metrics() -> RunMetrics:
    from rondo.lifecycle import RunMetrics  # a records-only run never loads the lifecycle

    return RunMetrics()


@dataclass
class RunResult:
    """The full result of one run: `output` is the final text, or the validated object when
    the answering agent has an output schema."""

    output: Any
    events: list[Event]
    session_id: str
    text: str = ""
    run_id: str = ""
    pending: list[PendingCall] = field(default_factory=lambda: [])
    metrics: RunMetrics = field(default_factory=_run_metrics)
    is_abnormal: bool = False
    # Why the run did not produce its output: an `OutputValidationError` when the final
    # answer does not fit the answering agent's output schema (then `output` is None).
    error: RondoError | None = None


Boundary = Literal["model", "calls", "after_tools", "after_agent"]


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """The step boundary an invocation stopped at, and what resuming it needs (SPEC D1)."""

    invocation_id: str
    run_id: str
    # "model": call the model; "calls": run `calls` (of `model_event`); "after_tools": the
    # tool event `last` is stored, finish its step; "after_agent": the agent finished (the
    # last final answer in it is `last`), the workflow around it goes on after it.
    boundary: Boundary
    # The agent that was running ("" when only the user's message was stored).
    agent_name: str
    # The message that started the invocation (None when it continued a paused run).
    user_content: Content | None
    last: Event
    model_event: Event | None = None
    calls: tuple[FunctionCall, ...] = ()
    # "after_agent" under a parallel agent with branches left: the branches that finished
    # (the others run on resume).
    done: tuple[str, ...] = ()
