"""Contexts handed to agents, callbacks and tools.

`InvocationContext` is the runtime's own view of one invocation. Callbacks get a
`CallbackContext` and tools a `ToolContext`: both write state through `State`, which records
every write as a delta on their `Actions` — the mutable draft of the frozen `EventActions` the
event will carry (the runner applies it when the event is stored).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Unpack

from rondo._state_values import check_state_value
from rondo.errors import ConfigurationError, ReadOnlyStateError
from rondo.events import (
    NO_ACTIONS,
    Event,
    EventActions,
    EventFields,
    PendingCall,
    ToolConfirmation,
)
from rondo.run_config import RunConfig
from rondo.sessions.base import TEMP_PREFIX, BaseSessionService, Session
from rondo.types import Content, FunctionCall, FunctionResponse, Part

if TYPE_CHECKING:
    from rondo.artifacts.base import BaseArtifactService
    from rondo.errors import BudgetExceeded
    from rondo.lifecycle import Correlation, Item, LifecycleEvent
    from rondo.memory.base import BaseMemoryService, SearchMemoryResponse
    from rondo.outcome import ResumePoint
    from rondo.telemetry import AgentTrace

__all__ = [
    "Actions",
    "AgentNode",
    "Budgets",
    "CallbackContext",
    "Demand",
    "InvocationContext",
    "NestedPause",
    "ReadonlyContext",
    "State",
    "SubRun",
    "SubRunOutcome",
    "ToolContext",
]

_MISSING = object()


class AgentNode(Protocol):
    """An agent as the layers below the agents see it: a name in a tree, how a parent
    reaches it, and its run. `rondo.agents.base.BaseAgent` implements it; the context, the
    tools and the loop ask an agent through these members, never by its class."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parent_agent(self) -> AgentNode | None: ...
    @property
    def sub_agents(self) -> Sequence[AgentNode]: ...
    @property
    def root_agent(self) -> AgentNode: ...

    # Whether it picks, with its model, who answers next (SPEC X1).
    transfers: ClassVar[bool]

    @property
    def reached_by_call(self) -> bool:
        """Whether a parent reaches it by a tool call rather than by transfer (X1, C2)."""
        ...

    @property
    def global_instruction(self) -> str | Callable[..., object]:
        """The instruction a root agent gives every LLM agent below it (SPEC P4)."""
        ...

    def find_agent(self, name: str) -> AgentNode | None: ...
    def answer_of(self, text: str) -> dict[str, object]:
        """The tool response it gives for its final `text` when it answers as a tool."""
        ...

    def run_async(self, parent_context: InvocationContext, /) -> AsyncGenerator[Item, None]: ...


class Budgets(Protocol):
    """A run's budgets as the loop checks them (`rondo.flow.guards.RunGuard`, SPEC G6): the
    loop counts and compares in line (issue 24.7), calling in only to decide or to stop."""

    model_calls: int
    reported: int
    tokens: int
    cost: float | None
    call_limit: float
    token_limit: float
    deadline: float
    exact: bool

    def before_model(self) -> BudgetExceeded | None: ...
    def admit(
        self, calls: Sequence[FunctionCall]
    ) -> tuple[dict[str, dict[str, object]], BudgetExceeded | None]: ...


@dataclass(slots=True)
class Actions:
    """The side effects a callback or tool is recording: the mutable draft of the frozen
    `EventActions` its event will carry (`tool_context.actions.escalate = True`)."""

    state_delta: dict[str, object] = field(default_factory=dict[str, object])
    artifact_delta: dict[str, int] = field(default_factory=dict[str, int])
    transfer_to_agent: str | None = None
    escalate: bool | None = None
    skip_summarization: bool | None = None
    requested_tool_confirmations: dict[str, ToolConfirmation] = field(
        default_factory=dict[str, ToolConfirmation]
    )

    def is_empty(self) -> bool:
        return (
            not self.state_delta
            and not self.artifact_delta
            and self.transfer_to_agent is None
            and not self.escalate
            and not self.skip_summarization
            and not self.requested_tool_confirmations
        )

    def to_record(self) -> EventActions:
        """The frozen record of what was recorded so far (later writes do not change it)."""
        if self.is_empty():
            return NO_ACTIONS
        return EventActions(
            state_delta=dict(self.state_delta),
            artifact_delta=dict(self.artifact_delta),
            transfer_to_agent=self.transfer_to_agent,
            escalate=self.escalate,
            skip_summarization=self.skip_summarization,
            requested_tool_confirmations=dict(self.requested_tool_confirmations),
        )


