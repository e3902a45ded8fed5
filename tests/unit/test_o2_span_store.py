"""SPEC O2 — the server's span store keeps spans per session, bounded."""

from __future__ import annotations

from typing import Any

from tests._require import require_module

require_module("opentelemetry.sdk", what="OTEL_SDK", install="pip install 'rondo-agents[dev]'")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402

from rondo.server.span_store import SpanStore  # noqa: E402


def _tracer(store: SpanStore) -> Any:
    provider = TracerProvider()  # a local provider: the global one is not touched
    provider.add_span_processor(store)
    return provider.get_tracer("test")


def _ids(session: str, **more: str) -> dict[str, str]:
    return {"gen_ai.conversation.id": session, "rondo.app_name": "app", **more}


def test_o2_store_bounds_traces_sessions_and_spans() -> None:
    store = SpanStore(max_sessions=2, max_traces=3, max_spans=3)
    tracer = _tracer(store)
    for session in ("s1", "s2", "s3", "s4"):
        with tracer.start_as_current_span(
            f"run {session}", attributes=_ids(session, **{"gcp.vertex.agent.event_id": session})
        ):
            pass
    # Four traces, three kept: the oldest trace goes, with its event.
    assert store.event_span("app", "s1") is None
    assert store.session_spans("app", "s1") == []
    assert store.event_span("app", "s2") is not None
    # Four sessions, two indexed: s2's trace is kept, but the session index forgot it.
    assert store.session_spans("app", "s2") == []
    assert [s.name for s in store.session_spans("app", "s4")] == ["run s4"]
    with tracer.start_as_current_span("run", attributes=_ids("s4")):
        for i in range(5):
            with tracer.start_as_current_span(f"step {i}", attributes=_ids("s4")):
                pass
    names = [s.name for s in store.session_spans("app", "s4")]
    assert names == ["run s4", "step 3", "step 4", "run"]


def test_o2_a_trace_shows_in_every_session_it_touched() -> None:
    store = SpanStore()
    tracer = _tracer(store)
    with (
        tracer.start_as_current_span("invoke_agent caller", attributes=_ids("outer")),
        tracer.start_as_current_span("invoke_agent helper", attributes=_ids("inner")),
    ):
        pass
    assert [s.name for s in store.session_spans("app", "outer")] == [
        "invoke_agent helper",
        "invoke_agent caller",
    ]
    assert len(store.session_spans("app", "inner")) == 2


def test_o2_a_span_without_session_joins_the_session_of_its_trace() -> None:
    store = SpanStore()
    tracer = _tracer(store)
    with tracer.start_as_current_span("POST /run"):
        with tracer.start_as_current_span("http call"):
            pass  # ends first: nothing says its session yet
        with tracer.start_as_current_span("invoke_agent a", attributes=_ids("s1")):
            pass
    names = [s.name for s in store.session_spans("app", "s1")]
    assert names == ["http call", "invoke_agent a", "POST /run"]
    assert store.session_spans("other-app", "s1") == []


def test_o2_w3_sessions_of_the_same_name_are_kept_per_user() -> None:
    # Issue 26 item 1: (app, user, session), so bob's "main" is not alice's "main".
    store = SpanStore()
    tracer = _tracer(store)
    for user in ("alice", "bob"):
        attributes = _ids("main", **{"rondo.user_id": user, "gcp.vertex.agent.event_id": user})
        with tracer.start_as_current_span(f"run {user}", attributes=attributes):
            pass
    assert [s.name for s in store.session_spans("app", "main", "alice")] == ["run alice"]
    assert [s.name for s in store.session_spans("app", "main", "bob")] == ["run bob"]
    assert store.session_spans("app", "main", "carol") == []
    assert len(store.session_spans("app", "main")) == 2  # a server without users: anyone's
    assert store.event_span("app", "bob", "alice") is None
    assert store.event_span("app", "bob", "bob") is not None
