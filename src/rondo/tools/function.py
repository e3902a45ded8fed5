"""Function tools: plain Python functions (sync or async) as tools (SPEC T1)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, cast, overload

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_jsonable_python

from rondo._threads import run_sync_in_thread
from rondo.context import ToolContext
from rondo.errors import ToolDefinitionError, ToolResultError, ToolTimeoutError
from rondo.models.base import FunctionDeclaration
from rondo.tools._schema import FunctionSignature
from rondo.tools.base import BaseTool

__all__ = [
    "CONFIRMATION_REQUIRED",
    "FunctionTool",
    "LongRunningFunctionTool",
    "as_tool",
    "to_response",
    "tool",
]

CONFIRMATION_REQUIRED = "confirmation required"


def to_response(value: Any) -> dict[str, object]:
    """A tool's return value as a JSON-ready function-response dict."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if not isinstance(value, dict):
        value = {"result": value}
    try:
        return to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise ToolResultError(
            f"the tool returned a value that is not JSON-serializable: {exc}"
        ) from None


class FunctionTool(BaseTool):
    """A tool made from a function. Name, description and parameter schema come from its
    signature, type hints and docstring; a parameter annotated `ToolContext` (or named
    `tool_context`) receives the context and is hidden from the model.

    `timeout` (seconds) turns a call that runs longer into an error response (D3).
    `idempotent=False` marks a tool whose side effect must not happen twice: a call that was
    in flight when its run was interrupted is not re-run on resume; the run pauses on it for a
    decision, as a confirmation does (D1).
    """

    def __init__(
        self,
        func: Callable[..., object],
        *,
        name: str | None = None,
        description: str | None = None,
        require_confirmation: bool | Callable[..., object] = False,
        is_long_running: bool = False,
        idempotent: bool = True,
        timeout: float | None = None,
    ) -> None:
        if not callable(func):
            raise ToolDefinitionError(f"a function tool needs a callable, got {func!r}")
        tool_name = name or getattr(func, "__name__", "") or ""
        super().__init__(name=tool_name, is_long_running=is_long_running)
        # A generator function is a streaming tool (SPEC T5, G5): its chunks reach the
        # lifecycle stream as progress and are aggregated into one response; it goes through
        # confirmation and the tool hooks like any other tool.
        self.is_streaming = inspect.isasyncgenfunction(func) or inspect.isgeneratorfunction(func)
        self.func = func
        self._signature = FunctionSignature(func, self.name, ToolContext)
        self.description = description if description is not None else self._signature.description
        self.require_confirmation = require_confirmation
        self.idempotent = idempotent
        if timeout is not None and not timeout > 0:
            raise ToolDefinitionError(
                f"tool {self.name!r}: timeout must be > 0 seconds, got {timeout}"
            )
        self.timeout = timeout
        if timeout is not None:
            # Only a tool with a timeout pays for it: `run` goes through the deadline.
            self.run = self._run_within_timeout
        self._is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
            type(func).__call__
        )
        self._declaration = FunctionDeclaration(
            name=self.name, description=self.description, parameters=self._signature.parameters
        )

    @property
    def parameters(self) -> dict[str, object]:
        return self._signature.parameters

    def declaration(self) -> FunctionDeclaration:
        return self._declaration

    def validate_args(self, args: dict[str, object]) -> dict[str, object]:
        """Validated keyword arguments, or `ToolArgumentsError` naming what is wrong."""
        return self._signature.validate(args)

    async def _needs_confirmation(self, kwargs: dict[str, object]) -> bool:
        rc = self.require_confirmation
        if callable(rc):
            needed = rc(**kwargs)
            if inspect.isawaitable(needed):
                needed = await needed
            return bool(needed)
        return bool(rc)

    async def confirmation_gate(
        self, args: dict[str, object], tool_context: ToolContext
    ) -> dict[str, object] | None:
        """H1/H2: with `require_confirmation`, the call waits for a human (the response is
        "confirmation required") or, refused, is answered without running."""
        if not self.require_confirmation:
            return None
        kwargs = self._signature.validate(args)
        if not await self._needs_confirmation(kwargs):
            return None
        confirmation = tool_context.tool_confirmation
        if confirmation is None:
            tool_context.request_confirmation(
                hint=f"Please approve or reject the call to {self.name}."
            )
            return {"error": CONFIRMATION_REQUIRED}
        if not confirmation.confirmed:
            payload = confirmation.payload
            comment = payload.get("comment") if isinstance(payload, dict) else None  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
            note = f" Comment: {comment}" if comment else ""
            return {"error": f"This tool call was rejected by the user.{note}"}
        return None

    async def _run_within_timeout(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        try:
            async with asyncio.timeout(self.timeout):
                return await type(self).run(self, args, tool_context)
        except TimeoutError:
            # D3: a hung tool becomes an error response the model sees. A sync tool's thread
            # cannot be killed: it is told to stop, and its late result is never stored.
            tool_context.cancel_event.set()
            raise ToolTimeoutError(
                f"the tool {self.name!r} did not return within {self.timeout:g} s"
            ) from None

    async def run(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        kwargs = self._signature.validate(args)
        if self._signature.context_param is not None:
            kwargs[self._signature.context_param] = tool_context
        if self.is_streaming:
            return await self._drain(kwargs, tool_context)
        if self._is_async:
            return await cast(Awaitable[object], self.func(**kwargs))  # a coroutine function
        result = await run_sync_in_thread(self.func, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def _drain(self, kwargs: dict[str, object], tool_context: ToolContext) -> Any:
        """G5: report each chunk as progress; the response aggregates them (text chunks
        are joined, anything else becomes the list of chunks)."""
        chunks: list[object] = []
        async for chunk in self._chunks(kwargs):
            chunks.append(chunk)
            tool_context.report_progress(chunk)
        texts = [c for c in chunks if isinstance(c, str)]
        if chunks and len(texts) == len(chunks):
            return "".join(texts)
        return chunks

    async def stream(
        self, args: dict[str, object], tool_context: ToolContext
    ) -> AsyncIterator[Any]:
        """The chunks of a streaming tool (its generator), arguments validated first; no
        confirmation, hooks or progress (the loop calls `run`, which has them)."""
        kwargs = self._signature.validate(args)
        if self._signature.context_param is not None:
            kwargs[self._signature.context_param] = tool_context
        async for chunk in self._chunks(kwargs):
            yield chunk

    async def _chunks(self, kwargs: dict[str, object]) -> AsyncIterator[Any]:
        if inspect.isasyncgenfunction(self.func):
            async for chunk in cast(AsyncIterator[object], self.func(**kwargs)):
                yield chunk
            return
        iterator = iter(cast(Iterable[object], self.func(**kwargs)))  # a generator function
        done = object()
        while True:  # a sync generator advances in a worker thread, one chunk at a time
            chunk = await run_sync_in_thread(next, iterator, done)
            if chunk is done:
                return
            yield chunk

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function directly."""
        return self.func(*args, **kwargs)


class LongRunningFunctionTool(FunctionTool):
    """A function tool whose result may arrive later: returning None means "no response yet"."""

    def __init__(self, func: Callable[..., object], **kwargs: Any) -> None:
        kwargs["is_long_running"] = True
        super().__init__(func, **kwargs)


@overload
def tool(func: Callable[..., object], /) -> FunctionTool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    require_confirmation: bool | Callable[..., object] = False,
    is_long_running: bool = False,
    idempotent: bool = True,
    timeout: float | None = None,
) -> Callable[[Callable[..., object]], FunctionTool]: ...
def tool(
    func: Callable[..., object] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    require_confirmation: bool | Callable[..., object] = False,
    is_long_running: bool = False,
    idempotent: bool = True,
    timeout: float | None = None,
) -> FunctionTool | Callable[[Callable[..., object]], FunctionTool]:
    """Decorator: `@tool` or `@tool(name=..., require_confirmation=True)` → `FunctionTool`."""

    def wrap(f: Callable[..., object]) -> FunctionTool:
        return FunctionTool(
            f,
            name=name,
            description=description,
            require_confirmation=require_confirmation,
            is_long_running=is_long_running,
            idempotent=idempotent,
            timeout=timeout,
        )

    return wrap(func) if func is not None else wrap


def as_tool(value: Any) -> BaseTool:
    """A tool from a `BaseTool` or a plain function."""
    if isinstance(value, BaseTool):
        return value
    if callable(value):
        return FunctionTool(value)
    raise ToolDefinitionError(f"not a tool or a function: {value!r}")
