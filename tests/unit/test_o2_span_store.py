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


def _ids(session: str, user: str = "u", **more: str) -> dict[str, str]:
    return {
        "gen_ai.conversation.id": session,
        "rondo.app_name": "app",
        "rondo.user_id": user,
        **more,
    }


def test_o2_store_evicts_the_least_recently_traced_session_and_its_events() -> None:
    store = SpanStore(max_sessions=2, max_spans=3)
    tracer = _tracer(store)
    for session in ("s1", "s2", "s3"):
        with tracer.start_as_current_span(
            f"run {session}", attributes=_ids(session, **{"gcp.vertex.agent.event_id": session})
        ):
            pass
    assert store.session_spans("app", "s1", None) == []
    assert store.event_span("app", "s1", None) is None
    assert [s.name for s in store.session_spans("app", "s3", None)] == ["run s3"]
    assert store.event_span("app", "s3", None) is not None
    for i in range(5):
        with tracer.start_as_current_span(f"step {i}", attributes=_ids("s3")):
            pass
    assert [s.name for s in store.session_spans("app", "s3", None)] == [
        "step 2",
        "step 3",
        "step 4",
    ]


def test_o2_a_span_without_session_joins_the_session_of_its_trace() -> None:
    store = SpanStore()
    tracer = _tracer(store)
    with tracer.start_as_current_span("POST /run"):
        with tracer.start_as_current_span("http call"):
            pass  # ends first: nothing says its session yet
        with tracer.start_as_current_span("invoke_agent a", attributes=_ids("s1", user="bob")):
            pass
    names = [s.name for s in store.session_spans("app", "s1", None)]
    assert names == ["http call", "invoke_agent a", "POST /run"]
    assert store.session_spans("app", "s1", "alice") == []
    assert store.session_spans("other-app", "s1", None) == []
