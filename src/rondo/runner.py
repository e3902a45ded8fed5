"""The Runner: one invocation per user message, events up, history down (SPEC R1, R7, V).

`run_async` yields records (`Event`); `stream_async` yields the typed lifecycle view. Both
come from `_execute`, the one execution path: the lifecycle view only switches on the
construction of lifecycle objects inside the same loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypedDict, cast

from rondo.agents.base import BaseAgent, Item
from rondo.errors import (
    BudgetExceeded,
    ConfigurationError,
    GuardrailTripped,
    InvalidMessageError,
    OutputValidationError,
    RondoError,
)
from rondo.outcome import ResumePoint, RunResult

if TYPE_CHECKING:
    # Records, contexts, stores and the lifecycle classes load when a runner is built or
    # first runs: `from rondo import Runner` stays cheap (issue 8), and a records-only run
    # never needs the lifecycle classes.
    from rondo.artifacts.base import BaseArtifactService
    from rondo.context import AgentNode, Demand, InvocationContext
    from rondo.events import Event, PendingCall
    from rondo.lifecycle import LifecycleEvent, RunEnd, RunMetrics
    from rondo.memory.base import BaseMemoryService
    from rondo.models.live import LiveRequestQueue
    from rondo.plugins import Plugin
    from rondo.run_config import RunConfig
    from rondo.sessions.base import BaseSessionService, Session
    from rondo.sub_runs import SubRunner
    from rondo.types import Content, Message

__all__ = ["RunReport", "RunResult", "Runner"]

logger = logging.getLogger("rondo.runner")


def _run_metrics(**values: Any) -> RunMetrics:
    from rondo.lifecycle import RunMetrics

    return RunMetrics(**values)


def _as_content(message: Message) -> Content | None:
    from rondo.types import Content, Part

    if message is None:
        return None
    if isinstance(message, Content):
        if not message.parts:
            # Stored, it would vanish from every request (empty contents are dropped), so the
            # model would answer a message nobody sees; ADK's runner refuses it too.
            raise InvalidMessageError(
                "new_message has no parts; pass None to continue a paused run without one"
            )
        return message
    if isinstance(message, str):
        return Content.user(message)
    if isinstance(message, Part):
        return Content(role="user", parts=[message])
    items: list[object] = list(message) if isinstance(message, Sequence) else [message]  # pyright: ignore[reportUnnecessaryIsInstance]
    parts = [p for p in items if isinstance(p, Part)]
    if parts and len(parts) == len(items):
        return Content(role="user", parts=parts)
    raise InvalidMessageError(
        "new_message must be Content, str, a Part, a list of Part or None, got "
        f"{type(message).__name__}"
    )


class _Summary:
    """What `RunEnd` / `RunResult` report, gathered from the records as they pass."""

    __slots__ = (
        "cache_write_tokens",
        "cached_tokens",
        "cost_usd",
        "final",
        "free_calls",
        "input_tokens",
        "last",
        "output_tokens",
        "priced_calls",
        "started",
        "stopped",
        "tool_calls",
        "unpriced_calls",
    )

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.final: Event | None = None
        self.last: Event | None = None
        self.tool_calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cached_tokens = 0
        self.cache_write_tokens = 0
        self.cost_usd = 0.0
        self.priced_calls = 0
        self.unpriced_calls = 0
        self.free_calls = 0
        # G6: the guardrail or budget that ended the run, if one did.
        self.stopped: RondoError | None = None

    def record(self, event: Event) -> None:
        self.last = event
        if event.partial:
            return
        usage = event.usage
        if usage is not None:
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
            self.cached_tokens += usage.cached_tokens
            self.cache_write_tokens += usage.cache_write_tokens
            if usage.cost_usd is None:
                self.unpriced_calls += 1
            else:
                self.priced_calls += 1
                self.cost_usd += usage.cost_usd
                self.free_calls += usage.free
        content = event.content
        if content is not None and content.role == "user" and event.author != "user":
            self.tool_calls += sum(1 for p in content.parts if p.function_response is not None)
        if event.author != "user" and event.is_final_response() and event.text:
            self.final = event

    def text(self) -> str:
        return self.final.text if self.final is not None else ""

    def output(self, root: BaseAgent) -> tuple[Any, RondoError | None]:
        """The run's output, or the reason its final answer is not one (S2: an answer that
        does not fit the output schema is never passed off as the result)."""
        from rondo.agents.llm import Agent

        final = self.final
        if final is None:
            return None, None
        agent = root.find_agent(final.author)
        if isinstance(agent, Agent) and agent.output_schema is not None:
            try:
                return agent.parse_output(final.text), None
            except OutputValidationError as exc:
                return None, exc
        return final.text, None

    def metrics(self, ctx: InvocationContext) -> RunMetrics:
        return _run_metrics(
            model_calls=ctx.llm_calls,
            tool_calls=self.tool_calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            total_tokens=self.input_tokens + self.output_tokens,
            cached_tokens=self.cached_tokens,
            cache_write_tokens=self.cache_write_tokens,
            # O6: unpriced (None) as soon as one call has no price; never a partial sum.
            cost_usd=self.cost_usd if self.priced_calls and not self.unpriced_calls else None,
            unpriced_calls=self.unpriced_calls,
            free_calls=self.free_calls,
            duration_ms=(time.perf_counter() - self.started) * 1000.0,
        )

    @property
    def abnormal(self) -> bool:
        return self.last is not None and self.last.partial

    def report(self, ctx: InvocationContext, root: BaseAgent) -> RunReport:
        """What the run's `RunEnd` and `RunResult` report (`error`: an exception)."""
        output, error = self.output(root)
        stopped = self.stopped
        if stopped is not None:
            error = stopped
        return {
            "text": self.text(),
            "output": output,
            "metrics": self.metrics(ctx),
            "is_abnormal": self.abnormal or error is not None,
            "pending": [p for p in ctx.session.pending if p.run_id == ctx.run_id],
            "error": error,
            "run_id": ctx.run_id,
        }


