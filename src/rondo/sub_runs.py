"""Sub-runs: an agent answering as a tool runs in a session of its own, in the runner's
store (SPEC H4, D1, V5).

The runner installs a `SubRunner` on every invocation context (`ctx.sub_run`); `AgentTool`
and the Harness's `task` / `multitask` ask it for a run instead of building a runner with a
throwaway in-memory store. The nested session is keyed by the call that asked for it, so the
same call dispatched again — after a pause, or when an interrupted invocation resumes —
continues the same nested run instead of starting another:

- no session yet: create it (with the caller's state) and send the request;
- answers to calls it waits on: send them; the nested run continues where it paused (H3);
- an interrupted nested run (D1): continue it from its log, with no new message;
- otherwise (it finished, or it still waits on calls nobody answered): read it back.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Protocol

from rondo.context import SubRunOutcome
from rondo.events import Event, PendingCall
from rondo.resume import find_resume_point
from rondo.sessions.base import waiting_calls
from rondo.types import Content, FunctionResponse, Part

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent
    from rondo.context import AgentNode, Demand, InvocationContext
    from rondo.lifecycle import Item
    from rondo.run_config import RunConfig
    from rondo.sessions.base import BaseSessionService, Session
    from rondo.types import Message

__all__ = ["NestedRunner", "SubRunner"]


class NestedRunner(Protocol):
    """What a sub-run asks of the runner of its agent (`rondo.runner.Runner`): the store
    and app it runs in, and the one execution path."""

    @property
    def agent(self) -> BaseAgent: ...

    @property
    def app_name(self) -> str: ...

    @property
    def session_service(self) -> BaseSessionService: ...

    def execute(
        self,
        user_id: str,
        session_id: str,
        new_message: Message,
        run_config: RunConfig | None,
        state_delta: Mapping[str, object] | None,
        *,
        observe: bool,
        demand: Demand | None = None,
        guard: Any = None,
    ) -> AsyncGenerator[Item, None]: ...


class SubRunner:
    """Runs agents in nested sessions of one runner's store (see the module docstring).

    `runner_of(agent)` builds the runner of a nested agent (the same store, services and
    plugins as the caller's); one is built per agent and kept."""

    __slots__ = ("_runner_of", "_runners")

    def __init__(self, runner_of: Callable[[AgentNode], NestedRunner]) -> None:
        self._runner_of = runner_of
        self._runners: dict[int, NestedRunner] = {}

    def _runner_for(self, agent: AgentNode) -> NestedRunner:
        runner = self._runners.get(id(agent))
        if runner is None:
            runner = self._runners[id(agent)] = self._runner_of(agent)
        return runner

    async def __call__(
        self,
        ctx: InvocationContext,
        agent: AgentNode,
        *,
        session_id: str,
        request: Content,
        answers: list[FunctionResponse],
        state: Mapping[str, object] | None,
        on_item: Callable[[Any], None] | None,
    ) -> SubRunOutcome:
        runner = self._runner_for(agent)
        service = runner.session_service
        app_name, user_id = runner.app_name, ctx.user_id
        session = await service.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id
        )
        message: Content | None
        if session is None:
            await service.create_session(
                app_name=app_name, user_id=user_id, session_id=session_id, state=state
            )
            message = request
        else:
            message = _answers_for(session, answers)
            if message is None and not _resumable(session, runner.agent):
                return _outcome(session)
        execution = runner.execute(
            ctx.user_id,
            session_id,
            message,
            ctx.run_config,
            None,
            observe=on_item is not None,
            demand=ctx.demand,
            guard=ctx.guard,  # G6: the caller's budgets bound its sub-runs too
        )
        async with aclosing(execution) as items:
            async for item in items:
                if on_item is not None and not isinstance(item, Event):
                    on_item(item)
        stored = await service.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id
        )
        assert stored is not None  # the run just wrote to it
        return _outcome(stored)


def _answers_for(session: Session, answers: list[FunctionResponse]) -> Content | None:
    """The message that answers the calls the nested run waits on (None when none is)."""
    waiting = {p.call_id for p in session.pending}
    parts = [Part(function_response=a) for a in answers if a.id in waiting]
    return Content(role="user", parts=parts) if parts else None


def _resumable(session: Session, agent: BaseAgent) -> bool:
    """Whether the nested run was cut short (D1), or its answers are stored and it never
    went on with them."""
    events = session.events
    if find_resume_point(events, session.pending, agent) is not None:
        return True
    if not events:
        return False
    last = events[-1]
    return last.author == "user" and bool(last.get_function_responses())


def _outcome(session: Session) -> SubRunOutcome:
    """The nested run as its session holds it: the records of its latest run and what that
    run waits on, with the records of the waiting calls."""
    events = session.events
    run_id = next((e.run_id for e in reversed(events) if e.author != "user"), "")
    if run_id:
        mine = [e for e in events if e.run_id == run_id]
    else:  # records an agent made without the run's ids: those after the last message
        last_user = max((i for i, e in enumerate(events) if e.author == "user"), default=-1)
        mine = list(events[last_user + 1 :])
    pending: list[PendingCall] = [p for p in session.pending if p.run_id == run_id]
    return SubRunOutcome(
        session_id=session.id,
        events=mine,
        pending=pending,
        calls=waiting_calls(mine, pending),
    )
