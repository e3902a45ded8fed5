"""What every SDK-backed adapter shares: a client per event loop (or one the caller gave),
and one retry policy around each call (`retry_stream`: never after output was yielded)."""

from __future__ import annotations

import abc
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import ClassVar, Generic, TypeVar

from rondo.errors import ModelConnectionError, ModelError, ModelTimeoutError, RondoError
from rondo.models._retry import RetryPolicy, is_transport_error, retry_stream
from rondo.models._shared import PerLoop, error_for_status
from rondo.models.base import ModelRequest, ModelResponse

__all__ = ["SdkModel"]

ClientT = TypeVar("ClientT")


class SdkModel(abc.ABC, Generic[ClientT]):
    """Base of the provider adapters. Subclasses set `provider`, the clients and the retry
    policy in `__init__`, and implement `_complete`, `_stream` and the error classifiers."""

    provider: ClassVar[str]
    name: str
    retry: RetryPolicy
    _clients: PerLoop[ClientT] | None
    _shared: ClientT | None

    # V1: the model's context window in tokens (None: not known). Set it to override;
    # otherwise `load_context_window()` asks the provider once (`_fetch_context_window`).
    context_window: int | None = None
    _window_asked: bool = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    async def load_context_window(self) -> int | None:
        """The context window: as set, or as the provider's model metadata says (asked once
        per model object; a failed or unanswered ask is None, never an error)."""
        if self.context_window is not None or self._window_asked:
            return self.context_window
        self._window_asked = True
        try:
            window = await self._fetch_context_window()
        except Exception:  # an optional figure: its absence never fails a run
            window = None
        if window is not None and window > 0:
            self.context_window = window
        return self.context_window

    async def _fetch_context_window(self) -> int | None:
        """The provider's figure for this model's input window (None: it has none)."""
        return None

    def _client(self) -> ClientT:
        if self._shared is not None:
            return self._shared
        assert self._clients is not None
        return self._clients.get()

    async def aclose(self) -> None:
        """Close the HTTP client this model opened in the running event loop."""
        if self._clients is not None:
            client = self._clients.current()
            self._clients.forget()
            if client is not None:
                await self._close_client(client)

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncGenerator[ModelResponse, None]:
        """Yield one response; with `stream`, partial deltas then one final aggregate."""
        attempt = (lambda: self._stream(request)) if stream else (lambda: self._complete(request))
        responses = retry_stream(
            self.retry,
            attempt,
            is_transient=self._is_transient,
            retry_after=self._retry_after,
            describe=f"{self.provider}:{self.name}",
        )
        try:
            async with aclosing(responses):
                async for response in responses:
                    yield response
        except RondoError:
            raise
        except Exception as exc:
            raise self.model_error(exc) from exc

    def model_error(self, exc: Exception) -> ModelError:
        """The `ModelError` subclass a provider failure maps to (G4): by HTTP status, or a
        timeout / connection failure; the SDK's exception becomes the `__cause__`."""
        status = self._status_of(exc)
        kind = self._failure_kind(exc)
        if kind is None:
            if status is not None:
                kind = error_for_status(status)
            elif isinstance(exc, TimeoutError):
                kind = ModelTimeoutError
            elif is_transport_error(exc):
                kind = ModelConnectionError
            else:
                kind = ModelError
        where = f"{self.provider}:{self.name}"
        detail = str(exc) or type(exc).__name__
        return kind(
            f"{where} failed: {detail}",
            status_code=status,
            retryable=kind.retryable or self._is_transient(exc),
            provider=self.provider,
            model=self.name,
        )

    @staticmethod
    def _status_of(exc: BaseException) -> int | None:
        """The HTTP status a provider exception carries, if any."""
        status = getattr(exc, "status_code", None)
        if status is None:
            status = getattr(exc, "code", None)
        return status if isinstance(status, int) else None

    @staticmethod
    def _failure_kind(exc: BaseException) -> type[ModelError] | None:
        """An adapter's own reading of an SDK exception (its timeout class...), else None."""
        return None

    @abc.abstractmethod
    async def _close_client(self, client: ClientT) -> None: ...

    @abc.abstractmethod
    def _complete(self, request: ModelRequest) -> AsyncGenerator[ModelResponse, None]: ...

    @abc.abstractmethod
    def _stream(self, request: ModelRequest) -> AsyncGenerator[ModelResponse, None]: ...

    @staticmethod
    @abc.abstractmethod
    def _is_transient(exc: BaseException) -> bool: ...

    @staticmethod
    @abc.abstractmethod
    def _retry_after(exc: BaseException) -> float | None: ...
