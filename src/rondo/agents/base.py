"""The agent tree and the agent-level callbacks shared by every agent kind (SPEC X3)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from rondo._callbacks import Callbacks, first_result, normalize_callbacks
from rondo.errors import ConfigurationError, DuplicateAgentNameError, InvalidCallbackError

# Records, contexts and lifecycle events load when an agent first runs: importing the agent
# classes stays cheap (no pydantic models, no asyncio).
if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.events import Event
    from rondo.hooks import (
        AfterAgentCallback,
        BeforeAgentCallback,
    )
    from rondo.lifecycle import LifecycleEvent
    from rondo.types import Content

    Item = Event | LifecycleEvent
else:
    Item = Any

__all__ = ["BaseAgent", "Item", "RunOrder"]

RunOrder = Literal["sequence", "parallel"]


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigurationError(
            f"agent name must be a Python identifier (letters, digits, '_'), got {name!r}"
        )
    if name == "user":
        raise ConfigurationError("the agent name 'user' is reserved for the user's messages")
    return name


class BaseAgent:
    """An agent: a name, a place in a tree, and `run_async(ctx)` yielding events.

    Subclasses implement `_run_impl`. `before_agent(ctx)` / `after_agent(ctx)` callbacks may
    return `Content` to answer instead of (or after) the agent.

    The loop, transfer and agent-as-tool ask any agent what they need through the members
    below, never by testing for the LLM agent's class (which overrides them).
    """

    # Whether the agent picks, with its model, who answers next (`transfer_to_agent`): then
    # its parent position makes it and its other children transfer targets (SPEC X1).
    transfers: ClassVar[bool] = False
    # The instruction a root agent gives every LLM agent below it (SPEC P4).
    global_instruction: str | Callable[..., object] = ""

    # How a workflow agent runs its sub-agents: one after another, or side by side; None for
    # an agent that picks what runs next (an LLM agent, a graph, a supervised team). Resuming
    # a run (D1, H3) re-enters the workflows around an agent by it.
    run_order: RunOrder | None = None

    @property
    def reached_by_call(self) -> bool:
        """Whether a parent reaches this agent by a tool call (a task or single-turn agent,
        SPEC X1/C2) rather than by transfer."""
        return False

    def answer_of(self, text: str) -> dict[str, object]:
        """The tool response an agent answering as a tool gives for its final `text`."""
        return {"result": text}

    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        sub_agents: Sequence[BaseAgent] = (),
        before_agent_callback: BeforeAgentCallback | Sequence[BeforeAgentCallback] | None = None,
        after_agent_callback: AfterAgentCallback | Sequence[AfterAgentCallback] | None = None,
    ) -> None:
        self.name = _check_name(name)
        self.description = description
        self.parent_agent: BaseAgent | None = None
        self.sub_agents: list[BaseAgent] = list(sub_agents)
        self.before_agent_callbacks: Callbacks = normalize_callbacks(
            before_agent_callback, "before_agent_callback"
        )
        self.after_agent_callbacks: Callbacks = normalize_callbacks(
            after_agent_callback, "after_agent_callback"
        )
        for sub in self.sub_agents:
            if not isinstance(sub, BaseAgent):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigurationError(f"sub_agents must be agents, got {sub!r}")
            if sub.parent_agent is not None:
                raise ConfigurationError(
                    f"agent {sub.name!r} already belongs to {sub.parent_agent.name!r}; "
                    "an agent can have only one parent"
                )
            sub.parent_agent = self
        seen: set[str] = set()
        for agent in self.walk():
            if agent.name in seen:
                raise DuplicateAgentNameError(
                    f"two agents in the tree of {self.name!r} are named {agent.name!r}; "
                    "agent names must be unique"
                )
            seen.add(agent.name)

    def walk(self) -> Iterator[BaseAgent]:
        """This agent and all its descendants, depth first."""
        yield self
        for sub in self.sub_agents:
            yield from sub.walk()

    @property
    def root_agent(self) -> BaseAgent:
        agent = self
        while agent.parent_agent is not None:
            agent = agent.parent_agent
        return agent

    def find_agent(self, name: str) -> BaseAgent | None:
        """This agent or a descendant named `name`."""
        for agent in self.walk():
            if agent.name == name:
                return agent
        return None

    def find_sub_agent(self, name: str) -> BaseAgent | None:
        """A descendant named `name` (not this agent)."""
        for sub in self.sub_agents:
            found = sub.find_agent(name)
            if found is not None:
                return found
        return None

    def run_async(self, parent_context: InvocationContext) -> AsyncGenerator[Item, None]:
        """Run the agent: before-agent hooks, the agent itself, after-agent hooks."""
        return self._run_around(parent_context, self._run_impl)

    async def _run_around(
        self,
        parent_context: InvocationContext,
        body: Callable[[InvocationContext], AsyncGenerator[Item, None]],
    ) -> AsyncGenerator[Item, None]:
        """`body` (the agent's own work: its turn, or its live call) inside the agent's
        context, its before/after-agent hooks and its `invoke_agent` span."""
        from rondo.telemetry import start_agent  # loaded on first run: `import rondo` stays light

        ctx = parent_context.for_agent(self)
        # O1: the run is an `invoke_agent` span when an OpenTelemetry SDK records (else None).
        trace = ctx.trace = start_agent(parent_context, ctx)
        answer: Content | None = None
        failure: BaseException | None = None
        try:
            event = await self._before_agent(ctx)
            if event is not None:
                yield event
            if ctx.end_invocation:
                return
            items = body(ctx)
            try:
                async for item in items:
                    if trace is not None and trace.capture:
                        answer = _answer(item, answer)
                    yield item
            finally:
                await items.aclose()
            if ctx.end_invocation:
                return
            event = await self._after_agent(ctx)
            if event is not None:
                yield event
        except GeneratorExit:
            raise  # the consumer stopped early: not a failure of the agent
        except BaseException as exc:
            failure = exc
            raise
        finally:
            if trace is not None:
                trace.finish(failure, answer)

    def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        """The agent's own work. Subclasses override this (ADK's `_run_async_impl` name is
        accepted too) and yield events; the runner stores each before the next is asked."""
        legacy = getattr(self, "_run_async_impl", None)
        if legacy is not None:
            return legacy(ctx)
        raise ConfigurationError(f"{type(self).__name__} must implement _run_impl")

    async def _before_agent(self, ctx: InvocationContext) -> Event | None:
        """The plugins' and the agent's before-agent hooks; an answer ends the agent's run."""
        return await self._agent_hooks(ctx, "before_agent", self.before_agent_callbacks)

    async def _after_agent(self, ctx: InvocationContext) -> Event | None:
        return await self._agent_hooks(ctx, "after_agent", self.after_agent_callbacks)

    async def _agent_hooks(
        self,
        ctx: InvocationContext,
        hook: Literal["before_agent", "after_agent"],
        callbacks: Callbacks,
    ) -> Event | None:
        """The record of what the hooks did: their answer, or the state they wrote (None when
        they did nothing). Plugins run first; an answer short-circuits the rest (SPEC M3)."""
        from rondo.plugins import plugins_of

        plugins = plugins_of(ctx)
        if not callbacks and not plugins.has(hook):
            return None
        from rondo.context import CallbackContext

        cb_ctx = CallbackContext(ctx)
        content = await plugins.run(hook, cb_ctx)
        if content is None:
            content = await first_result(callbacks, cb_ctx)
        if content is not None:
            if hook == "before_agent":
                ctx.end_invocation = True
            content = _as_content(content)
        elif cb_ctx.actions.is_empty():
            return None
        return ctx.new_event(self.name, content=content, actions=cb_ctx.actions.to_record())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def _answer(item: Any, answer: Content | None) -> Content | None:
    """The agent's answer so far: the content of its latest final response event."""
    from rondo.events import Event

    if isinstance(item, Event) and item.content is not None and item.is_final_response():
        return item.content
    return answer


def _as_content(value: Any) -> Content:
    from rondo.types import Content

    if isinstance(value, Content):
        return value
    if isinstance(value, str):
        return Content.model(value)
    raise InvalidCallbackError(f"an agent callback must return Content, str or None, got {value!r}")