class State(Mapping[str, object]):
    """The merged state view (session, `app:`, `user:`, `temp:`) with writes recorded as a delta.

    Reads see this context's own writes first. With `readonly`, writes raise `TypeError`.
    """

    __slots__ = ("_base", "_delta", "_readonly", "_temp")

    def __init__(
        self,
        base: Mapping[str, object],
        temp: Mapping[str, object],
        delta: dict[str, object] | None = None,
        *,
        readonly: bool = False,
    ) -> None:
        self._base = base
        self._temp = temp
        self._delta: dict[str, object] = {} if delta is None else delta
        self._readonly = readonly

    def __getitem__(self, key: str) -> Any:
        delta = self._delta
        if key in delta:
            return delta[key]
        if key.startswith(TEMP_PREFIX):
            return self._temp[key]
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        if key in self._delta:
            return True
        if isinstance(key, str) and key.startswith(TEMP_PREFIX):
            return key in self._temp
        return key in self._base

    def get(self, key: str, default: Any = None) -> Any:
        value = self._delta.get(key, _MISSING)
        if value is not _MISSING:
            return value
        if key.startswith(TEMP_PREFIX):
            return self._temp.get(key, default)
        return self._base.get(key, default)

    def __setitem__(self, key: str, value: object) -> None:
        if self._readonly:
            raise ReadOnlyStateError(
                "this context's state is read-only; write state from a callback or tool"
            )
        # G3: a value every store can keep, checked now — in a tool, the write fails the
        # call (its error response), and nothing half-written reaches the session.
        check_state_value(key, value)
        self._delta[key] = value

    def update(self, values: Mapping[str, object] | None = None, /, **kwargs: object) -> None:
        for key, value in {**(values or {}), **kwargs}.items():
            self[key] = value

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self[key]
        self[key] = default
        return default

    def _keys(self) -> dict[str, None]:
        keys = dict.fromkeys(self._base)
        keys.update(dict.fromkeys(self._temp))
        keys.update(dict.fromkeys(self._delta))
        return keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def has_delta(self) -> bool:
        return bool(self._delta)

    def to_dict(self) -> dict[str, object]:
        return {**self._base, **self._temp, **self._delta}

    def __repr__(self) -> str:
        return f"State({self.to_dict()!r})"


class EventSink:
    """The channel from a running tool call to the step that dispatched it.

    `emit` queues a lifecycle event; `send` queues a record and waits until the consumer
    has processed (stored) it — events up, as everywhere else (SPEC R1).
    """

    __slots__ = ("_put",)

    def __init__(self, put: Callable[[tuple[Item, asyncio.Future[None] | None]], None]) -> None:
        self._put = put

    def emit(self, item: LifecycleEvent) -> None:
        self._put((item, None))

    async def send(self, item: Item) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._put((item, done))
        await done


class Demand:
    """Whether the run's consumer is asking for the next item (SPEC R7).

    Pull, not push: the runner pauses it while the consumer holds an item and resumes it when
    the consumer asks for the next. Work running beside the loop (concurrent tool calls, a
    sub-agent answering as a tool) waits here before it starts a model or tool call, so a
    consumer that stops — with or without `aclose()` — starts nothing more.

    A flag and, only while someone waits, their futures (an `asyncio.Event` cost the runner
    a few Python calls on every item it yields, issue 25.5). Check `paused` before awaiting
    `wait()`: not paused, there is nothing to wait for.
    """

    __slots__ = ("_waiters", "paused")

    def __init__(self) -> None:
        self.paused = False
        self._waiters: list[asyncio.Future[None]] | None = None

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        if self._waiters is not None:
            self.wake()

    def wake(self) -> None:
        """Let everyone waiting go on (the consumer asked for the next item)."""
        waiters, self._waiters = self._waiters or [], None
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait(self) -> None:
        while self.paused:
            waiter = asyncio.get_running_loop().create_future()
            if self._waiters is None:
                self._waiters = []
            self._waiters.append(waiter)
            await waiter


@dataclass(slots=True)
class NestedPause:
    """H4: a call whose nested run (an agent answering as a tool, a task) waits on calls of
    its own: the call gets no response yet, and the whole run pauses until they are
    answered. `calls` are those waiting calls' records, `pending` how their run lists them,
    `agent` the nested agent's name."""

    agent: str
    pending: list[PendingCall]
    calls: list[FunctionCall]


