"""Helpers the provider adapters share: keys, call ids, tool arguments, per-loop clients.

Nothing here imports a provider SDK.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import weakref
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar, cast

from rondo.errors import (
    MissingAPIKeyError,
    ModelAuthError,
    ModelBadRequestError,
    ModelError,
    ModelRateLimitError,
    ModelServerError,
    ModelTimeoutError,
)
from rondo.types import Blob, FunctionCall, FunctionResponse

__all__ = [
    "CONTENT_FILTER",
    "MALFORMED_FUNCTION_CALL",
    "REFUSAL",
    "CallIds",
    "PerLoop",
    "data_url",
    "dump_json",
    "env_value",
    "error_for_status",
    "is_error_response",
    "malformed_arguments_message",
    "missing_key_error",
    "parse_arguments",
]

T = TypeVar("T")

# Error codes an adapter reports inside a ModelResponse (SPEC M5), shared so that code
# reacting to them does not depend on the provider. Other provider stop reasons that are
# errors (Gemini's RECITATION, ...) are reported lower-cased.
CONTENT_FILTER = "content_filter"
REFUSAL = "refusal"
MALFORMED_FUNCTION_CALL = "malformed_function_call"


def env_value(*names: str) -> str | None:
    """The first non-empty environment variable among `names`."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def missing_key_error(spec: str, variables: Sequence[str]) -> MissingAPIKeyError:
    options = " or ".join(variables)
    return MissingAPIKeyError(
        f"model {spec!r} needs an API key: set {options} or pass api_key=... to the model",
        variables=tuple(variables),
    )


def error_for_status(status: int | None) -> type[ModelError]:
    """The `ModelError` subclass for a provider's HTTP status."""
    if status is None:
        return ModelError
    if status == 429:
        return ModelRateLimitError
    if status in (401, 403):
        return ModelAuthError
    if status == 408:
        return ModelTimeoutError
    if status >= 500:
        return ModelServerError
    if 400 <= status < 500:
        return ModelBadRequestError
    return ModelError


def parse_arguments(raw: str | None) -> dict[str, object] | None:
    """A tool call's JSON arguments as a dict; None when they are not a JSON object."""
    text = (raw or "").strip()
    if not text:
        return {}
    try:
        value: Any = json.loads(text)
    except ValueError:
        return None
    return cast(dict[str, object], value) if isinstance(value, dict) else None


def malformed_arguments_message(name: str, raw: str | None) -> str:
    shown = raw if raw is None or len(raw) <= 500 else raw[:500] + "…"
    return f"the model called {name!r} with arguments that are not a JSON object: {shown!r}"


def dump_json(value: Any) -> str:
    """JSON for a tool result; values JSON cannot represent are written as strings."""
    return json.dumps(value, ensure_ascii=False, default=str)


def unpaired_result_text(response: FunctionResponse) -> str:
    """A tool result no call waits for, told in words rather than breaking call pairing."""
    return f"Tool `{response.name}` returned: {dump_json(response.response)}"


def is_error_response(response: FunctionResponse) -> bool:
    """True for the `{"error": ...}` shape rondo gives failed tool calls (SPEC T3)."""
    return set(response.response) == {"error"}


def data_url(blob: Blob) -> str:
    return f"data:{blob.mime_type};base64,{base64.b64encode(blob.data).decode('ascii')}"


class CallIds:
    """Call ids for providers that need every call paired with its result by id.

    The loop strips the ids it invented itself before history goes back to a model (SPEC C7),
    and some providers give none. Such calls get an id here, consistent within one request: a
    response without an id answers the oldest unanswered call of the same name.
    """

    __slots__ = ("_count", "_open")

    def __init__(self) -> None:
        self._open: defaultdict[str, deque[str]] = defaultdict(deque)
        self._count = 0

    def call_id(self, call: FunctionCall) -> str:
        if call.id:
            return call.id
        self._count += 1
        call_id = f"call_{self._count}"
        self._open[call.name].append(call_id)
        return call_id

    def response_id(self, response: FunctionResponse) -> str | None:
        """The id of the call `response` answers; None when no call is waiting for it."""
        if response.id:
            return response.id
        waiting = self._open.get(response.name)
        return waiting.popleft() if waiting else None


class PerLoop(Generic[T]):
    """One value per running event loop, made on first use in that loop.

    An async HTTP client's connection pool belongs to the loop that opened it, and sync entry
    points (`run_sync`) run each call on a new loop; sharing one SDK client across loops
    fails on the second call.
    """

    __slots__ = ("_factory", "_loop", "_value")

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._value: T | None = None

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        if self._value is None or self._loop is None or self._loop() is not loop:
            self._value = self._factory()
            self._loop = weakref.ref(loop)
        return self._value

    def current(self) -> T | None:
        """The value made for the running loop, if any (for closing it)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        if self._loop is not None and self._loop() is loop:
            return self._value
        return None

    def forget(self) -> None:
        self._value = None
        self._loop = None
