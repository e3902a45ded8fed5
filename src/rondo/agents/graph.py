"""`Graph`: a workflow of nodes joined by routes, with input mapping, interrupt and resume
(SPEC X2).

A node is an agent or a function. After a node finishes, the first route from it whose
condition accepts its output picks the next node; with no matching route the graph ends. A
node's input is the previous node's output unless its `input` mapping computes one from the
graph state. A function node may return `Interrupt(...)`: the graph stores where it stopped
and pauses with a long-running `graph_interrupt` call; the answer to that call (a function
response, e.g. `session.pending[0].respond({...})`) becomes the node's output and the graph
resumes from there, in the same run.

Agent nodes run in an isolation scope of their own (`<graph>/<node>`): they see their inputs
and their own past work, not the other nodes' chatter.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from rondo._ids import new_client_call_id
from rondo.agents.base import BaseAgent, Item
from rondo.context import InvocationContext, ReadonlyContext
from rondo.errors import ConfigurationError
from rondo.events import NESTED_PAUSE, Event, EventActions
from rondo.sessions.base import waiting_calls
from rondo.types import Content, FunctionCall, Part

if TYPE_CHECKING:
    from rondo.hooks import AfterAgentCallback, BeforeAgentCallback

__all__ = ["GRAPH_INTERRUPT", "Edge", "Graph", "GraphState", "Interrupt", "Node"]

GRAPH_INTERRUPT = "graph_interrupt"


@dataclass
class Interrupt:
    """Returned by a function node to pause the graph until a human (or system) answers."""

    prompt: str
    payload: Any = None


@dataclass
class GraphState:
    """What mappings and conditions see: the graph's input and every node's latest output."""

    input: str
    outputs: dict[str, object] = field(default_factory=dict[str, object])
    last: Any = None


@dataclass
class Node:
    """A graph node: an agent, or a function `(input, state, ctx)` (sync or async; extra
    parameters are optional) returning the node's output or an `Interrupt`."""

    name: str
    run: BaseAgent | Callable[..., object]
    input: Callable[[GraphState], Any] | None = None


@dataclass
class Edge:
    """A route `source → target`, taken when `condition(output, state)` is true (or always)."""

    source: str
    target: str
    condition: Callable[[Any, GraphState], bool] | None = None


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Content):
        return value.text
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


