"""The live loop: one persistent model connection instead of one request per step (SPEC L1–L3,
seed 000 §4.9 `RunLive`).

The request is built once by the ordinary processors (instructions, tools, history as the
initial context; compaction and structured output are off), then one connection carries the
call: what the caller writes to the `LiveRequestQueue` goes out, what the model sends comes
back as records. Function calls run through `handle_function_calls` (validation, tool hooks,
plugins, concurrent calls) and their responses go back on the connection; a streaming tool runs
in the background and pushes its chunks as messages. Tool records are held while a
transcription is running, so a reader sees the words before the tool that follows them.

Which hooks fire: `before_agent`/`after_agent` once per call; the tool hooks (agent and
plugin `before_tool`, `after_tool`, `on_tool_error`) for every ordinary call; never the model
hooks (`before_model`, `after_model`, `on_model_error`) — there is no per-step model call —
and no tool hook for a streaming tool (the seed's `RunStream` branch).

A dropped connection is reconnected only for the seed's recoverable cases (`lost_reason`),
with the resumption handle when the provider gave one; each reconnect is a record whose
`custom_metadata["live"]` says `resumed` (the provider session continued through a handle) or
not (a new provider session primed from the log). A failed connect ends the run.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing, suppress
from typing import TYPE_CHECKING, Any, Unpack, cast

from rondo._ids import new_client_call_id, new_reason_id
from rondo.context import Actions, CallbackContext, ToolContext
from rondo.errors import ConfigurationError
from rondo.events import Event, EventActions, EventFields
from rondo.flow.contents import NUDGE_TEXT
from rondo.flow.functions import handle_function_calls
from rondo.flow.loop import Flow
from rondo.flow.processors.basic import basic_processor
from rondo.flow.processors.confirmation import confirmation_event, confirmation_processor
from rondo.flow.processors.contents import contents_processor
from rondo.flow.processors.identity import identity_processor
from rondo.flow.processors.instructions import instructions_processor
from rondo.flow.processors.tools import tools_processor
from rondo.flow.processors.transfer import transfer_processor
from rondo.lifecycle import Item, ReasonDelta, ReasonEnd, ReasonStart, Transcript
from rondo.models.base import ModelRequest, ModelResponse
from rondo.models.live import (
    LIVE_METADATA,
    LiveConnectConfig,
    LiveConnectError,
    LiveConnection,
    LiveModel,
    LiveRequest,
    LiveRequestQueue,
    LiveResponse,
    is_live_model,
    lost_reason,
)
from rondo.sessions.base import CONFIRMATION_FUNCTION_NAME
from rondo.types import Blob, Content, FunctionCall, FunctionResponse, Part

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.views import FlowView, LlmAgentView, RequestProcessor
    from rondo.models.base import Model
    from rondo.run_config import RunConfig

__all__ = ["LIVE_METADATA", "LIVE_PROCESSORS", "live_connect_config", "run_live_call"]

logger = logging.getLogger("rondo.live")

# The text loop's processors minus compaction (off in live, seed §4.9) and structured output
# (no final `set_model_response` turn on a connection). Confirmation stays: a call approved
# before the live call started is resumed once, before connecting.
LIVE_PROCESSORS: tuple[RequestProcessor, ...] = (
    basic_processor,
    tools_processor,
    confirmation_processor,
    instructions_processor,
    identity_processor,
    contents_processor,
    transfer_processor,
)
# Rebuilding the initial context for a reconnect without a handle: nothing is re-dispatched.
_REBUILD_PROCESSORS = tuple(p for p in LIVE_PROCESSORS if p is not confirmation_processor)


def live_connect_config(run_config: RunConfig, handle: str | None) -> LiveConnectConfig:
    """The connection settings a run config asks for (`handle`: the provider session to
    continue)."""
    resumption = run_config.session_resumption
    return LiveConnectConfig(
        response_modalities=run_config.response_modalities,
        speech_config=run_config.speech_config,
        input_audio_transcription=bool(run_config.input_audio_transcription),
        output_audio_transcription=bool(run_config.output_audio_transcription),
        session_resumption=resumption is not None,
        resumption_handle=handle,
        transparent_resumption=resumption.transparent if resumption is not None else None,
        realtime_input_config=run_config.realtime_input_config,
    )


def live_model_of(agent: LlmAgentView) -> LiveModel:
    model = agent.canonical_model
    if not is_live_model(model):
        raise ConfigurationError(
            f"agent {agent.name!r} cannot run live: its model {model.name!r} holds no live "
            "connection; give it a live model (e.g. 'gemini-live-2.5-flash-preview', "
            "'openai:gpt-realtime', rondo.testing.ScriptedLiveModel)"
        )
    return cast(LiveModel, model)


def last_resumption_handle(ctx: InvocationContext) -> str | None:
    """The newest handle stored in the session: a dropped call continues from the log."""
    for event in reversed(ctx.session.events):
        meta = event.custom_metadata
        if event.author == ctx.agent.name and meta is not None and LIVE_METADATA in meta:
            handle = meta[LIVE_METADATA].get("resumption_handle")
            if handle:
                return str(handle)
    return None


def run_live_call(
    agent: LlmAgentView, ctx: InvocationContext, queue: LiveRequestQueue
) -> AsyncGenerator[Item, None]:
    """The agent's live call in its own context (`Agent.run_live` wraps it in the agent's
    hooks and span, as `run_async` wraps a turn)."""
    return _LiveCall(agent, live_model_of(agent), ctx, queue).run()


_Inbox = asyncio.Queue[tuple[str, int, Any]]


class _Turn:
    """What one model turn has produced so far: text, audio, transcription pieces."""

    __slots__ = (
        "audio",
        "audio_mime",
        "input",
        "output",
        "reason_id",
        "span",
        "started",
        "text",
    )

    def __init__(self) -> None:
        self.audio_mime = "audio/pcm"
        self.text: list[str] = []
        self.audio: list[bytes] = []
        self.input: list[str] = []
        self.output: list[str] = []
        self.reason_id = new_reason_id()
        self.started = time.perf_counter()
        self.span: Any = None


class _LiveCall:
    """One live call of one agent: the connection, its two pumps, the records it yields."""

    def __init__(
        self, agent: LlmAgentView, model: LiveModel, ctx: InvocationContext, queue: LiveRequestQueue
    ) -> None:
        self.agent = agent
        self.model = model
        self.ctx = ctx
        self.queue = queue
        self.flow = Flow(agent, cast("Model", model))
        # The flow's processor table has the text loop's type; live runs a subset of it.
        self.flow.processors = cast(Any, LIVE_PROCESSORS)
        self.request = ModelRequest(model=model.name)
        self.inbox: _Inbox = asyncio.Queue()
        self.conn: LiveConnection | None = None
        self.generation = 0
        self.connected = asyncio.Event()
        self.handle: str | None = None
        self.turn: _Turn | None = None
        self.held: list[Item] = []
        self.tasks: set[asyncio.Task[Any]] = set()
        self.blobs_in: list[bytes] = []
        self.blob_mime = "audio/pcm"
        self.turns_saved = 0
        if ctx.run_config.save_live_blob and ctx.artifact_service is None:
            raise ConfigurationError(
                "save_live_blob stores the call's audio as artifacts: give the Runner an "
                "artifact_service"
            )

    # -- the call ---------------------------------------------------------------------------

    async def run(self) -> AsyncGenerator[Item, None]:
        ctx = self.ctx
        async with aclosing(self.flow._preprocess(ctx, self.request)) as pre:  # pyright: ignore[reportPrivateUsage]
            async for item in pre:
                yield item
        _drop_nudge(self.request)
        if ctx.end_invocation:
            return
        config = ctx.run_config
        if config.session_resumption is not None:
            self.handle = config.session_resumption.handle or last_resumption_handle(ctx)
        await self._connect(first=True)
        pump = asyncio.ensure_future(self._pump_requests())
        self.tasks.add(pump)
        try:
            async with aclosing(self._serve()) as items:
                async for item in items:
                    yield item
            for item in await self._flush_turn(interrupted=True, complete=False):
                yield item
            for item in self._release():
                yield item
        finally:
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            await self._close_connection()
            self._end_turn_span()

    async def _serve(self) -> AsyncGenerator[Item, None]:
        """Handle what the pumps report until the caller closes or the model ends the call."""
        reconnects = 0
        while True:
            kind, generation, value = await self.inbox.get()
            if generation != self.generation and kind in ("lost", "ended"):
                continue  # a report about a connection already replaced
            if kind == "close" or kind == "ended":
                return
            if kind == "lost":
                reconnects += 1
                if reconnects > self.ctx.run_config.max_live_reconnects:
                    raise LiveConnectError(
                        f"live connection of agent {self.agent.name!r} dropped "
                        f"{reconnects} times in a row ({value[0]}); giving up"
                    ) from value[1]
                for item in await self._flush_turn(interrupted=True, complete=False):
                    yield item
                for item in self._release():
                    yield item
                yield await self._reconnect(value[0])
            elif kind == "failed":
                raise value
            elif kind == "model":
                reconnects = 0
                async with aclosing(self._on_response(value)) as items:
                    async for item in items:
                        yield item
            elif kind == "user":
                async with aclosing(self._on_user_content(value)) as items:
                    async for item in items:
                        yield item

    # -- the connection ---------------------------------------------------------------------

    async def _connect(self, *, first: bool) -> bool:
        """Open a connection (with the handle when there is one); True when it resumed."""
        config = live_connect_config(self.ctx.run_config, self.handle)
        try:
            conn = await self.model.connect(self.request, config)
        except Exception as exc:
            what = "open" if first else "reopen"
            raise LiveConnectError(
                f"could not {what} the live connection of agent {self.agent.name!r} to "
                f"{self.model.name!r}: {exc}"
            ) from exc
        self.generation += 1
        self.conn = conn
        self.connected.set()
        receiver = asyncio.ensure_future(self._pump_responses(conn, self.generation))
        self.tasks.add(receiver)
        receiver.add_done_callback(self.tasks.discard)
        return config.resumption_handle is not None

    async def _reconnect(self, reason: str) -> Event:
        self.connected.clear()
        await self._close_connection()
        if self.handle is None:
            # A new provider session: prime it with the history the log now holds (what was
            # said and done on the dropped connection included).
            self.request = ModelRequest(model=self.model.name)
            self.flow.processors = cast(Any, _REBUILD_PROCESSORS)
            async with aclosing(self.flow._preprocess(self.ctx, self.request)) as pre:  # pyright: ignore[reportPrivateUsage]
                async for _ in pre:
                    pass
            _drop_nudge(self.request)
        resumed = await self._connect(first=False)
        logger.info(
            "agent %s: live reconnect after %s (resumed=%s)", self.agent.name, reason, resumed
        )
        return self._record(
            {"reconnected": True, "resumed": resumed, "reason": reason, "handle": self.handle}
        )

    async def _close_connection(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with suppress(Exception):
                await conn.close()

    async def _pump_responses(self, conn: LiveConnection, generation: int) -> None:
        put = self.inbox.put_nowait
        try:
            async with aclosing(cast(AsyncGenerator[LiveResponse, None], conn.receive())) as rx:
                async for response in rx:
                    if response.go_away:
                        put(("lost", generation, ("go_away", None)))
                        return
                    put(("model", generation, response))
        except Exception as exc:
            reason = lost_reason(exc)
            put(("lost", generation, (reason, exc)) if reason else ("failed", generation, exc))
            return
        put(("ended", generation, None))

    async def _pump_requests(self) -> None:
        """Forward the caller's requests; a send that hits a dropped connection waits for the
        next one and sends again."""
        put = self.inbox.put_nowait
        while True:
            request = await self.queue.get()
            if request.close:
                put(("close", 0, None))
                return
            content = request.content
            if content is not None:
                if any(p.function_call for p in content.parts):
                    put(
                        (
                            "failed",
                            0,
                            ConfigurationError("a live message cannot hold function calls"),
                        )
                    )
                    return
                put(("user", 0, content))
                if _only_confirmations(content):
                    continue  # answered here (the tool resumes), never sent to the model
            elif request.blob is not None and self.ctx.run_config.save_live_blob:
                self.blobs_in.append(request.blob.data)
                self.blob_mime = request.blob.mime_type
            await self._send(request)

    async def _send(self, request: LiveRequest) -> None:
        while True:
            await self.connected.wait()
            conn, generation = self.conn, self.generation
            if conn is None:
                self.connected.clear()
                continue
            try:
                await conn.send(request)
                return
            except Exception as exc:
                reason = lost_reason(exc)
                if reason is None:
                    self.inbox.put_nowait(("failed", generation, exc))
                    return
                self.connected.clear()
                self.inbox.put_nowait(("lost", generation, (reason, exc)))

    # -- what the caller sends --------------------------------------------------------------

    async def _on_user_content(self, content: Content) -> AsyncGenerator[Item, None]:
        ctx = self.ctx
        if content.role != "user":
            content = content.model_copy(update={"role": "user"})
        event = ctx.new_event("user", content=content)
        # Stored directly, as run_async stores the user's message: never yielded back.
        await ctx.session_service.append_event(ctx.session, event)
        if not _only_confirmations(content):
            return
        # L3: a decision on a call waiting inside the call: the tool resumes now and its
        # response goes to the model, the connection open all along.
        ctx.user_content = content
        responses: list[FunctionResponse] = []
        async with aclosing(_resume_confirmed(self.flow, ctx, self.request)) as items:
            async for item in items:
                if isinstance(item, Event):
                    responses.extend(item.get_function_responses())
                yield item
        if responses:
            await self._send(LiveRequest(content=_responses_content(responses)))

    # -- what the model sends ---------------------------------------------------------------

    async def _on_response(self, response: LiveResponse) -> AsyncGenerator[Item, None]:
        if response.resumption_handle:
            self.handle = response.resumption_handle
            yield self._record({"resumption_handle": response.resumption_handle})
        content = response.content
        calls = [p.function_call for p in content.parts if p.function_call] if content else []
        if calls:
            async with aclosing(self._on_calls(calls)) as items:
                async for item in items:
                    yield item
        elif content is not None and content.parts:
            for item in self._on_output(content):
                yield item
        for item in self._on_transcription(response):
            yield item
        if response.error_code is not None:
            yield self._event(error_code=response.error_code, error_message=response.error_message)
        if response.turn_complete or response.interrupted:
            flushed = await self._flush_turn(
                interrupted=response.interrupted, complete=response.turn_complete
            )
            if not flushed and response.turn_complete:
                # The provider ends a turn that showed nothing, e.g. Gemini 2.5 after a tool
                # call: passed on (and stored) as google-adk does.
                flushed = [self._event(turn_complete=True, interrupted=response.interrupted)]
            for item in flushed:
                yield item
            for item in self._release():
                yield item

    def _open_turn(self) -> tuple[_Turn, list[Item]]:
        turn = self.turn
        if turn is not None:
            return turn, []
        turn = self.turn = _Turn()
        trace = self.ctx.trace
        if trace is not None:
            from opentelemetry import trace as otel

            turn.span = trace.child_span(
                f"live_turn {self.agent.name}",
                otel.SpanKind.CLIENT,
                {"gen_ai.operation.name": "live_turn", "gen_ai.request.model": self.model.name},
            )
        if self.ctx.observe:
            return turn, [ReasonStart(**self.ctx.correlation(), reason_id=turn.reason_id)]
        return turn, []

    def _on_output(self, content: Content) -> list[Item]:
        turn, out = self._open_turn()
        for part in content.parts:
            if part.text and not part.thought:
                turn.text.append(part.text)
            elif part.inline_data is not None and self.ctx.run_config.save_live_blob:
                turn.audio.append(part.inline_data.data)
                turn.audio_mime = part.inline_data.mime_type
        event = self._event(content=content, partial=True)
        if self.ctx.observe:
            out.extend(self._deltas(turn, content))
        out.append(event)
        return out

    def _deltas(self, turn: _Turn, content: Content) -> list[Item]:
        correlation = self.ctx.correlation()
        out: list[Item] = []
        for part in content.parts:
            if part.text:
                out.append(
                    ReasonDelta(
                        **correlation, reason_id=turn.reason_id, kind="text_delta", text=part.text
                    )
                )
            elif part.inline_data is not None:
                out.append(
                    ReasonDelta(
                        **correlation,
                        reason_id=turn.reason_id,
                        kind="media",
                        media=part.inline_data,
                    )
                )
        return out

    def _on_transcription(self, response: LiveResponse) -> list[Item]:
        out: list[Item] = []
        for piece, who in (
            (response.input_transcription, "user"),
            (response.output_transcription, self.agent.name),
        ):
            if piece is None:
                continue
            turn, opened = self._open_turn()
            out.extend(opened)
            pieces = turn.input if who == "user" else turn.output
            if piece.text:
                pieces.append(piece.text)
                out.extend(self._transcript(turn, who, piece.text, partial=True))
            if piece.finished:
                out.extend(self._finish_transcript(who))
        return out

    def _finish_transcript(self, who: str) -> list[Item]:
        turn = self.turn
        if turn is None:
            return []
        pieces = turn.input if who == "user" else turn.output
        text = "".join(pieces)
        pieces.clear()
        out: list[Item] = self._transcript(turn, who, text, partial=False) if text else []
        if not turn.input and not turn.output:
            out.extend(self._release())
        return out

    def _transcript(self, turn: _Turn, who: str, text: str, *, partial: bool) -> list[Item]:
        """A transcription piece (partial) or the whole of it (stored), and its lifecycle
        `Transcript`. The whole of it is also the record's content — the user's words, or
        the model's when the turn has no text of its own — so the log reads as the
        conversation it was and a later run (or a reconnect) continues from it."""
        ctx = self.ctx
        user = who == "user"
        content: Content | None = None
        if not partial:
            content = Content.user(text) if user else None if turn.text else Content.model(text)
        record = ctx.new_event(
            who,
            content=content,
            partial=partial,
            input_transcription=text if user else None,
            output_transcription=None if user else text,
        )
        if not ctx.observe:
            return [record]
        role = "user" if user else "model"
        lifecycle = Transcript(
            **ctx.correlation(),
            reason_id=turn.reason_id,
            role=role,
            text=text,
            finished=not partial,
        )
        return [lifecycle, record]

    async def _flush_turn(self, *, interrupted: bool, complete: bool = True) -> list[Item]:
        """End the turn as google-adk does: its transcripts, the turn's whole text (none for
        an audio-only turn), then the record that marks the end of the turn — `turn_complete`
        when the provider completed it, `interrupted` when it was cut off — with the turn's
        audio as artifacts when `save_live_blob` asks for them."""
        turn = self.turn
        if turn is None:
            return []
        out = [*self._finish_transcript("user"), *self._finish_transcript(self.agent.name)]
        self.turn = None
        said = next(
            (e for e in reversed(out) if isinstance(e, Event) and e.author != "user" and e.text),
            None,
        )
        if turn.text:
            said = self._event(content=Content.model("".join(turn.text)), interrupted=interrupted)
            out.append(said)
        final = self._event(
            turn_complete=True if complete else None,
            interrupted=interrupted,
            actions=await self._save_audio(turn),
        )
        out.append(final)
        if self.ctx.observe:
            out.append(
                ReasonEnd(
                    **self.ctx.correlation(),
                    reason_id=turn.reason_id,
                    event=said or final,
                    tool_calls=[],
                    duration_ms=(time.perf_counter() - turn.started) * 1000.0,
                )
            )
        if turn.span is not None:
            turn.span.end()
        return out

    async def _save_audio(self, turn: _Turn) -> EventActions:
        """L3: the audio heard and said in this turn, one artifact per direction."""
        ctx = self.ctx
        if not ctx.run_config.save_live_blob or (not turn.audio and not self.blobs_in):
            return EventActions()
        actions = Actions()
        saver = CallbackContext(ctx, actions)
        self.turns_saved += 1
        stem = f"live_{ctx.invocation_id}_{self.turns_saved:04d}"
        for direction, chunks, mime in (
            ("input", self.blobs_in, self.blob_mime),
            ("output", turn.audio, turn.audio_mime),
        ):
            if chunks:
                blob = Blob(mime_type=mime, data=b"".join(chunks))
                await saver.save_artifact(f"{stem}_{direction}.pcm", Part(inline_data=blob))
        self.blobs_in = []
        return actions.to_record()

    def _end_turn_span(self) -> None:
        if self.turn is not None and self.turn.span is not None:
            self.turn.span.end()
            self.turn.span = None

    def _transcribing(self) -> bool:
        turn = self.turn
        return turn is not None and bool(turn.input or turn.output)

    def _release(self) -> list[Item]:
        held, self.held = self.held, []
        return held

    # -- tools ------------------------------------------------------------------------------

    async def _on_calls(self, calls: list[FunctionCall]) -> AsyncGenerator[Item, None]:
        """L1: the calls go through the one tool path; responses go back on the connection.
        While a transcription runs, the records wait for it (they are sent at once)."""
        ctx = self.ctx
        calls = [c if c.id else c.model_copy(update={"id": new_client_call_id()}) for c in calls]
        tools = self.request.tools
        streaming = [c for c in calls if getattr(tools.get(c.name), "is_streaming", False)]
        ordinary = [c for c in calls if c not in streaming]
        model_event = self.flow._model_event(  # pyright: ignore[reportPrivateUsage]
            ctx, _model_response(calls), tools, Actions()
        )
        items: list[Item] = [model_event]
        responses: list[FunctionResponse] = []
        for call in streaming:
            responses.append(self._start_streaming(call))
        tool_event: Event | None = None
        if ordinary:
            dispatch = handle_function_calls(self.agent, ctx, ordinary, tools, new_reason_id())
            async with aclosing(dispatch) as produced:
                async for item in produced:
                    if isinstance(item, Event):
                        tool_event = item
                    items.append(item)
        waiting: set[str] = set()
        if tool_event is not None:
            confirm = confirmation_event(ctx, self.agent.name, ordinary, tool_event)
            if confirm is not None:
                items.append(confirm)
                waiting = set(tool_event.actions.requested_tool_confirmations)
                if ctx.observe:
                    # L3: the lifecycle view lists the call now; the call goes on meanwhile.
                    items.append(self.flow._pending(ctx, model_event, confirm))  # pyright: ignore[reportPrivateUsage]
            responses.extend(r for r in tool_event.get_function_responses() if r.id not in waiting)
        if streaming:
            items.insert(1, self._streaming_event(responses[: len(streaming)]))
        if self._transcribing():
            self.held.extend(items)
            if responses:
                await self._send(LiveRequest(content=_responses_content(responses)))
            return
        for item in items:
            yield item  # stored by the runner before the model hears the response
        if responses:
            await self._send(LiveRequest(content=_responses_content(responses)))

    def _start_streaming(self, call: FunctionCall) -> FunctionResponse:
        """A streaming tool runs in the background; each chunk is pushed to the model."""
        tool: Any = self.request.tools[call.name]
        tctx = ToolContext(
            self.ctx, function_call_id=call.id, actions=Actions(), function_call=call
        )

        async def stream() -> None:
            try:
                async for chunk in tool.stream(dict(call.args), tctx):
                    text = f"Function {call.name} returned: {chunk}"
                    await self._send(LiveRequest(content=Content.user(text)))
            except Exception as exc:
                logger.warning("streaming tool %s failed in live: %s", call.name, exc)
                await self._send(
                    LiveRequest(content=Content.user(f"Function {call.name} failed: {exc}"))
                )

        task = asyncio.ensure_future(stream())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return FunctionResponse(
            name=call.name,
            id=call.id,
            response={"status": "running in the background; its results follow as messages"},
        )

    def _streaming_event(self, responses: list[FunctionResponse]) -> Event:
        ctx = self.ctx
        return ctx.new_event(
            self.agent.name,
            content=Content(role="user", parts=[Part(function_response=r) for r in responses]),
        )

    # -- records ----------------------------------------------------------------------------

    def _event(self, **fields: Unpack[EventFields]) -> Event:
        return self.ctx.new_event(self.agent.name, **fields)

    def _record(self, live: dict[str, object]) -> Event:
        """A bookkeeping record of the call (a resumption handle, a reconnect)."""
        return self._event(custom_metadata={LIVE_METADATA: live})


def _drop_nudge(request: ModelRequest) -> None:
    """The text loop's "continue" nudge after a model turn has no place at connect: the
    next turn is the caller's."""
    contents = request.contents
    if contents and contents[-1].role == "user" and contents[-1].text == NUDGE_TEXT:
        contents.pop()


def _only_confirmations(content: Content) -> bool:
    return bool(content.parts) and all(
        p.function_response is not None and p.function_response.name == CONFIRMATION_FUNCTION_NAME
        for p in content.parts
    )


def _resume_confirmed(
    flow: FlowView, ctx: InvocationContext, request: ModelRequest
) -> AsyncGenerator[Item, None]:
    resumed = confirmation_processor(flow, ctx, request)
    if resumed is None:
        return _nothing()
    return resumed


async def _nothing() -> AsyncGenerator[Item, None]:
    return
    yield


def _responses_content(responses: list[FunctionResponse]) -> Content:
    return Content(role="user", parts=[Part(function_response=r) for r in responses])


def _model_response(calls: list[FunctionCall]) -> ModelResponse:
    return ModelResponse(
        content=Content(role="model", parts=[Part(function_call=c) for c in calls])
    )