@dataclass(slots=True)
class SubRunOutcome:
    """What a sub-run did: its session, the records of its run (the stored ones of earlier
    parts too), and what it waits on (empty when it finished)."""

    session_id: str
    events: list[Event]
    pending: list[PendingCall]
    calls: list[FunctionCall]


class SubRun(Protocol):
    """The runner's way to run another agent in a session of its own, in the runner's store
    (installed on every invocation context; agents as tools ask it instead of building a
    runner, DESIGN §10). Implemented by the runner."""

    async def __call__(
        self,
        ctx: InvocationContext,
        agent: AgentNode,
        *,
        session_id: str,
        request: Content,
        answers: list[FunctionResponse],
        state: Mapping[str, object] | None,
        on_item: Callable[[LifecycleEvent], None] | None,
    ) -> SubRunOutcome:
        """Start `agent` on `request` in a new session `session_id`, or continue it there:
        with `answers` to the calls it waits on, or from where an interrupted run stopped
        (D1); a finished sub-run is read back from its session."""
        ...


class _Shared:
    """Per-invocation counters shared by every agent's context in that invocation."""

    __slots__ = ("continue_in", "demand", "llm_calls", "resume_point", "temp_state")

    def __init__(self, demand: Demand | None) -> None:
        self.llm_calls = 0
        self.temp_state: dict[str, object] = {}
        self.demand = demand if demand is not None else Demand()
        # D1: where an interrupted invocation stopped, until the agent that resumes takes it.
        self.resume_point: ResumePoint | None = None
        # H3: the agent a paused run continues in, until the workflow around it starts it.
        self.continue_in: str | None = None


class _EndFlag:
    """`end_invocation` of one agent's run, shared with its tool calls' contexts only: a
    before_agent answer ends that agent, and its parent workflow goes on (as in ADK)."""

    __slots__ = ("value",)

    def __init__(self, value: bool = False) -> None:
        self.value = value


@functools.cache
def _default_run_config() -> RunConfig:
    """The settings of a run given none (frozen: one object serves every such run)."""
    return RunConfig()