class Graph(BaseAgent):
    """A workflow of nodes and routes (see the module docstring)."""

    def __init__(
        self,
        *,
        name: str,
        nodes: Sequence[Node],
        edges: Sequence[Edge | tuple[str, str]] = (),
        start: str | None = None,
        max_steps: int = 100,
        description: str = "",
        before_agent_callback: BeforeAgentCallback | Sequence[BeforeAgentCallback] | None = None,
        after_agent_callback: AfterAgentCallback | Sequence[AfterAgentCallback] | None = None,
    ) -> None:
        if not nodes:
            raise ConfigurationError("a Graph needs at least one node")
        self.nodes: dict[str, Node] = {}
        for node in nodes:
            if node.name in self.nodes:
                raise ConfigurationError(f"graph {name!r} has two nodes named {node.name!r}")
            self.nodes[node.name] = node
        self.edges = [e if isinstance(e, Edge) else Edge(e[0], e[1]) for e in edges]
        for edge in self.edges:
            for end in (edge.source, edge.target):
                if end not in self.nodes:
                    raise ConfigurationError(f"graph {name!r}: route names unknown node {end!r}")
        self.start = start or nodes[0].name
        if self.start not in self.nodes:
            raise ConfigurationError(f"graph {name!r}: unknown start node {self.start!r}")
        self.max_steps = max_steps
        super().__init__(
            name=name,
            description=description,
            sub_agents=[n.run for n in nodes if isinstance(n.run, BaseAgent)],
            before_agent_callback=before_agent_callback,
            after_agent_callback=after_agent_callback,
        )

    @property
    def _state_key(self) -> str:
        return f"graph:{self.name}"

    def _next(self, current: str, output: Any, state: GraphState) -> str | None:
        for edge in self.edges:
            if edge.source == current and (edge.condition is None or edge.condition(output, state)):
                return edge.target
        return None

    def _record(self, ctx: InvocationContext, **fields: Any) -> Event:
        return ctx.new_event(
            self.name,
            **fields,
        )

    def _resume_point(self, ctx: InvocationContext) -> tuple[str, GraphState, Any, bool] | None:
        """When this message answers our interrupt: (node, saved state, the answer, whether
        the node is an agent whose own calls the answer is for — H4)."""
        saved: Any = ctx.session.state.get(self._state_key)
        message = ctx.user_content
        if not isinstance(saved, dict) or message is None:
            return None
        data = cast(dict[str, object], saved)
        interrupted: Any = data.get("interrupted")
        if not isinstance(interrupted, dict):
            return None
        point = cast(dict[str, object], interrupted)
        state = GraphState(
            input=str(data.get("input", "")),
            outputs=dict(cast(dict[str, object], data.get("outputs") or {})),
            last=data.get("last"),
        )
        waiting = set(cast(list[str], point.get("waiting") or []))
        for part in message.parts:
            response = part.function_response
            if response is None:
                continue
            if response.id in waiting:
                return str(point.get("node")), state, message, True
            if response.id == point.get("call_id"):
                return str(point.get("node")), state, response.response, False
        return None

    async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        resume = self._resume_point(ctx)
        answers: Content | None = None
        if resume is not None and resume[3]:
            # H4: an agent node paused on calls of its own: it continues with the answers.
            target, state, answers, _ = resume
        elif resume is not None:
            current, state, answer, _ = resume
            state.outputs[current] = answer
            state.last = answer
            target = self._next(current, answer, state)
        else:
            text = ctx.user_content.text if ctx.user_content is not None else ""
            state = GraphState(input=text, last=text)
            target = self.start
        steps = 0
        while target is not None:
            steps += 1
            if steps > self.max_steps:
                raise ConfigurationError(
                    f"graph {self.name!r} ran {self.max_steps} steps without ending; "
                    "check its routes or raise max_steps"
                )
            node = self.nodes[target]
            node_input = node.input(state) if node.input is not None else state.last
            output: Any = None
            if isinstance(node.run, BaseAgent):
                collected: list[object] = []
                node_events: list[Event] = []
                run = self._run_agent_node(ctx, node, node.run, node_input, collected, answers)
                answers = None
                async with aclosing(run) as items:
                    async for item in items:
                        if isinstance(item, Event) and not item.partial:
                            node_events.append(item)
                        yield item
                pause = self._node_pause(ctx, node, node.run, node_events, state)
                if pause is not None:
                    yield pause
                    return
                output = collected[0] if collected else ""
            else:
                output = await _call_function(node.run, node_input, state, ctx)
                if isinstance(output, Interrupt):
                    yield self._interrupt(ctx, node.name, output, state)
                    return
            state.outputs[node.name] = output
            state.last = output
            target = self._next(node.name, output, state)
        yield self._record(
            ctx,
            content=Content.model(_as_text(state.last)),
            actions=EventActions(
                state_delta={
                    self._state_key: {
                        "input": state.input,
                        "outputs": _jsonable(state.outputs),
                        "interrupted": None,
                    }
                }
            ),
        )

    async def _run_agent_node(
        self,
        ctx: InvocationContext,
        node: Node,
        agent: BaseAgent,
        node_input: Any,
        result: list[object],
        answers: Content | None = None,
    ) -> AsyncGenerator[Item, None]:
        scope = f"{self.name}/{node.name}"
        child = ctx.for_agent(ctx.agent, isolation_scope=scope)
        message = Content.user(_as_text(node_input))
        child.user_content = message
        if answers is not None:
            child.answers = answers  # H4: it continues where it paused; its input is stored
        else:
            # The node's input is a record in its scope, so its history reads like a
            # conversation.
            yield ctx.new_event(
                "user",
                isolation_scope=scope,
                content=message,
            )
        final: Any = ""
        async with aclosing(agent.run_async(child)) as items:
            async for item in items:
                if (
                    isinstance(item, Event)
                    and item.author == agent.name
                    and item.is_final_response()
                    and item.text
                ):
                    final = item.text
                yield item
        parse = getattr(agent, "parse_output", None)
        if parse is not None and getattr(agent, "output_schema", None) is not None and final:
            final = parse(final)  # an answer that does not fit ends the run (G4)
        result.append(final)

    def _node_pause(
        self,
        ctx: InvocationContext,
        node: Node,
        agent: BaseAgent,
        events: list[Event],
        state: GraphState,
    ) -> Event | None:
        """H4: when the agent node's run waits on calls of its own, the graph pauses there:
        a nested-pause record listing them (path `<graph> → <agent>@<node>`), with the graph
        state saved so that their answers continue the node and then the graph."""
        asked = {i for e in events for i in e.long_running_tool_ids}
        waiting = [p for p in ctx.session.pending if p.call_id in asked]
        if not waiting:
            return None
        ids = [p.call_id for p in waiting]
        entry = {
            "call_id": node.name,
            "tool_name": node.name,
            "agent": agent.name,
            "pending": [p.model_dump(mode="json") for p in waiting],
        }
        calls = waiting_calls(events, waiting)
        return self._record(
            ctx,
            content=Content(role="model", parts=[Part(function_call=c) for c in calls]),
            long_running_tool_ids=frozenset(ids),
            custom_metadata={NESTED_PAUSE: [entry]},
            actions=EventActions(
                state_delta={
                    self._state_key: {
                        "input": state.input,
                        "outputs": _jsonable(state.outputs),
                        "last": _jsonable(state.last),
                        "interrupted": {"node": node.name, "waiting": ids},
                    }
                }
            ),
        )

    def _interrupt(
        self, ctx: InvocationContext, node: str, interrupt: Interrupt, state: GraphState
    ) -> Event:
        call_id = new_client_call_id()
        call = FunctionCall(
            name=GRAPH_INTERRUPT,
            id=call_id,
            args={"node": node, "prompt": interrupt.prompt, "payload": interrupt.payload},
        )
        return self._record(
            ctx,
            content=Content(role="model", parts=[Part(function_call=call)]),
            long_running_tool_ids=frozenset({call_id}),
            actions=EventActions(
                state_delta={
                    self._state_key: {
                        "input": state.input,
                        "outputs": _jsonable(state.outputs),
                        "interrupted": {"node": node, "call_id": call_id},
                    }
                }
            ),
        )


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


async def _call_function(
    fn: Callable[..., object], node_input: Any, state: GraphState, ctx: InvocationContext
) -> Any:
    params = len(inspect.signature(fn).parameters)
    args = [node_input, state, ReadonlyContext(ctx)][: max(params, 0)]
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result
