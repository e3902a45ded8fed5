"""The loop of one LLM agent: `Flow.run` and `Flow._run_one_step` (SPEC F1–F6).

It reads top to bottom like the seed's `runOneStep`: preprocess → model call → model event →
tool dispatch → tool event → confirmation → structured output → transfer. Records go *up* as
yielded events (the runner stores them before this generator resumes) and come back *down* as
the session history the next step's request is built from.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, cast

from rondo._ids import new_reason_id
from rondo.context import Actions, CallbackContext, InvocationContext, ReadonlyContext
from rondo.errors import ConfigurationError, GuardrailTripped, TransferError
from rondo.events import Event, PendingCall
from rondo.flow._deltas import DeltaTracker
from rondo.flow.functions import handle_function_calls
from rondo.flow.guards import check_input, check_output, stop_items
from rondo.flow.model_call import call_model
from rondo.flow.processors import DEFAULT_REQUEST_PROCESSORS
from rondo.flow.processors.confirmation import confirmation_event
from rondo.flow.processors.output_schema import output_schema_processor
from rondo.flow.processors.tools import tools_processor
from rondo.flow.processors.transfer import transfer_processor, transfer_targets
from rondo.guardrails import GuardrailFunctionOutput
from rondo.lifecycle import HITLPending, Item, ReasonStart, WorkingMemory
from rondo.models.base import ModelRequest, ModelResponse
from rondo.tools.base import BaseTool, BaseToolset
from rondo.tools.structured import SET_MODEL_RESPONSE
from rondo.types import Content, FunctionCall

if TYPE_CHECKING:
    from rondo.context import AgentNode
    from rondo.flow.views import LlmAgentView
    from rondo.models.base import Model
    from rondo.outcome import ResumePoint

__all__ = ["MAX_THOUGHT_ONLY_TURNS", "Flow"]

logger = logging.getLogger("rondo.flow")

# F3: a safety bound on consecutive thought-only turns, not a step limit.
MAX_THOUGHT_ONLY_TURNS = 10


def _is_thought_only(event: Event) -> bool:
    content = event.content
    if content is None or not content.parts or not content.parts[0].thought:
        return False  # (the common answer, decided without a generator)
    return all(p.thought for p in content.parts)


def _reason_start(ctx: InvocationContext, reason_id: str, request: ModelRequest) -> ReasonStart:
    """V1: a round's start, with its system prompt and working memory (built only for a
    consumer of the lifecycle view)."""
    contents = request.contents
    calls = results = 0
    for content in contents:
        for part in content.parts:
            if part.function_call is not None:
                calls += 1
            elif part.function_response is not None:
                results += 1
    last = contents[-1].text if contents else ""
    return ReasonStart(
        **ctx.correlation(),
        reason_id=reason_id,
        system_prompt=request.config.system_instruction or "",
        working_memory=WorkingMemory(
            message_count=len(contents),
            tool_calls=calls,
            tool_results=results,
            last_message=last[:500],
        ),
    )


class Flow:
    """One agent's loop for one `run`; tools are expanded once per flow (SPEC P2)."""

    __slots__ = ("_readonly", "_targets", "agent", "model", "processors", "relist_tools", "tools")

    def __init__(self, agent: LlmAgentView, model: Model) -> None:
        self.agent = agent
        self.model = model
        self.processors = DEFAULT_REQUEST_PROCESSORS
        self.tools: list[BaseTool] | None = None
        self.relist_tools = any(
            isinstance(t, BaseToolset) and t.relist_each_step for t in agent.tools
        )
        self._targets: list[AgentNode] | None = None
        # G6: what the input and output guardrails see, made once per run (when one runs).
        self._readonly: ReadonlyContext | None = None

    @property
    def transfer_targets(self) -> list[AgentNode]:
        if self._targets is None:
            self._targets = transfer_targets(self.agent)
        return self._targets

    async def expand_tools(self, ctx: InvocationContext) -> list[BaseTool]:
        from rondo.context import ReadonlyContext
        from rondo.tools.agent_tool import TaskTool

        tools: list[BaseTool] = []
        for entry in self.agent.tools:
            if isinstance(entry, BaseToolset):
                tools.extend(await entry.get_tools(ReadonlyContext(ctx)))
            else:
                tools.append(entry)
        # Task and single-turn sub-agents are reached by a call, not by transfer (X1, C2).
        tools.extend(TaskTool(sub) for sub in self.agent.sub_agents if sub.reached_by_call)
        tools.extend(ctx.run_config.extra_tools)
        names = [t.name for t in tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigurationError(f"agent {self.agent.name!r} has several tools named {dupes}")
        self.tools = tools
        return tools

    async def run(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        """F1: run steps until the last event of a step is a final response."""
        point = ctx.take_resume_point(self.agent.name)
        if point is not None:
            # D1: finish the step the interrupted invocation stopped in, then go on as usual.
            last: Event | None = None
            async with aclosing(self._resume(ctx, point)) as resumed:
                async for item in resumed:
                    yield item
                    if isinstance(item, Event):
                        last = item
            if ctx.end_invocation or (last is not None and last.is_final_response()):
                return
        elif self.agent.input_guardrails:
            # G6: the turn's message passes every input guardrail before any model call. The
            # first guardrail is called here and a passing verdict read in line; `check_input`
            # settles the rest (issue 24.7: a configured guardrail costs its own call).
            message = ctx.user_content
            if message is not None:
                for part in message.parts:
                    if part.function_response is None:
                        break
                else:
                    message = None  # only answers to paused calls: not a new input
            if message is not None:
                agent, guardrails = self.agent, self.agent.input_guardrails
                readonly = self._readonly = ReadonlyContext(ctx)
                verdict = guardrails[0].guardrail_function(readonly, agent, message)
                if (
                    guardrails[1:]
                    or type(verdict) is not GuardrailFunctionOutput
                    or verdict.tripwire_triggered
                ):
                    tripped = await check_input(agent, readonly, message, verdict)
                    if tripped is not None:
                        for item in stop_items(ctx, tripped):
                            yield item
                        raise tripped
        thought_only_turns = 0
        while True:
            last: Event | None = None
            step = self._run_one_step(ctx)
            try:
                async for item in step:
                    yield item
                    if isinstance(item, Event):
                        last = item
            finally:
                await step.aclose()
            if last is None or ctx.end_invocation:
                return
            if last.is_final_response():
                if not _is_thought_only(last):
                    return
                # F3: a thought-only answer gets another model call, a bounded number of times.
                thought_only_turns += 1
                if thought_only_turns >= MAX_THOUGHT_ONLY_TURNS:
                    logger.warning(
                        "agent %s: %d consecutive thought-only turns; stopping",
                        self.agent.name,
                        thought_only_turns,
                    )
                    return
            else:
                thought_only_turns = 0
            if last.partial:
                # F4: a stream that ended without its final aggregate is never retried.
                logger.warning("agent %s: the step ended on a partial event", self.agent.name)
                return

    async def _preprocess(
        self, ctx: InvocationContext, request: ModelRequest
    ) -> AsyncGenerator[Item, None]:
        """The request processors on their own (a live connection rebuilding its request);
        a step runs them in line, one async generator fewer per step (issue 25.5)."""
        for processor in self.processors:
            result: Any = processor(self, ctx, request)
            if result is None:
                continue
            if inspect.isasyncgen(result):
                generator = cast(AsyncGenerator[Item, None], result)
                async with aclosing(generator) as items:
                    async for item in items:
                        yield item
            else:
                await result

    async def _run_one_step(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        agent = self.agent
        request = ModelRequest(model=self.model.name)
        waits = False
        for processor in self.processors:
            result: Any = processor(self, ctx, request)
            if result is None:
                continue
            if not inspect.isasyncgen(result):
                await result
                continue
            items = cast(AsyncGenerator[Item, None], result)
            try:
                async for item in items:
                    yield item
                    if isinstance(item, Event):
                        # H4: a call continued by a processor whose nested run waits again:
                        # the step stops there, as it would after its own tool dispatch.
                        waits = waits or item.nested_pause is not None
            finally:
                await items.aclose()
        if ctx.end_invocation or waits:
            return
        started = time.perf_counter()
        guard = ctx.guard
        if guard is not None and (
            guard.exact
            or guard.model_calls >= guard.call_limit
            or guard.tokens >= guard.token_limit
            or started >= guard.deadline
        ):
            # G6: a used-up budget ends the run before the model call beyond it. The common
            # limits are compared in line (issue 24.7); `before_model` decides and names one.
            stop = guard.before_model()
            if stop is not None:
                for item in stop_items(ctx, stop):
                    yield item
                raise stop

        observe = ctx.observe
        reason_id = new_reason_id()
        if observe:
            yield _reason_start(ctx, reason_id, request)
        deltas = DeltaTracker(ctx, reason_id) if observe else None
        # E1: state written by model callbacks travels on this step's model events.
        actions = Actions()
        cb_ctx = CallbackContext(ctx, actions)
        last: Event | None = None
        tripped: GuardrailTripped | None = None
        responses = call_model(agent, self.model, ctx, request, cb_ctx)
        try:
            async for response in responses:
                if (
                    response.content is None
                    and response.error_code is None
                    and not (response.interrupted)
                ):
                    continue
                event = last = self._model_event(ctx, response, request.tools, actions)
                calls: list[FunctionCall] | None = None
                guardrails = agent.output_guardrails
                if guardrails:
                    if event.partial:
                        # G6: an answer is shown only once its guardrails passed (not even
                        # in the round's end, should the stream stop on this partial).
                        last = None
                        continue
                    # F2 in the order a model event allows: with calls it is final only when
                    # they are long-running or skip summarization; read without a call when
                    # not (issue 24.7).
                    calls = event.get_function_calls()
                    output = event.content
                    if (
                        output is not None
                        and (
                            not calls
                            or event.long_running_tool_ids
                            or event.actions.skip_summarization
                        )
                        and event.is_final_response()
                    ):
                        # The first guardrail called and a passing verdict read in line;
                        # `check_output` settles the rest (issue 24.7).
                        readonly = self._readonly
                        if readonly is None:
                            readonly = self._readonly = ReadonlyContext(ctx)
                        verdict = guardrails[0].guardrail_function(readonly, agent, output)
                        if (
                            guardrails[1:]
                            or type(verdict) is not GuardrailFunctionOutput
                            or verdict.tripwire_triggered
                        ):
                            checked = await check_output(agent, readonly, event, verdict)
                            if checked is not None:
                                event = last = checked[0]
                                tripped = checked[1]
                                calls = None  # the replacement's, read below
                if agent.output_key is not None:
                    event = last = agent.with_output_key(event)
                if observe and deltas is None:
                    # Another response in the same stream after a round closed: a new round.
                    reason_id = new_reason_id()
                    yield _reason_start(ctx, reason_id, request)
                    deltas = DeltaTracker(ctx, reason_id)
                if deltas is not None and event.partial:
                    for delta in deltas.feed(event):
                        yield delta
                if ctx.trace is not None and not event.partial:
                    ctx.trace.model_event(event)  # O1: the chat span ends with its record
                yield event
                if event.partial:
                    continue  # F5: partial events never dispatch tools.
                if calls is None:
                    calls = event.get_function_calls()
                if deltas is not None:
                    for item in deltas.finish(event, calls, started):
                        yield item
                    deltas = None  # this round is closed
                    if event.long_running_tool_ids and not calls:
                        yield self._pending(ctx, event, None)
                if tripped is not None:
                    # G6: the replaced (or withheld) answer is stored; the run ends on it.
                    for item in stop_items(ctx, tripped, record=event):
                        yield item
                    raise tripped
                if not calls:
                    continue
                acted = self._act(ctx, request, event, calls, reason_id)
                try:
                    async for item in acted:
                        yield item
                finally:
                    await acted.aclose()
                return
        finally:
            await responses.aclose()
        if deltas is not None:
            # The model said nothing, or its stream ended on a partial (F4): the round
            # still ends, with whatever it produced.
            for item in deltas.finish(last, [], started):
                yield item

    async def _resume(
        self, ctx: InvocationContext, point: ResumePoint
    ) -> AsyncGenerator[Item, None]:
        """D1: the rest of the step an interrupted invocation stopped in. In-flight calls run
        again with their call ids; non-idempotent ones are held for a decision instead."""
        if point.boundary == "model" or point.boundary == "after_agent":
            return
        request = ModelRequest(model=self.model.name)
        # The tool table the step had: tools, structured output and transfer tools.
        for processor in (tools_processor, output_schema_processor, transfer_processor):
            pending = processor(self, ctx, request)
            if pending is not None:
                await pending
        model_event = point.model_event
        if point.boundary == "calls" and model_event is not None:
            tools = request.tools
            held = frozenset(
                c.id
                for c in point.calls
                if c.id and not getattr(tools.get(c.name), "idempotent", True)
            )
            acted = self._act(ctx, request, model_event, list(point.calls), new_reason_id(), held)
            async with aclosing(acted) as items:
                async for item in items:
                    yield item
            return
        calls = model_event.get_function_calls() if model_event is not None else []
        acted = self._act(ctx, request, model_event, calls, new_reason_id(), stored=point.last)
        async with aclosing(acted) as items:
            async for item in items:
                yield item

    async def _act(
        self,
        ctx: InvocationContext,
        request: ModelRequest,
        model_event: Event | None,
        calls: list[FunctionCall],
        reason_id: str,
        held: frozenset[str] = frozenset(),
        stored: Event | None = None,
    ) -> AsyncGenerator[Item, None]:
        """F5: tool responses, then confirmation, then structured output, then transfer.
        With `stored` (a resume, D1) the tool responses are that stored event."""
        agent = self.agent
        tool_event = stored
        waiting: Event | None = None  # H4: calls whose nested runs wait
        if tool_event is None:
            dispatch = handle_function_calls(agent, ctx, calls, request.tools, reason_id, held=held)
            try:
                async for item in dispatch:
                    if isinstance(item, Event):
                        if item.nested_pause is not None:
                            waiting = item
                        else:
                            tool_event = item
                    yield item
            finally:
                await dispatch.aclose()
        if tool_event is None:
            if ctx.observe and (
                waiting is not None
                or (model_event is not None and model_event.long_running_tool_ids)
            ):
                yield self._pending(ctx, model_event, waiting)
            return
        confirm = confirmation_event(ctx, agent.name, calls, tool_event)
        if confirm is not None:
            yield confirm
            if ctx.observe:
                yield self._pending(ctx, model_event or tool_event, confirm, waiting)
        elif ctx.observe and (
            waiting is not None or (model_event is not None and model_event.long_running_tool_ids)
        ):
            answered = {r.id for r in tool_event.get_function_responses()}
            if waiting is not None or (
                model_event is not None and not model_event.long_running_tool_ids <= answered
            ):
                yield self._pending(ctx, model_event, tool_event, waiting)
        if waiting is not None:
            # The step is not over: it goes on (structured output, transfer, the next
            # model call) once the nested runs are answered and their calls respond.
            return
        final = self._structured_output_event(ctx, tool_event)
        if final is not None:
            guardrails = agent.output_guardrails
            if guardrails and final.content is not None:
                readonly = self._readonly
                if readonly is None:
                    readonly = self._readonly = ReadonlyContext(ctx)
                verdict = guardrails[0].guardrail_function(readonly, agent, final.content)
                checked = (
                    await check_output(agent, readonly, final, verdict)
                    if guardrails[1:]
                    or type(verdict) is not GuardrailFunctionOutput
                    or verdict.tripwire_triggered
                    else None
                )
                if checked is not None:
                    yield agent.with_output_key(checked[0])
                    for item in stop_items(ctx, checked[1], record=checked[0]):
                        yield item
                    raise checked[1]
            yield agent.with_output_key(final)
        target_name = tool_event.actions.transfer_to_agent
        if target_name:
            target = self._transfer_target(target_name)
            async with aclosing(target.run_async(ctx)) as items:
                async for item in items:
                    yield item

    def _transfer_target(self, name: str) -> AgentNode:
        for target in self.transfer_targets:
            if target.name == name:
                return target
        legal = ", ".join(t.name for t in self.transfer_targets) or "none"
        raise TransferError(
            f"agent {self.agent.name!r} cannot transfer to {name!r} (legal targets: {legal})"
        )

    def _model_event(
        self,
        ctx: InvocationContext,
        response: ModelResponse,
        tools: dict[str, BaseTool],
        actions: Actions,
    ) -> Event:
        """E1/E2: wrap a response as this agent's record on the invocation's branch."""
        long_running: set[str] = set()
        content = response.content
        if content is not None and tools:
            for part in content.parts:
                call = part.function_call
                if call is not None and call.id:
                    tool = tools.get(call.name)
                    if tool is not None and tool.is_long_running:
                        long_running.add(call.id)
        event_actions = actions.to_record()
        return ctx.new_event(
            self.agent.name,
            content=content,
            partial=response.partial,
            turn_complete=response.turn_complete,
            finish_reason=response.finish_reason,
            error_code=response.error_code,
            error_message=response.error_message,
            interrupted=response.interrupted,
            usage=response.usage,
            actions=event_actions,
            long_running_tool_ids=frozenset(long_running),
            input_transcription=response.input_transcription,
            output_transcription=response.output_transcription,
            custom_metadata=response.custom_metadata,
        )

    def _structured_output_event(self, ctx: InvocationContext, tool_event: Event) -> Event | None:
        """S2: a valid `set_model_response` becomes the final model-role text event."""
        for response in tool_event.get_function_responses():
            if response.name == SET_MODEL_RESPONSE and "error" not in response.response:
                body: Any = response.response
                schema = self.agent.output_json_schema or {}
                if schema.get("type") != "object" and set(body) == {"result"}:
                    body = body["result"]
                return ctx.new_event(
                    self.agent.name,
                    content=Content.model(json.dumps(body, ensure_ascii=False)),
                )
        return None

    def _pending(self, ctx: InvocationContext, *events: Event | None) -> HITLPending:
        """What the step's records leave waiting, in their order."""
        from rondo.sessions.base import apply_pending

        pending: list[PendingCall] = []
        for event in events:
            if event is not None:
                pending = apply_pending(pending, event)
        return HITLPending(**ctx.correlation(), pending=pending)