class InvocationContext:
    """Everything one invocation needs: session, services, plugins, config, the current agent.

    No `__slots__`: `for_agent` copies a context once per agent run, and copying an
    instance dict is one call where ~24 slots took ~50 (issue 25.5)."""

    def __init__(
        self,
        *,
        app_name: str,
        user_id: str,
        session: Session,
        session_service: BaseSessionService,
        plugins: object,
        invocation_id: str,
        run_id: str,
        agent: AgentNode,
        root_agent: AgentNode,
        run_config: RunConfig | None = None,
        user_content: Content | None = None,
        artifact_service: BaseArtifactService | None = None,
        memory_service: BaseMemoryService | None = None,
        branch: str = "",
        isolation_scope: str = "",
        observe: bool = False,
        node: str | None = None,
        demand: Demand | None = None,
    ) -> None:
        self.app_name = app_name
        self.user_id = user_id
        self.session = session
        self.session_service = session_service
        # The run's `rondo.plugins.PluginManager`, for the layers above the plugins (which
        # reach its typed dispatch through `rondo.plugins.plugins_of`); the context itself
        # never calls a hook.
        self.plugins = plugins
        self.invocation_id = invocation_id
        self.run_id = run_id
        self.agent: AgentNode = agent
        self.root_agent: AgentNode = root_agent
        self.run_config = run_config or _default_run_config()
        self.user_content = user_content
        self.artifact_service = artifact_service
        self.memory_service = memory_service
        self.branch = branch
        self.isolation_scope = isolation_scope
        # Whether someone consumes the lifecycle view; when not, no lifecycle object is built.
        self.observe = observe
        # The team node this context runs in, stamped on its lifecycle events (SPEC V2).
        self.node = node
        # Where a running tool sends events of its own (set by the tool dispatcher).
        self.sink: EventSink | None = None
        # The running agent's `invoke_agent` span (SPEC O1); None when nothing records.
        self.trace: AgentTrace | None = None
        # H4: the answers this agent's waiting calls get, when they are not `user_content`
        # (a task sub-agent continued inside its parent's call keeps its task input there).
        self.answers: Content | None = None
        # H4: how an agent answering as a tool runs in a session of its own (the runner's).
        self.sub_run: SubRun | None = None
        # G6: the run's budgets (`rondo.flow.guards.RunGuard`), shared by every agent's
        # context; None without a budget, so the loop checks nothing.
        self.guard: Budgets | None = None
        # A sub-run (an agent answering as a tool) shares its caller's demand (R7).
        self._shared = _Shared(demand)
        self._end = _EndFlag()

    def for_agent(
        self,
        agent: AgentNode,
        *,
        branch: str | None = None,
        isolation_scope: str | None = None,
        node: str | None = None,
    ) -> InvocationContext:
        """A context for `agent` in the same invocation (counters and temp state shared; the
        same agent's contexts also share `end_invocation`, another agent gets its own)."""
        child = object.__new__(InvocationContext)
        child.__dict__.update(self.__dict__)
        if agent is not self.agent:
            child._end = _EndFlag(self._end.value)
        child.agent = agent
        if branch is not None:
            child.branch = branch
        if isolation_scope is not None:
            child.isolation_scope = isolation_scope
        if node is not None:
            child.node = node
        return child

    def new_event(self, author: str | None = None, **fields: Unpack[EventFields]) -> Event:
        """A record of this invocation: its invocation and run ids, branch and isolation
        scope copied from this context (`fields` may name another branch or scope), authored
        by the current agent unless `author` says who."""
        if "branch" not in fields:  # (tested in line: one record per new_event)
            fields["branch"] = self.branch
        if "isolation_scope" not in fields:
            fields["isolation_scope"] = self.isolation_scope
        return Event(
            author=self.agent.name if author is None else author,
            invocation_id=self.invocation_id,
            run_id=self.run_id,
            **fields,
        )

    def correlation(self) -> Correlation:
        """The ids every lifecycle event of this context carries (SPEC V2)."""
        return {
            "run_id": self.run_id,
            "invocation_id": self.invocation_id,
            "agent_name": self.agent.name,
            "node": self.node,
        }

    @property
    def temp_state(self) -> dict[str, object]:
        return self._shared.temp_state

    @property
    def demand(self) -> Demand:
        return self._shared.demand

    @property
    def end_invocation(self) -> bool:
        return self._end.value

    @end_invocation.setter
    def end_invocation(self, value: bool) -> None:
        self._end.value = value

    @property
    def llm_calls(self) -> int:
        return self._shared.llm_calls

    def set_resume_point(self, point: ResumePoint | None) -> None:
        """D1: this invocation continues an interrupted one from `point`."""
        self._shared.resume_point = point

    def continue_in(self, agent_name: str) -> None:
        """H3: this invocation continues a paused run in `agent_name` (the agent whose calls
        the message answers); the workflow agents around it start there."""
        self._shared.continue_in = agent_name

    def resume_target(self) -> str | None:
        """The agent this invocation continues in — where an interrupted invocation stopped
        (D1, until that agent takes its resume point) or the agent a paused run waits on (H3,
        until the workflow around it starts it); workflow agents start at the sub-agent
        holding it."""
        shared = self._shared
        point = shared.resume_point
        if point is not None:
            return point.agent_name or None
        return shared.continue_in

    def reached(self, agent_name: str) -> None:
        """A workflow agent starts `agent_name`, the agent a paused run continues in: later
        rounds and sub-workflows start from their beginning again."""
        if self._shared.continue_in == agent_name:
            self._shared.continue_in = None

    def finished_in(self, agent_name: str) -> bool:
        """D1: the interrupted invocation stopped right after `agent_name` finished (between
        two agents of a sequence); takes the resume point, so the agents after it run."""
        shared = self._shared
        point = shared.resume_point
        if point is None or point.boundary != "after_agent" or point.agent_name != agent_name:
            return False
        shared.resume_point = None
        return True

    def finished_branches(self, parallel: AgentNode) -> frozenset[str] | None:
        """D1: the interrupted invocation stopped right after a branch of `parallel` finished,
        with other branches left: the names of the finished ones (takes the resume point, so
        the others run)."""
        shared = self._shared
        point = shared.resume_point
        if (
            point is None
            or point.boundary != "after_agent"
            or not any(sub.name == point.agent_name for sub in parallel.sub_agents)
        ):
            return None
        shared.resume_point = None
        return frozenset(point.done)

    def take_resume_point(self, agent_name: str) -> ResumePoint | None:
        """The resume point when `agent_name` is the agent that stopped there (once)."""
        shared = self._shared
        point = shared.resume_point
        if point is None or (point.agent_name and point.agent_name != agent_name):
            return None
        shared.resume_point = None
        return point

    def count_llm_call(self) -> int:
        self._shared.llm_calls += 1
        return self._shared.llm_calls

    @property
    def state(self) -> State:
        """A read-only merged view of the state."""
        return State(self.session.state, self._shared.temp_state, readonly=True)


