"""`ScriptedModel`: a deterministic model for tests — each call consumes the next script item."""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from rondo.errors import ConfigurationError, ScriptExhaustedError
from rondo.models.aggregator import StreamAggregator
from rondo.models.base import ModelCapabilities, ModelRequest, ModelResponse
from rondo.types import Content, FunctionCall, Part

__all__ = ["ScriptItem", "ScriptedModel"]

ScriptItem = Any


def _call_response(calls: Sequence[FunctionCall]) -> ModelResponse:
    # Fresh copies: the loop assigns ids to calls, and a script may be reused.
    return ModelResponse(
        content=Content(
            role="model", parts=[Part(function_call=c.model_copy(deep=True)) for c in calls]
        )
    )


class ScriptedModel:
    """A model that answers from a script.

    Items: a `ModelResponse`; a `str` (model text); a `FunctionCall` or a list of them (one
    response with those calls); a list of `ModelResponse` chunks (a stream — if the last chunk
    is partial the library's aggregator builds the final aggregate; with `stream=False` only
    the aggregate is returned); an `Exception` (raised); or a callable `(request) -> item`,
    sync or async. `.requests` records every request. `context_window` is the window
    `ContextSize.context_length` reports.
    """

    def __init__(
        self,
        script: Sequence[ScriptItem] = (),
        *,
        name: str = "scripted",
        capabilities: ModelCapabilities | dict[str, Any] | None = None,
        context_window: int | None = None,
    ) -> None:
        self.name = name
        # V1: the window `ContextSize.context_length` reports (None: not known).
        self.context_window = context_window
        self.script: list[ScriptItem] = list(script)
        self.requests: list[ModelRequest] = []
        self.stream_flags: list[bool] = []
        if isinstance(capabilities, dict):
            capabilities = ModelCapabilities(**capabilities)
        self.capabilities = capabilities or ModelCapabilities()
        self._next = 0

    @property
    def calls(self) -> int:
        return len(self.requests)

    def extend(self, items: Sequence[ScriptItem]) -> None:
        self.script.extend(items)

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncGenerator[ModelResponse, None]:
        self.requests.append(request)
        self.stream_flags.append(stream)
        if self._next >= len(self.script):
            raise ScriptExhaustedError(
                f"ScriptedModel {self.name!r} was called {len(self.requests)} times but its "
                f"script has only {len(self.script)} items"
            )
        item = self.script[self._next]
        self._next += 1
        while callable(item) and not isinstance(item, type):
            item = item(request)
            if inspect.isawaitable(item):
                item = await item
        for response in self._responses(item, stream):
            yield response

    @staticmethod
    def _responses(item: ScriptItem, stream: bool) -> list[ModelResponse]:
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ModelResponse):
            return [item.model_copy(deep=True)]
        if isinstance(item, str):
            return [ModelResponse(content=Content.model(item))]
        if isinstance(item, FunctionCall):
            return [_call_response([item])]
        if isinstance(item, list | tuple):
            seq: list[Any] = list(item)  # pyright: ignore[reportUnknownArgumentType]
            if seq and all(isinstance(i, FunctionCall) for i in seq):
                return [_call_response(seq)]
            if seq and all(isinstance(i, ModelResponse) for i in seq):
                return _stream(seq, stream)
        raise ConfigurationError(f"ScriptedModel cannot answer with {item!r}")


def _stream(chunks: list[ModelResponse], stream: bool) -> list[ModelResponse]:
    aggregator = StreamAggregator()
    out: list[ModelResponse] = []
    final: ModelResponse | None = None
    for chunk in chunks:
        chunk = chunk.model_copy(deep=True)
        if chunk.partial:
            out.append(aggregator.add(chunk))
        else:
            final = chunk
    if final is None:
        final = aggregator.close()
    if not stream:
        return [final] if final is not None else []
    return [*out, final] if final is not None else out