class Runner:
    """Binds an app name, a root agent, services and plugins; runs invocations."""

    def __init__(
        self,
        *,
        agent: BaseAgent,
        app_name: str = "rondo",
        session_service: BaseSessionService | None = None,
        artifact_service: BaseArtifactService | None = None,
        memory_service: BaseMemoryService | None = None,
        plugins: Sequence[Plugin] = (),
    ) -> None:
        from rondo.plugins import PluginManager
        from rondo.sessions.memory import InMemorySessionService

        if not isinstance(agent, BaseAgent):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"Runner needs an agent, got {agent!r}")
        self.agent = agent
        self.app_name = app_name
        self.session_service: BaseSessionService = session_service or InMemorySessionService()
        self.artifact_service = artifact_service
        self.memory_service = memory_service
        self.plugin_manager = PluginManager(plugins)
        self._sub_runner: SubRunner | None = None

    # -- public entry points ------------------------------------------------------------------

    def run_async(
        self,
        *,
        user_id: str,
        session_id: str,
        new_message: Message = None,
        run_config: RunConfig | None = None,
        state_delta: Mapping[str, object] | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Run one invocation and yield its records; each is stored before it is yielded.

        (The execution itself, asked for records only: no wrapping generator around it.)"""
        records = self.execute(
            user_id,
            session_id,
            new_message,
            run_config,
            state_delta,
            observe=False,
            records_only=True,
        )
        return cast("AsyncGenerator[Event, None]", records)

    def stream_async(
        self,
        *,
        user_id: str,
        session_id: str,
        new_message: Message = None,
        run_config: RunConfig | None = None,
        state_delta: Mapping[str, object] | None = None,
    ) -> AsyncGenerator[LifecycleEvent, None]:
        """Run one invocation and yield the lifecycle view (`RunStart` … `RunEnd`).

        Streams model output (`streaming_mode="sse"`) unless `run_config` says otherwise.
        """
        from rondo.run_config import RunConfig

        config = run_config or RunConfig(streaming_mode="sse")
        return _lifecycle(
            self.execute(user_id, session_id, new_message, config, state_delta, observe=True)
        )

    def run(
        self,
        *,
        user_id: str,
        session_id: str,
        new_message: Message = None,
        run_config: RunConfig | None = None,
        state_delta: Mapping[str, object] | None = None,
    ) -> Iterator[Event]:
        """`run_async` for synchronous code."""
        from rondo._sync import iterate_sync

        return iterate_sync(
            lambda: self.run_async(
                user_id=user_id,
                session_id=session_id,
                new_message=new_message,
                run_config=run_config,
                state_delta=state_delta,
            )
        )

    async def run_to_result(
        self,
        *,
        user_id: str,
        session_id: str | None = None,
        new_message: Message = None,
        run_config: RunConfig | None = None,
    ) -> RunResult:
        """Run one invocation to the end and return its `RunResult` (no lifecycle objects)."""
        from rondo.events import Event

        if session_id is None:
            session_id = await self.new_session_id(user_id)
        events: list[Event] = []
        reports: list[RunReport] = []
        execution = self.execute(
            user_id, session_id, new_message, run_config, None, observe=False, reports=reports
        )
        async with aclosing(execution) as items:
            async for item in items:
                if isinstance(item, Event) and not item.partial:
                    events.append(item)
        return RunResult(events=events, session_id=session_id, **reports[-1])

    def run_sync(
        self,
        *,
        user_id: str,
        session_id: str | None = None,
        new_message: Message = None,
        run_config: RunConfig | None = None,
    ) -> RunResult:
        from rondo._sync import run_coroutine_sync

        return run_coroutine_sync(
            lambda: self.run_to_result(
                user_id=user_id,
                session_id=session_id,
                new_message=new_message,
                run_config=run_config,
            )
        )

    def run_live(
        self,
        *,
        user_id: str,
        session_id: str,
        live_request_queue: LiveRequestQueue,
        run_config: RunConfig | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Run a live call (SPEC L1): what is written to `live_request_queue` goes to the
        agent's live model over one connection; yields its records (partials included),
        each stored before it is yielded. Ends when the queue is closed or the model ends
        the call; a connection that cannot be (re)opened raises `LiveConnectError`."""
        return _records(
            self._execute_live(user_id, session_id, live_request_queue, run_config, observe=False)
        )

    def stream_live(
        self,
        *,
        user_id: str,
        session_id: str,
        live_request_queue: LiveRequestQueue,
        run_config: RunConfig | None = None,
    ) -> AsyncGenerator[LifecycleEvent, None]:
        """`run_live` as the lifecycle view: `RunStart`, per turn `ReasonStart` /
        `ReasonDelta` / `ReasonEnd`, tool events, `HITLPending`, `RunEnd`."""
        return _lifecycle(
            self._execute_live(user_id, session_id, live_request_queue, run_config, observe=True)
        )

    async def _execute_live(
        self,
        user_id: str,
        session_id: str,
        queue: LiveRequestQueue,
        run_config: RunConfig | None,
        *,
        observe: bool,
    ) -> AsyncGenerator[Item, None]:
        from rondo._ids import new_invocation_id, new_run_id
        from rondo.agents.llm import Agent
        from rondo.context import InvocationContext
        from rondo.events import Event
        from rondo.run_config import RunConfig

        session = await self.session_service.get_or_create_session(
            app_name=self.app_name, user_id=user_id, session_id=session_id
        )
        agent = self._agent_to_run(session, None)
        if not isinstance(agent, Agent):
            raise ConfigurationError(
                f"a live call runs an LLM agent; {agent.name!r} is a {type(agent).__name__}"
            )
        # Compaction is off in live (seed 000 §4.9): the history is sent once, at connect.
        config = (run_config or RunConfig()).model_copy(update={"compaction": None})
        ctx = InvocationContext(
            app_name=self.app_name,
            user_id=user_id,
            session=session,
            session_service=self.session_service,
            plugins=self.plugin_manager,
            invocation_id=new_invocation_id(),
            run_id=new_run_id(),
            agent=agent,
            root_agent=self.agent,
            run_config=config,
            artifact_service=self.artifact_service,
            memory_service=self.memory_service,
            observe=observe,
        )
        summary = _Summary()
        if observe:
            from rondo.lifecycle import RunStart

            yield RunStart(**ctx.correlation(), session_id=session_id, user_id=user_id)
        early = await self._before_run(ctx)
        if early is not None:
            summary.record(early)
            yield early
        else:
            async with aclosing(agent.run_live(ctx, queue)) as items:
                async for item in items:
                    if isinstance(item, Event):
                        item = await self._on_event(ctx, item)
                        summary.record(item)
                    yield item
            if "after_run" in self.plugin_manager.active:
                await self.plugin_manager.run("after_run", ctx)
        if observe:
            yield _run_end(ctx, summary.report(ctx, self.agent))

    async def close(self) -> None:
        """Close the toolsets of every agent in the tree (MCP connections, processes) and the
        HTTP clients their models opened in this event loop (a model used again opens anew).

        Left open, a client's keep-alive connection outlives the loop and is only found,
        unclosed, by the garbage collector (a server shutting down, a test ending)."""
        from rondo.agents.llm import Agent
        from rondo.tools.base import BaseToolset

        models: dict[int, object] = {}
        for agent in self.agent.walk():
            if isinstance(agent, Agent):
                for entry in agent.tools:
                    if isinstance(entry, BaseToolset):
                        await entry.close()
                if agent.model is not None:
                    models.setdefault(id(agent.model), agent.model)
        for model in models.values():
            aclose: Callable[[], Awaitable[None]] | None = getattr(model, "aclose", None)
            if aclose is not None:
                await aclose()

    async def __aenter__(self) -> Runner:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def rewind_async(
        self,
        *,
        user_id: str,
        session_id: str,
        rewind_before_invocation_id: str,
        expected_version: int | None = None,
    ) -> Event:
        """google-adk's rewind: the session reads as it was before that invocation — events,
        session state (the state it was created with included) and artifact versions — and
        the next message goes to the agent that would have answered then.

        One record appended to the log (`rondo.sessions.rewind`): nothing is copied or
        deleted, the rewound records stay listed in `Session.rewound`. Raises
        `InvocationNotFoundError` for an invocation the visible history lacks and
        `StaleSessionError` when the session moved past `expected_version` (or on a
        concurrent append). Returns the rewind record."""
        from rondo.sessions.rewind import rewind_session

        return await rewind_session(
            self.session_service,
            app_name=self.app_name,
            user_id=user_id,
            session_id=session_id,
            rewind_before_invocation_id=rewind_before_invocation_id,
            expected_version=expected_version,
        )

    async def fork_async(
        self,
        *,
        user_id: str,
        session_id: str,
        before_invocation_id: str | None = None,
        new_session_id: str | None = None,
    ) -> Session:
        """A new session with the history before that invocation (all of it by default) and
        the session state it had then; the original is untouched."""
        from rondo.sessions.rewind import fork_session

        return await fork_session(
            self.session_service,
            app_name=self.app_name,
            user_id=user_id,
            session_id=session_id,
            before_invocation_id=before_invocation_id,
            new_session_id=new_session_id,
        )

    async def delete_session_async(self, *, user_id: str, session_id: str) -> None:
        """Delete the session and its events (a missing one is not an error), and what the
        app's models cached for it at their providers (Gemini's explicit cached contents,
        issue 25); those a model cannot delete lapse by their TTL."""
        await self.session_service.delete_session(
            app_name=self.app_name, user_id=user_id, session_id=session_id
        )
        await self.release_session_caches(user_id=user_id, session_id=session_id)

    async def release_session_caches(self, *, user_id: str, session_id: str) -> int:
        """Delete the provider-side caches the app's models made for the session (the
        server calls this after deleting a session itself); how many were deleted."""
        from rondo.agents.llm import Agent
        from rondo.models.base import SessionCacheHolder, session_cache_key

        key = session_cache_key(self.app_name, user_id, session_id)
        seen: set[int] = set()
        deleted = 0
        for agent in self.agent.walk():
            model = agent.model if isinstance(agent, Agent) else None
            if isinstance(model, SessionCacheHolder) and id(model) not in seen:
                seen.add(id(model))
                deleted += await model.release_session(key)
        return deleted

    async def new_session_id(self, user_id: str) -> str:
        import uuid

        session = await self.session_service.create_session(
            app_name=self.app_name, user_id=user_id, session_id=uuid.uuid4().hex
        )
        return session.id

    # -- the one execution path ---------------------------------------------------------------

    async def execute(
        self,
        user_id: str,
        session_id: str,
        new_message: Message,
        run_config: RunConfig | None,
        state_delta: Mapping[str, object] | None,
        *,
        observe: bool,
        reports: list[RunReport] | None = None,
        demand: Demand | None = None,
        guard: Any = None,
        records_only: bool = False,
    ) -> AsyncGenerator[Item, None]:
        """The one execution path behind every entry point: yields records and, with
        `observe`, the lifecycle events built alongside them. `reports`, when given, gets
        what `RunResult` reports. A sub-run passes its caller's `demand` and
        budget keeper (`guard`: one budget for the run and the agents it runs as tools).
        `records_only`: yield nothing but records (what `run_async` hands out)."""
        from rondo.events import Event

        ctx, resumed = await self._begin(
            user_id,
            session_id,
            _as_content(new_message),
            run_config,
            state_delta,
            observe,
            demand,
        )
        if guard is not None:
            ctx.guard = guard
        # R7: while the consumer holds an item, work beside the loop starts nothing new (a
        # sub-run's caller does that for it).
        own = ctx.demand if demand is None else None
        pause, resume = (_noop, _noop) if own is None else (own.pause, own.resume)
        # What RunEnd and RunResult report, kept only when one of them is asked for.
        summary = _Summary() if observe or reports is not None else None
        if observe:
            from rondo.lifecycle import RunStart

            pause()
            yield RunStart(
                **ctx.correlation(), session_id=session_id, user_id=user_id, resumed=resumed
            )
            resume()
        plugins = self.plugin_manager
        early = await self._before_run(ctx)
        if early is not None:
            if summary is not None:
                summary.record(early)
            pause()
            yield early
            resume()
        else:
            stopped: GuardrailTripped | BudgetExceeded | None = None
            try:
                items = ctx.agent.run_async(ctx)
                try:
                    async for item in items:
                        if isinstance(item, Event):
                            item = await self._on_event(ctx, item)
                            if summary is not None:
                                summary.record(item)
                        elif records_only:
                            continue
                        if own is None:
                            yield item
                            continue
                        own.paused = True  # (pause and resume, in line: once per item)
                        yield item
                        own.paused = False
                        if own._waiters is not None:  # pyright: ignore[reportPrivateUsage]
                            own.wake()
                finally:
                    await items.aclose()
            except (GuardrailTripped, BudgetExceeded) as exc:
                if not exc.ends_run_cleanly:
                    raise
                # G6: a guardrail or a budget ended the run; it ends cleanly, on a record
                # that says why (stored where it stopped, or here when a hook raised it).
                stopped = exc
                records = _after_stop(ctx, exc)
                if not exc.recorded:
                    records.append(_stop_record(ctx, exc))
                for record in records:
                    record = await self._on_event(ctx, record)
                    if summary is not None:
                        summary.record(record)
                    pause()
                    yield record
                    resume()
            except Exception as exc:
                # A failure nobody recovered (a model error, a raising hook) ends the run on
                # a record that says so, then is raised as before: the error survives in the
                # log, so a reloaded conversation shows it and the run reads `failed`.
                record = await self._failure_record(ctx, exc)
                if record is not None:
                    if summary is not None:
                        summary.record(record)
                    pause()
                    yield record
                    resume()
                raise
            if "after_run" in plugins.active:
                await plugins.run("after_run", ctx)
            if stopped is not None and summary is not None:
                summary.stopped = stopped
        if summary is None:
            return
        report = summary.report(ctx, self.agent)
        if reports is not None:
            reports.append(report)
        if observe:
            yield _run_end(ctx, report)

    async def _failure_record(self, ctx: InvocationContext, exc: Exception) -> Event | None:
        """The stored record of a failed run (`error_code`: the exception's type), or None
        for a failure of the store itself, which has nowhere to keep it."""
        from rondo.errors import DurableReplayError, SessionError

        if isinstance(exc, SessionError | DurableReplayError):
            return None
        events = ctx.session.events
        last = events[-1] if events else None
        if last is not None and last.invocation_id == ctx.invocation_id and last.error_code:
            return None  # the failure is on record already (a model's error response)
        author = next(
            (
                e.author
                for e in reversed(events)
                if e.invocation_id == ctx.invocation_id and e.author != "user"
            ),
            ctx.agent.name,
        )
        from rondo.events import FAILURE

        record = ctx.new_event(
            author,
            error_code=type(exc).__name__,
            error_message=_failure_message(exc),
            custom_metadata={FAILURE: True},
        )
        try:
            return await self._on_event(ctx, record)
        except Exception:  # the store failed too: the original error is what to raise
            logger.warning("could not store the failure of run %s", ctx.run_id, exc_info=True)
            return None

    async def _begin(
        self,
        user_id: str,
        session_id: str,
        message: Content | None,
        run_config: RunConfig | None,
        state_delta: Mapping[str, object] | None,
        observe: bool,
        demand: Demand | None = None,
    ) -> tuple[InvocationContext, bool]:
        """Get or create the session, pick the run and the agent, store the user's message."""
        from rondo._ids import new_invocation_id
        from rondo.context import InvocationContext
        from rondo.events import EventActions

        service = self.session_service
        session = await service.get_or_create_session(
            app_name=self.app_name, user_id=user_id, session_id=session_id
        )
        point = None
        if message is None and not state_delta:
            from rondo.resume import find_resume_point

            point = find_resume_point(session.events, session.pending, self.agent)
        if point is not None:
            # D1: continue the interrupted invocation where its log ends: same ids, the
            # agent that was running, no new user event.
            return self._resume_context(user_id, session, point, run_config, observe, demand), True
        run_id, resumed = self._run_id_for(session, message)
        agent = self._agent_to_run(session, message)
        continue_in = None
        if resumed and agent is not self.agent:
            from rondo.agents.workflow import enclosing_workflow

            # H3: the paused run continues in the agent that made the answered calls, inside
            # the workflow agents around it, so the agents after it run once it is done.
            outer, _ = enclosing_workflow(agent, "")
            if outer is not agent:
                continue_in, agent = agent.name, outer
        ctx = InvocationContext(
            app_name=self.app_name,
            user_id=user_id,
            session=session,
            session_service=service,
            plugins=self.plugin_manager,
            invocation_id=new_invocation_id(),
            run_id=run_id,
            agent=agent,
            root_agent=self.agent,
            run_config=run_config,
            user_content=message,
            artifact_service=self.artifact_service,
            memory_service=self.memory_service,
            observe=observe,
            demand=demand,
        )
        ctx.sub_run = self._sub_runs()
        ctx.guard = _guard(ctx)
        if continue_in is not None:
            ctx.continue_in(continue_in)
        if message is None and not state_delta:
            return ctx, resumed
        plugins = self.plugin_manager
        if message is not None and "on_user_message" in plugins.active:
            replaced = await plugins.run("on_user_message", ctx, message)
            if replaced is not None:
                message = ctx.user_content = replaced
        saved: dict[str, int] = {}
        if message is not None and ctx.run_config.save_input_blobs_as_artifacts:
            message, saved = await self._save_input_blobs(ctx, message)
        # R1: the user's message is stored, not yielded back.
        user_event = ctx.new_event(
            "user",
            content=message,
            actions=EventActions(state_delta=dict(state_delta or {}), artifact_delta=saved),
        )
        await self._append(ctx, user_event)
        return ctx, resumed

    async def _save_input_blobs(
        self, ctx: InvocationContext, message: Content
    ) -> tuple[Content, dict[str, int]]:
        """W8: the message's inline files saved as artifacts, referenced in its place."""
        from rondo.artifacts.inputs import save_input_blobs

        if self.artifact_service is None:
            raise ConfigurationError(
                "RunConfig(save_input_blobs_as_artifacts=True) needs an artifact service on "
                "the Runner (artifact_service=...)"
            )
        message, saved = await save_input_blobs(
            message,
            self.artifact_service,
            app_name=self.app_name,
            user_id=ctx.user_id,
            session_id=ctx.session.id,
            invocation_id=ctx.invocation_id,
        )
        ctx.user_content = message
        return message, saved

    def _resume_context(
        self,
        user_id: str,
        session: Session,
        point: ResumePoint,
        run_config: RunConfig | None,
        observe: bool,
        demand: Demand | None,
    ) -> InvocationContext:
        from rondo._ids import new_run_id
        from rondo.context import InvocationContext

        branch = point.last.branch  # a sub-agent of a parallel agent continues on its own
        # After an agent finished, the branch is read from the last record's author (the
        # agent named may be a workflow that finished with it).
        name = point.last.author if point.boundary == "after_agent" else point.agent_name
        agent = self.agent.find_agent(name) if name else None
        if agent is None:
            agent = self._agent_to_run(session, point.user_content)
        else:
            from rondo.agents.workflow import enclosing_workflow

            agent, branch = enclosing_workflow(agent, branch)
        ctx = InvocationContext(
            app_name=self.app_name,
            user_id=user_id,
            session=session,
            session_service=self.session_service,
            plugins=self.plugin_manager,
            invocation_id=point.invocation_id,
            run_id=point.run_id or new_run_id(),
            agent=agent,
            root_agent=self.agent,
            run_config=run_config,
            user_content=point.user_content,
            branch=branch,
            artifact_service=self.artifact_service,
            memory_service=self.memory_service,
            observe=observe,
            demand=demand,
        )
        ctx.set_resume_point(point)
        ctx.sub_run = self._sub_runs()
        ctx.guard = _guard(ctx)
        return ctx

    def _sub_runs(self) -> SubRunner:
        """H4: how agents answering as tools run in sessions of their own, in this store."""
        runner = self._sub_runner
        if runner is None:
            from rondo.sub_runs import SubRunner

            runner = self._sub_runner = SubRunner(self._nested)
        return runner

    def _nested(self, agent: AgentNode) -> Runner:
        """The runner of an agent that runs as a tool of this one: the same store, services
        and plugins (a subclass builds its own kind)."""
        if not isinstance(agent, BaseAgent):
            raise ConfigurationError(f"only an agent runs as a tool, got {agent!r}")
        return type(self)(
            agent=agent,
            app_name=self.app_name,
            session_service=self.session_service,
            artifact_service=self.artifact_service,
            memory_service=self.memory_service,
            plugins=self.plugin_manager.plugins,
        )

    async def _before_run(self, ctx: InvocationContext) -> Event | None:
        """A plugin's `before_run` answer replaces the agent's run: stored, then yielded."""
        plugins = self.plugin_manager
        if "before_run" not in plugins.active:
            return None
        early = await plugins.run("before_run", ctx)
        if early is None:
            return None
        from rondo.types import Content

        event = ctx.new_event(
            self.agent.name,
            content=early if isinstance(early, Content) else Content.model(str(early)),
        )
        await self._append(ctx, event)
        return event

    async def _on_event(self, ctx: InvocationContext, event: Event) -> Event:
        """R1: plugins' on_event, then store (non-partial), then the caller sees it."""
        plugins = self.plugin_manager
        if "on_event" in plugins.active:
            replaced = await plugins.run("on_event", ctx, event)
            if replaced is not None:
                event = replaced
        if not event.partial:
            event = await self._append(ctx, event)
        return event

    async def _append(self, ctx: InvocationContext, event: Event) -> Event:
        """Store `event`; returns the stored record (without `temp:` keys)."""
        from rondo.sessions.base import TEMP_PREFIX

        delta = event.actions.state_delta
        if delta:
            # temp: keys live for this invocation only; the store drops them (SPEC R3).
            for key, value in delta.items():
                if key.startswith(TEMP_PREFIX):
                    ctx.temp_state[key] = value
        return await self.session_service.append_event(ctx.session, event)

    # -- choosing the run and the agent -------------------------------------------------------

    @staticmethod
    def _run_id_for(session: Session, message: Content | None) -> tuple[str, bool]:
        """A message that only answers pending calls continues their run; else a new run."""
        from rondo._ids import new_run_id

        pending = session.pending
        if message is None:
            # An empty message continues a paused run: pending calls, or an answer that
            # other code already stored as the latest event.
            if pending:
                return pending[-1].run_id or new_run_id(), True
            answered = _answered_run_id(session.events)
            if answered:
                return answered, True
            return new_run_id(), False
        if pending:
            ids = [p.function_response.id for p in message.parts if p.function_response is not None]
            if ids and len(ids) == len(message.parts):
                by_id = {p.call_id: p for p in pending}
                matched = [by_id[i] for i in ids if i in by_id]
                if matched and len(matched) == len(ids):
                    return matched[0].run_id or new_run_id(), True
        return new_run_id(), False

    def _agent_to_run(self, session: Session, message: Content | None) -> BaseAgent:
        """X3: a function response (in the message, or stored by other code as the latest
        event before an empty message) goes to the agent that made the call; otherwise the
        agent that answered last, when it may hand control back by transfer; otherwise the
        root."""
        root = self.agent
        events = session.events
        # The answers: the message's, or those other code stored as the latest event.
        answers = message
        if answers is None and events and events[-1].author == "user":
            answers = events[-1].content
        if answers is not None:
            call_ids = {p.function_response.id for p in answers.parts if p.function_response}
            call_ids.discard(None)
            if call_ids:
                for event in reversed(events):
                    if event.author == "user":
                        continue
                    if any(c.id in call_ids for c in event.get_function_calls()):
                        found = root.find_agent(event.author)
                        if found is not None:
                            return found
                        break
        for event in reversed(events):
            if event.author == "user":
                continue
            if event.author == root.name:
                return root
            agent = root.find_sub_agent(event.author)
            if agent is not None and _may_transfer_back(agent):
                return agent
        return root


class RunReport(TypedDict):
    """What a run reports (`RunResult`'s fields beside its records; `RunEnd`)."""

    text: str
    output: object
    metrics: RunMetrics
    is_abnormal: bool
    pending: list[PendingCall]
    error: RondoError | None
    run_id: str


def _run_end(ctx: InvocationContext, report: RunReport) -> RunEnd:
    from rondo.lifecycle import RunEnd

    error = report["error"]
    return RunEnd(
        **ctx.correlation(),
        text=report["text"],
        output=report["output"],
        metrics=report["metrics"],
        is_abnormal=report["is_abnormal"],
        pending=report["pending"],
        error=str(error) if error is not None else None,
        error_type=type(error).__name__ if error is not None else None,
    )


async def _records(execution: AsyncGenerator[Item, None]) -> AsyncGenerator[Event, None]:
    """The records of an execution (`run_async`, `run_live`)."""
    from rondo.events import Event

    async with aclosing(execution) as items:
        async for item in items:
            if isinstance(item, Event):
                yield item


async def _lifecycle(execution: AsyncGenerator[Item, None]) -> AsyncGenerator[LifecycleEvent, None]:
    """The lifecycle view of an execution (`stream_async`, `stream_live`)."""
    from rondo.events import Event

    async with aclosing(execution) as items:
        async for item in items:
            if not isinstance(item, Event):
                yield item


def _failure_message(exc: Exception) -> str:
    """What the log keeps of a failure, for whoever reads the session: rondo's own message
    (written for users: a provider's status, which budget), else the type only — another
    exception's text may hold paths, hosts or secrets, and the raise carries it whole."""
    if isinstance(exc, RondoError):
        return (str(exc) or type(exc).__name__)[:2000]
    return f"the run failed with {type(exc).__name__} (the application's log has the details)"


def _noop() -> None:
    pass


def _guard(ctx: InvocationContext) -> Any:
    """G6: the run's budget keeper; None (nothing checked) when the run sets no budget."""
    config = ctx.run_config
    if config.budget is None and config.session_budget is None:
        return None
    from rondo.flow.guards import RunGuard

    return RunGuard(config, ctx.session.events)


def _after_stop(ctx: InvocationContext, exc: GuardrailTripped | BudgetExceeded) -> list[Event]:
    """G6: responses for the calls a stop cut short (a parallel branch's call in flight)."""
    from rondo.flow.guards import answer_unanswered

    pending = {p.call_id for p in ctx.session.pending}
    return answer_unanswered(ctx.session.events, ctx.invocation_id, pending, exc)


def _stop_record(ctx: InvocationContext, exc: GuardrailTripped | BudgetExceeded) -> Event:
    from rondo.flow.guards import stop_record

    return stop_record(ctx, exc, author=exc.agent_name or ctx.agent.name)


def _answered_run_id(events: Sequence[Event]) -> str | None:
    """The run whose calls the latest (user-authored) function responses answer."""
    if not events:
        return None
    last = events[-1]
    if last.author != "user":
        return None
    ids = {r.id for r in last.get_function_responses() if r.id}
    if not ids:
        return None
    for event in reversed(events):
        if event.author != "user" and any(c.id in ids for c in event.get_function_calls()):
            return event.run_id or None
    return None


def _may_transfer_back(agent: BaseAgent) -> bool:
    from rondo.agents.llm import Agent

    # Every agent on the way up, the root included, must be an LLM agent: a workflow agent
    # in between owns the order of its children, so control returns to the root.
    node: BaseAgent | None = agent
    while node is not None:
        if not isinstance(node, Agent):
            return False
        if node.parent_agent is not None and (
            node.mode != "chat" or node.disallow_transfer_to_parent
        ):
            return False
        node = node.parent_agent
    return True