class ReadonlyContext:
    """What instruction providers see: ids, the user's message and read-only state."""

    __slots__ = ("_inv",)

    def __init__(self, invocation_context: InvocationContext) -> None:
        self._inv = invocation_context

    @property
    def invocation_context(self) -> InvocationContext:
        return self._inv

    @property
    def invocation_id(self) -> str:
        return self._inv.invocation_id

    @property
    def run_id(self) -> str:
        return self._inv.run_id

    @property
    def agent_name(self) -> str:
        return self._inv.agent.name

    @property
    def session_id(self) -> str:
        return self._inv.session.id

    @property
    def user_id(self) -> str:
        return self._inv.user_id

    @property
    def app_name(self) -> str:
        return self._inv.app_name

    @property
    def session(self) -> Session:
        return self._inv.session

    @property
    def user_content(self) -> Content | None:
        return self._inv.user_content

    @property
    def state(self) -> Mapping[str, object]:
        return State(self._inv.session.state, self._inv.temp_state, readonly=True)


class CallbackContext(ReadonlyContext):
    """What callbacks see: writable state (recorded as a delta), actions and artifacts."""

    __slots__ = ("_state", "actions")

    def __init__(
        self, invocation_context: InvocationContext, actions: Actions | None = None
    ) -> None:
        super().__init__(invocation_context)
        self.actions = actions if actions is not None else Actions()
        self._state: State | None = None

    @property
    def state(self) -> State:
        st = self._state
        if st is None:
            inv = self._inv
            st = self._state = State(inv.session.state, inv.temp_state, self.actions.state_delta)
        return st

    def _artifacts(self) -> BaseArtifactService:
        service = self._inv.artifact_service
        if service is None:
            raise ConfigurationError("no artifact service: pass artifact_service= to the Runner")
        return service

    async def save_artifact(self, filename: str, artifact: Part) -> int:
        """Save a new version of an artifact; recorded in `actions.artifact_delta`."""
        inv = self._inv
        version = await self._artifacts().save_artifact(
            app_name=inv.app_name,
            user_id=inv.user_id,
            session_id=inv.session.id,
            filename=filename,
            artifact=artifact,
        )
        self.actions.artifact_delta[filename] = version
        return version

    def _rewound_version(self, filename: str) -> tuple[bool, int | None]:
        """Issue 21.5: this step's own save, else the version the visible history recorded
        (`rondo.sessions.rewind.artifact_version`)."""
        if filename in self.actions.artifact_delta:
            return True, self.actions.artifact_delta[filename]
        if not self._inv.session.rewound:
            return False, None
        from rondo.sessions.rewind import artifact_version

        return artifact_version(self._inv.session, filename)

    async def load_artifact(self, filename: str, version: int | None = None) -> Part | None:
        inv = self._inv
        if version is None:
            pinned, version = self._rewound_version(filename)
            if pinned and version is None:
                return None
        return await self._artifacts().load_artifact(
            app_name=inv.app_name,
            user_id=inv.user_id,
            session_id=inv.session.id,
            filename=filename,
            version=version,
        )

    async def list_artifacts(self) -> list[str]:
        inv = self._inv
        names = await self._artifacts().list_artifact_keys(
            app_name=inv.app_name, user_id=inv.user_id, session_id=inv.session.id
        )
        if inv.session.rewound:  # the files only rewound records saved are gone for now
            names = [n for n in names if self._rewound_version(n) != (True, None)]
        return names


