"""The server's span store: the finished spans of recent sessions, for the trace routes (O2).

`SpanStore` is an OpenTelemetry SDK `SpanProcessor` (the `server` extra brings the SDK) that
keeps, in memory, the finished spans of the traces rondo's runs took part in, as google-adk's
dev server does: a trace is kept once one of its spans names a session (its
`gen_ai.conversation.id`; every span rondo makes carries one), with the spans of that trace that
ended before (a request's, a provider SDK's HTTP calls). Sessions are indexed by (app, user,
session): rondo's spans name the session's user (`rondo.user_id`), so two users' sessions of
the same name never share spans (issue 26). Bounded: at most `max_traces` traces
(the oldest go first, with their event index), `max_spans` spans per trace and `max_sessions`
sessions in the index (the least recently traced go first).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from typing import TYPE_CHECKING

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


def span_json(span: ReadableSpan) -> dict[str, object]:
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


class _Trace:
    __slots__ = ("events", "spans")

    def __init__(self, spans: list[ReadableSpan], max_spans: int) -> None:
        self.spans: deque[ReadableSpan] = deque(spans, maxlen=max_spans)
        self.events: list[str] = []


class SpanStore(SpanProcessor):
    """Finished spans of recent traces, indexed by (app, user, session) and by event id,
    bounded."""

    def __init__(
        self, *, max_sessions: int = 200, max_traces: int = 2000, max_spans: int = 2000
    ) -> None:
        if min(max_sessions, max_traces, max_spans) <= 0:
            raise ConfigurationError("SpanStore bounds must be positive")
        self._max_sessions = max_sessions
        self._max_traces = max_traces
        self._max_spans = max_spans
        self._lock = threading.Lock()  # spans end on whichever thread ran them
        # Traces a rondo span has tied to a session, oldest first.
        self._traces: OrderedDict[int, _Trace] = OrderedDict()
        # Spans of traces no session is known for yet (a request's spans that ended first).
        self._waiting: OrderedDict[int, list[ReadableSpan]] = OrderedDict()
        self._sessions: OrderedDict[tuple[str, str, str], list[int]] = OrderedDict()
        # event id → (app, user, the span that produced it)
        self._events: dict[str, tuple[str, str, ReadableSpan]] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        attributes = span.attributes or {}
        context = span.get_span_context()
        trace_id = context.trace_id if context is not None else 0
        session_id = attributes.get(_SESSION)
        with self._lock:
            trace = self._traces.get(trace_id)
            if trace is None and not isinstance(session_id, str):
                self._wait(trace_id, span)
                return
            if trace is None:
                trace = self._keep(trace_id)
            trace.spans.append(span)
            app = str(attributes.get(_APP, ""))
            # A span of another instrumentation naming a session has no user: "" is nobody's.
            user = str(attributes.get(_USER, ""))
            if isinstance(session_id, str):
                self._index((app, user, session_id), trace_id)
            event_id = attributes.get(_EVENT)
            if isinstance(event_id, str):
                self._events[event_id] = (app, user, span)
                trace.events.append(event_id)

    def _wait(self, trace_id: int, span: ReadableSpan) -> None:
        waiting = self._waiting.setdefault(trace_id, [])
        if len(waiting) < self._max_spans:
            waiting.append(span)
        while len(self._waiting) > self._max_sessions:
            self._waiting.popitem(last=False)

    def _keep(self, trace_id: int) -> _Trace:
        trace = self._traces[trace_id] = _Trace(self._waiting.pop(trace_id, []), self._max_spans)
        while len(self._traces) > self._max_traces:
            _old, dropped = self._traces.popitem(last=False)
            for event_id in dropped.events:
                self._events.pop(event_id, None)
        return trace

    def _index(self, key: tuple[str, str, str], trace_id: int) -> None:
        traces = self._sessions.get(key)
        if traces is None:
            traces = self._sessions[key] = []
            while len(self._sessions) > self._max_sessions:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(key)
        if trace_id not in traces:
            traces.append(trace_id)

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def session_spans(
        self, app: str, session_id: str, user_id: str | None = None
    ) -> list[ReadableSpan]:
        """The spans kept of every trace `user_id`'s session took part in, trace by trace
        (`None`: of every user's session of that id, for a server without users).

        A trace belongs to each session it touched: an agent answering as a tool runs in a
        session of its own, and its spans show in the caller's session too (as in ADK)."""
        with self._lock:
            if user_id is not None:
                trace_ids = self._sessions.get((app, user_id, session_id), [])
            else:
                trace_ids = self._any_user(app, session_id)
            spans: list[ReadableSpan] = []
            for trace_id in trace_ids:
                trace = self._traces.get(trace_id)
                if trace is not None:
                    spans.extend(trace.spans)
            return spans

    def _any_user(self, app: str, session_id: str) -> list[int]:
        found: dict[int, None] = {}  # ordered, without repeats
        for (app_name, _user, session), trace_ids in self._sessions.items():
            if app_name == app and session == session_id:
                found.update(dict.fromkeys(trace_ids))
        return list(found)

    def event_span(
        self, app: str, event_id: str, user_id: str | None = None
    ) -> ReadableSpan | None:
        """The span that produced the event `event_id` of `app` (of `user_id`'s sessions when
        given), if it is kept."""
        with self._lock:
            found = self._events.get(event_id)
            if found is None or found[0] != app:
                return None
            return found[2] if user_id is None or found[1] == user_id else None


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
