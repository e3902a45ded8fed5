"""The server's span store: the finished spans of recent sessions, for the trace routes (O2).

`SpanStore` is an OpenTelemetry SDK `SpanProcessor` (the `server` extra brings the SDK) that
keeps the finished spans of recent sessions in memory, bounded: at most `max_sessions`
sessions (the least recently traced go first) and `max_spans` spans per session (the oldest
go first). A span belongs to the session named by its `gen_ai.conversation.id` attribute
(every span rondo makes carries it); a span without one — a provider SDK's HTTP span — joins
the session of its trace once a rondo span of that trace ends.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

from rondo.errors import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import Span

__all__ = ["SpanStore", "enable_span_store", "span_json"]

_SESSION = "gen_ai.conversation.id"
_APP = "rondo.app_name"
_USER = "rondo.user_id"
_EVENT = "gcp.vertex.agent.event_id"


def span_json(span: ReadableSpan) -> dict[str, Any]:
    """One span as google-adk's session trace route answers it (ADK 2.x's `WebUiSpan`)."""
    context = span.get_span_context()
    parent = span.parent
    return {
        "name": span.name,
        "span_id": context.span_id if context is not None else None,
        "trace_id": context.trace_id if context is not None else None,
        "start_time": span.start_time,
        "end_time": span.end_time,
        "attributes": dict(span.attributes or {}),
        "parent_span_id": parent.span_id if parent is not None else None,
        "logs": [],  # google-adk's log records under the span; its dev UI refuses a null
    }


class _Session:
    __slots__ = ("spans", "user")

    def __init__(self, user: str | None, max_spans: int) -> None:
        self.user = user
        self.spans: deque[ReadableSpan] = deque(maxlen=max_spans)


class SpanStore(SpanProcessor):
    """Finished spans per (app, session), bounded, for the trace routes."""

    def __init__(self, *, max_sessions: int = 200, max_spans: int = 5000) -> None:
        if max_sessions <= 0 or max_spans <= 0:
            raise ConfigurationError("SpanStore bounds must be positive")
        self._max_sessions = max_sessions
        self._max_spans = max_spans
        self._lock = threading.Lock()  # spans end on whichever thread ran them
        self._sessions: OrderedDict[tuple[str, str], _Session] = OrderedDict()
        self._trace_session: OrderedDict[int, tuple[str, str]] = OrderedDict()
        self._waiting: OrderedDict[int, list[ReadableSpan]] = OrderedDict()
        self._events: dict[str, tuple[tuple[str, str], ReadableSpan]] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        attributes = span.attributes or {}
        context = span.get_span_context()
        trace_id = context.trace_id if context is not None else 0
        session_id = attributes.get(_SESSION)
        with self._lock:
            if not isinstance(session_id, str):
                key = self._trace_session.get(trace_id)
                if key is None:
                    self._wait(trace_id, span)
                    return
            else:
                key = (str(attributes.get(_APP, "")), session_id)
                self._trace_session[trace_id] = key
                self._trace_session.move_to_end(trace_id)
                while len(self._trace_session) > self._max_sessions * 20:
                    self._trace_session.popitem(last=False)
            user = attributes.get(_USER)
            session = self._session(key, user if isinstance(user, str) else None)
            for waiting in self._waiting.pop(trace_id, ()):
                session.spans.append(waiting)
            session.spans.append(span)
            event_id = attributes.get(_EVENT)
            if isinstance(event_id, str):
                self._events[event_id] = (key, span)

    def _wait(self, trace_id: int, span: ReadableSpan) -> None:
        waiting = self._waiting.setdefault(trace_id, [])
        if len(waiting) < self._max_spans:
            waiting.append(span)
        while len(self._waiting) > self._max_sessions:
            self._waiting.popitem(last=False)

    def _session(self, key: tuple[str, str], user: str | None) -> _Session:
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = _Session(user, self._max_spans)
            while len(self._sessions) > self._max_sessions:
                old_key, _old = self._sessions.popitem(last=False)
                self._events = {k: v for k, v in self._events.items() if v[0] != old_key}
        else:
            self._sessions.move_to_end(key)
        return session

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def session_spans(self, app: str, session_id: str, user: str | None) -> list[ReadableSpan]:
        """The spans of a session, oldest first (none for another user's session)."""
        with self._lock:
            session = self._sessions.get((app, session_id))
            if session is None or (user is not None and session.user != user):
                return []
            return list(session.spans)

    def event_span(self, app: str, event_id: str, user: str | None) -> ReadableSpan | None:
        """The span that produced the event `event_id` of `app`."""
        with self._lock:
            found = self._events.get(event_id)
            if found is None or found[0][0] != app:
                return None
            session = self._sessions.get(found[0])
            if session is None or (user is not None and session.user != user):
                return None
            return found[1]


_enabled: SpanStore | None = None


def enable_span_store() -> SpanStore:
    """The process's span store, added to the global SDK tracer provider on first use
    (installing an SDK provider if none is set); every app of the process shares it."""
    global _enabled
    from opentelemetry import trace

    if _enabled is not None:
        return _enabled
    store = SpanStore()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
        installed = trace.get_tracer_provider()
        if installed is not provider:  # another provider won the one-time setting
            if not isinstance(installed, TracerProvider):
                raise ConfigurationError(
                    "the global tracer provider is not an OpenTelemetry SDK TracerProvider; "
                    "add rondo.server.traces.SpanStore to your provider yourself"
                )
            provider = installed
    provider.add_span_processor(store)
    _enabled = store
    return store