class ToolContext(CallbackContext):
    """What a tool sees: everything a callback sees plus its call id and confirmation.

    `cancelled` turns true when the run stops while the call is in flight. Python cannot
    interrupt a sync tool running in its worker thread: a long one should poll `cancelled`
    (or wait on `cancel_event`) and return early; its late result is never stored.
    """

    __slots__ = (
        "_call",
        "_reason_id",
        "_started",
        "cancel_event",
        "function_call_id",
        "nested_answers",
        "nested_pause",
        "progress",
        "tool_confirmation",
    )

    def __init__(
        self,
        invocation_context: InvocationContext,
        *,
        function_call_id: str | None = None,
        actions: Actions | None = None,
        tool_confirmation: ToolConfirmation | None = None,
        function_call: FunctionCall | None = None,
        reason_id: str = "",
        nested_answers: list[FunctionResponse] | None = None,
    ) -> None:
        super().__init__(invocation_context, actions)
        if function_call_id is None and function_call is not None:
            function_call_id = function_call.id
        self.function_call_id = function_call_id
        self.tool_confirmation = tool_confirmation
        self._call = function_call
        self._reason_id = reason_id
        self._started = False
        # The progress the call reported (a streaming tool's chunks), in order.
        self.progress: list[object] = []
        # A threading.Event so sync tools in worker threads can wait on it too.
        self.cancel_event = threading.Event()
        # H4: a call continued after its nested run paused: the answers to what that run
        # waits on (None on a first dispatch), and the pause this dispatch ends on, if any.
        self.nested_answers = nested_answers
        self.nested_pause: NestedPause | None = None

    @property
    def tool_name(self) -> str:
        return self._call.name if self._call is not None else ""

    @property
    def reason_id(self) -> str:
        """The model round whose call this is (lifecycle correlation)."""
        return self._reason_id

    async def mark_started(self) -> None:
        """The call is being handled: its `ToolCallStart` goes to the lifecycle stream
        (once), and the call goes on only after the consumer received it (SPEC R7)."""
        if self._started:
            return
        self._started = True
        call = self._call
        sink = self._inv.sink
        if call is not None and sink is not None and self._inv.observe:
            from rondo.lifecycle import ToolCallStart

            await sink.send(
                ToolCallStart(
                    **self._inv.correlation(),
                    reason_id=self._reason_id,
                    call_id=call.id or "",
                    tool_name=call.name,
                    args=call.args,
                )
            )
            # R7: the consumer received the start; if it stopped asking since (it holds a
            # later call's start of the same step), the body waits and never begins.
            await self._inv.demand.wait()

    def report_progress(self, chunk: object) -> None:
        """Report a piece of this call's progress (a streaming tool's chunks are reported
        for it): a `ToolCallProgress` on the lifecycle stream, before the call's end."""
        self.progress.append(chunk)
        call = self._call
        if call is not None and self.observed:
            from pydantic_core import to_jsonable_python

            from rondo.lifecycle import ToolCallProgress

            self.emit(
                ToolCallProgress(
                    **self._inv.correlation(),
                    reason_id=self._reason_id,
                    call_id=call.id or "",
                    tool_name=call.name,
                    index=len(self.progress) - 1,
                    chunk=to_jsonable_python(chunk, fallback=str),
                )
            )

    @property
    def cancelled(self) -> bool:
        """Whether the run stopped while this call was in flight (poll it in long sync tools)."""
        return self.cancel_event.is_set()

    @property
    def observed(self) -> bool:
        """Whether the run's lifecycle view is consumed (so `emit` reaches someone)."""
        return self._inv.observe and self._inv.sink is not None

    def emit(self, event: LifecycleEvent) -> None:
        """Send a lifecycle event (a `PlanUpdate`, a wrapped sub-agent event...) to the
        stream, between this call's `ToolCallStart` and `ToolCallEnd`. A no-op when nobody
        observes the lifecycle view."""
        sink = self._inv.sink
        if sink is not None and self._inv.observe:
            sink.emit(event)

    async def send_event(self, event: Event) -> None:
        """Hand a record up to the runner and wait until it is stored (for tools whose
        `yields_events` is set, such as task agents running in this session)."""
        sink = self._inv.sink
        if sink is None:
            raise ConfigurationError(
                "send_event() needs a tool whose `yields_events` attribute is True"
            )
        await sink.send(event)

    def request_confirmation(self, *, hint: str | None = None, payload: object = None) -> None:
        """Ask a human to confirm this call; the run pauses after this step (SPEC H1)."""
        if self.function_call_id is None:
            raise ConfigurationError("request_confirmation() needs a function call id")
        self.actions.requested_tool_confirmations[self.function_call_id] = ToolConfirmation(
            hint=hint or "", payload=payload
        )
        self.actions.skip_summarization = True

    def pause_nested(self, pause: NestedPause) -> None:
        """H4: this call's nested run waits on calls of its own. The call gets no response
        (whatever the tool returns), the run pauses, and the waiting calls are listed on the
        top session; answering them there dispatches this call again, with the answers in
        `nested_answers`."""
        self.nested_pause = pause

    async def search_memory(self, query: str) -> SearchMemoryResponse:
        """Search the user's memories (needs a memory service on the Runner)."""
        inv = self._inv
        if inv.memory_service is None:
            raise ConfigurationError("no memory service: pass memory_service= to the Runner")
        return await inv.memory_service.search_memory(
            app_name=inv.app_name, user_id=inv.user_id, query=query
        )
