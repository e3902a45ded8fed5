"""Property-based tests (hypothesis): the contents builder, the stream aggregator and the JSON
projections hold their rules for any input, not only the examples written by hand."""

from __future__ import annotations

import contextlib
import itertools
import os
import string
from types import SimpleNamespace
from typing import Any

import pytest

from rondo import Content, Event, EventActions, FunctionCall, FunctionResponse, Part
from rondo.errors import ContentsError
from rondo.events import EventCompaction, PendingCall, ToolConfirmation
from rondo.flow.compaction import SUMMARY_PREFIX, ContextEstimate, estimate_context
from rondo.flow.compaction import _visible as visible_since_summary  # pyright: ignore[reportPrivateUsage]
from rondo.flow.contents import (
    INTERRUPTED_CALL_ERROR,
    ContentsView,
    build_contents,
    build_tail_contents,
)
from rondo.flow.context_strategies import SlidingWindow
from rondo.lifecycle import (
    ActionEnd,
    ActionStart,
    ContextSize,
    HITLDecided,
    HITLPending,
    NodeEnd,
    NodeStart,
    PlanUpdate,
    ReasonDelta,
    ReasonEnd,
    ReasonStart,
    RunEnd,
    RunMetrics,
    RunStart,
    TaskEvent,
    ToolCallEnd,
    ToolCallProgress,
    ToolCallStart,
    Transcript,
    parse_lifecycle_event,
)
from rondo.models import ModelResponse, Usage
from rondo.models.aggregator import StreamAggregator
from rondo.sessions.base import EventLog, EventsView
from rondo.types import Blob, PartialArg
from tests._require import require_module

# Property tests need hypothesis (the dev extra); without it this module skips, naming it.
_hypothesis = require_module("hypothesis", what="HYPOTHESIS", install="pip install hypothesis")
st = require_module("hypothesis.strategies", what="HYPOTHESIS", install="pip install hypothesis")
HealthCheck, assume, given, settings = (
    _hypothesis.HealthCheck,
    _hypothesis.assume,
    _hypothesis.given,
    _hypothesis.settings,
)

# RONDO_HYPOTHESIS_EXAMPLES=5000 for a deeper search than CI's.
PROPERTIES = settings(
    max_examples=int(os.environ.get("RONDO_HYPOTHESIS_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
AGENT = "a"
REQUESTING = "inv-now"

words = st.text(alphabet=string.ascii_letters + " ", min_size=1, max_size=12)
json_scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | words
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(words, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(words, json_values, max_size=3)


# -- the contents builder ---------------------------------------------------------------------


@st.composite
def histories(draw: st.DrawFn) -> list[Event]:
    """Sessions mixing user text, this agent's text and calls, other agents, tool responses
    (right after their call, late, repeated, orphaned), branches and isolation scopes."""
    events: list[Event] = []
    calls: list[tuple[str, str]] = []  # (id, name) of calls made so far
    next_id = 0
    for index in range(draw(st.integers(0, 14))):
        invocation = f"inv-{draw(st.integers(0, 3))}"
        branch = draw(st.sampled_from(["", "", "x", "x.y", "xz"]))
        scope = draw(st.sampled_from(["", "", "", "s1"]))
        kind = draw(st.sampled_from(["user", "text", "calls", "answer", "other", "empty"]))
        common: dict[str, Any] = {
            "invocation_id": invocation,
            "branch": branch,
            "isolation_scope": scope,
            "timestamp": float(index),
        }
        label = f"t{index}:"  # every text is unique, so where it went can be checked
        if kind == "user":
            events.append(Event(author="user", content=Content.user(label + draw(words)), **common))
        elif kind == "text":
            thought = draw(st.booleans())
            part = Part(text=label + draw(words), thought=thought)
            events.append(
                Event(author=AGENT, content=Content(role="model", parts=[part]), **common)
            )
        elif kind == "calls":
            made: list[Part] = []
            for _ in range(draw(st.integers(1, 3))):
                next_id += 1
                call_id, name = f"call-{next_id}", draw(st.sampled_from(["f", "g"]))
                calls.append((call_id, name))
                made.append(Part(function_call=FunctionCall(name=name, args={}, id=call_id)))
            events.append(Event(author=AGENT, content=Content(role="model", parts=made), **common))
        elif kind == "answer" and calls:
            answered = draw(st.lists(st.sampled_from(calls), min_size=1, max_size=3, unique=True))
            if draw(st.booleans()):
                answered = [("orphan-" + answered[0][0], answered[0][1])]
            parts = [
                Part(function_response=FunctionResponse(name=n, response={"r": draw(words)}, id=i))
                for i, n in answered
            ]
            events.append(Event(author=AGENT, content=Content(role="user", parts=parts), **common))
        elif kind == "other":
            events.append(Event(author="b", content=Content.model(label + draw(words)), **common))
        else:
            events.append(Event(author=AGENT, content=Content(role="model", parts=[]), **common))
    return events


def _visible(event: Event, branch: str, scope: str) -> bool:
    """C1/C2, written out independently of the implementation."""
    return event.isolation_scope == scope and (
        not branch
        or not event.branch
        or branch == event.branch
        or branch.startswith(event.branch + ".")
    )


def _build(events: list[Event], branch: str, scope: str, *, step_by_step: bool) -> list[Content]:
    view = ContentsView(AGENT, branch, scope, 0)
    if step_by_step:
        for stop in range(1, len(events) + 1):
            view.advance(events, stop)
            # A request built at this point may be refused (C6: a latest answer to calls of
            # two model turns); the view must still end up where a fresh one would.
            with contextlib.suppress(ContentsError):
                view.contents(invocation_id=REQUESTING)
    else:
        view.advance(events, len(events))
    return view.contents(invocation_id=REQUESTING)


@PROPERTIES
@given(histories(), st.sampled_from(["", "x", "x.y"]), st.sampled_from(["", "s1"]))
def test_c9_incremental_contents_equal_contents_built_from_scratch(
    events: list[Event], branch: str, scope: str
) -> None:
    try:
        scratch = _build(events, branch, scope, step_by_step=False)
    except ContentsError:
        with pytest.raises(ContentsError):
            _build(events, branch, scope, step_by_step=True)
        return
    assert _build(events, branch, scope, step_by_step=True) == scratch


@PROPERTIES
@given(histories(), st.sampled_from(["", "x", "x.y"]), st.sampled_from(["", "s1"]))
def test_c6_c7_g2_every_call_is_answered_and_no_part_is_empty(
    events: list[Event], branch: str, scope: str
) -> None:
    try:
        contents = _build(events, branch, scope, step_by_step=False)
    except ContentsError:
        assume(False)
        return
    if not contents:
        return
    # C7: no empty part, and the request ends on a user turn (the nudge when needed).
    for content in contents:
        assert content.parts
        for part in content.parts:
            assert not part.is_empty() or part.thought_signature is not None
    assert contents[-1].role == "user"
    # C6 / G2: each call is answered, in call order, by the next content and only there.
    answered_anywhere = [
        p.function_response.id for c in contents for p in c.parts if p.function_response
    ]
    assert len(answered_anywhere) == len(set(answered_anywhere))
    for index, content in enumerate(contents):
        ids = [p.function_call.id for p in content.parts if p.function_call is not None]
        if not ids:
            continue
        following = contents[index + 1]
        assert [p.function_response.id for p in following.parts if p.function_response] == ids
    # The synthetic answer appears only for calls nothing visible answered.
    stored = {
        p.function_response.id
        for e in events
        if e.content is not None and _visible(e, branch, scope)
        for p in e.content.parts
        if p.function_response is not None
    }
    for content in contents:
        for part in content.parts:
            response = part.function_response
            if response is not None and response.response == {"error": INTERRUPTED_CALL_ERROR}:
                assert response.id not in stored


@PROPERTIES
@given(histories(), st.sampled_from(["", "x", "x.y"]), st.sampled_from(["", "s1"]))
def test_c1_c2_only_visible_branches_and_the_same_scope_reach_the_model(
    events: list[Event], branch: str, scope: str
) -> None:
    try:
        contents = _build(events, branch, scope, step_by_step=False)
    except ContentsError:
        assume(False)
        return
    seen = " ".join(p.text for c in contents for p in c.parts if p.text)
    # C6 moves a late answer's pair to the end and skips what lies between (as the seed does),
    # so every visible text must be there only in a history without tool answers.
    answers = any(e.content is not None and e.get_function_responses() for e in events)
    for event in events:
        visible = _visible(event, branch, scope)
        texts = [p.text for p in event.content.parts if p.text] if event.content else []
        for text in texts:
            label = text.split(":", 1)[0] + ":"
            if visible and not answers:
                assert label in seen, (label, contents)
            elif not visible:
                assert label not in seen, (label, contents)


@st.composite
def summarized_histories(draw: st.DrawFn) -> list[Event]:
    """`histories()` with compaction records (any agent, branch, scope and covered window,
    rolled or not) among them, and now and then timestamps out of order."""
    events = list(draw(histories()))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(events)))
        # Mostly as compaction writes them (from the start up to a record before this one).
        first = float(draw(st.sampled_from([-1, 0]) | st.integers(-1, max(at, 0))))
        last = float(draw(st.integers(int(first), max(at, int(first)) + 2)))
        events.insert(
            at,
            Event(
                author=draw(st.sampled_from([AGENT, "b"])),
                branch=draw(st.sampled_from(["", "", "x", "x.y"])),
                isolation_scope=draw(st.sampled_from(["", "", "s1"])),
                timestamp=last + 0.5,
                actions=EventActions(
                    compaction=EventCompaction(
                        start_timestamp=first,
                        end_timestamp=last,
                        compacted_content=Content.user(f"summary {first}-{last}"),
                    )
                ),
            ),
        )
    if events and draw(st.booleans()):  # a record appended late, or a clock stepping back
        at = draw(st.integers(0, len(events) - 1))
        stamp = float(draw(st.integers(-1, len(events))))
        events[at] = events[at].model_copy(update={"timestamp": stamp})
    return events


@PROPERTIES
@given(summarized_histories(), st.sampled_from(["", "x", "x.y"]), st.sampled_from(["", "s1"]))
def test_25_4_reading_from_the_newest_summary_equals_reading_everything(
    events: list[Event], branch: str, scope: str
) -> None:
    """K3: the contents and the K2 estimate built past what the newest summary replaces are
    those built from every record (the view and the estimate skip only a provable head)."""
    log = EventLog(events)
    n = len(events)
    full = ContentsView(AGENT, branch, scope, 0, compaction=True)
    full.advance(events, n)
    try:
        expected = full.contents(invocation_id=REQUESTING)
    except ContentsError:
        with pytest.raises(ContentsError):
            build_contents(
                EventsView(log),
                agent_name=AGENT,
                branch=branch,
                isolation_scope=scope,
                compaction=True,
                invocation_id=REQUESTING,
            )
        return
    skipped = build_contents(
        EventsView(log),
        agent_name=AGENT,
        branch=branch,
        isolation_scope=scope,
        compaction=True,
        invocation_id=REQUESTING,
    )
    assert skipped == expected
    whole = ContextEstimate(branch, scope, 0)
    whole.advance(log, n)
    estimate = estimate_context(EventsView(EventLog(events)), branch, scope)
    assert (estimate.tokens, estimate.message_count) == (whole.tokens, whole.message_count)
    # What a new summary would cover: the visible records newer than the newest summary.
    seen = [e for e in events if _visible(e, branch, scope)]
    summaries = [e.actions.compaction for e in seen if e.actions.compaction is not None]
    newer = [e for e in seen if e.actions.compaction is None]
    if summaries:
        newer = [e for e in newer if e.timestamp > summaries[-1].end_timestamp]
    session = SimpleNamespace(events=EventsView(EventLog(events)))
    ctx: Any = SimpleNamespace(session=session, branch=branch, isolation_scope=scope)
    assert visible_since_summary(ctx) == (newer, summaries[-1] if summaries else None)


# Turn starts are sparse in `histories()`: a window cutting inside a tail needs a few, so this
# property gets more examples than the others (a mutation of either guard of the tail read —
# its pairing check, its summary-in-front check — is found within ~600).
WINDOW_PROPERTIES = settings(
    max_examples=max(800, int(os.environ.get("RONDO_HYPOTHESIS_EXAMPLES", "150"))),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@WINDOW_PROPERTIES
@given(
    histories(),
    st.sampled_from(["", "x", "x.y"]),
    st.sampled_from(["", "s1"]),
    st.sampled_from([None, 1, 2, 3]),
    st.sampled_from([None, 4, 12, 40]),
    st.booleans(),
    st.booleans(),
    st.integers(1, 4),
)
def test_25_4_a_window_over_the_newest_records_equals_one_over_everything(
    events: list[Event],
    branch: str,
    scope: str,
    max_turns: int | None,
    max_tokens: int | None,
    keep_summary: bool,
    summary_first: bool,
    first_read: int,
) -> None:
    """K3 with a sliding window alone: the window over contents built from the newest records
    only (`build_tail_contents`, reading as few as `first_read` first, more until the window
    provably cuts inside them) is the window over contents built from every record — at each
    length of the growing log, the tail's view kept and advanced as a session's is."""
    assume(max_turns is not None or max_tokens is not None)
    if summary_first:  # a first message the window would keep in front (keep_summary)
        first = Event(author="user", timestamp=-2.0, content=Content.user(SUMMARY_PREFIX + "s"))
        events = [first, *events]
    window = SlidingWindow(max_turns, max_tokens=max_tokens, keep_summary=keep_summary)
    expected: list[list[Content] | None] = []
    for stop in range(len(events) + 1):
        full = ContentsView(AGENT, branch, scope, 0)
        full.advance(events, stop)
        try:
            contents = full.contents(invocation_id=REQUESTING)
        except ContentsError:
            expected.append(None)
            continue
        ctx: Any = SimpleNamespace(session=SimpleNamespace(events=EventsView(EventLog(events))))
        expected.append(window.view(contents, ctx))
    # A replica that first sees the session at `begin` records, then serves it as it grows.
    for begin in range(1, len(events) + 1):
        log = EventLog(events)
        ctx = SimpleNamespace(session=SimpleNamespace(events=EventsView(log)))
        for stop in range(begin, len(events) + 1):
            if expected[stop] is None:
                with pytest.raises(ContentsError):
                    _tail_contents(log, stop, branch, scope, window, ctx, first_read)
                continue
            tail = _tail_contents(log, stop, branch, scope, window, ctx, first_read)
            assert window.view(tail, ctx) == expected[stop], (begin, stop)
        # An older handle (fewer records, as after a rewind) on the same log.
        if expected[begin] is not None:
            tail = _tail_contents(log, begin, branch, scope, window, ctx, first_read)
            assert window.view(tail, ctx) == expected[begin], begin


def _tail_contents(
    log: EventLog,
    stop: int,
    branch: str,
    scope: str,
    window: SlidingWindow,
    ctx: Any,
    first_read: int,
) -> list[Content]:
    return build_tail_contents(
        EventsView(log, 0, stop),
        agent_name=AGENT,
        branch=branch,
        isolation_scope=scope,
        invocation_id=REQUESTING,
        covers=lambda contents: window.covers(contents, ctx),
        turns=window.max_turns or 1,
        front=window.front if window.keep_summary else None,
        first_read=first_read,
    )


# -- the stream aggregator ----------------------------------------------------------------------


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


@st.composite
def responses_and_splits(draw: st.DrawFn) -> tuple[list[Part], list[ModelResponse]]:
    """A final response (text, thought, calls) and one way a provider might stream it."""
    expected: list[Part] = []
    chunks: list[ModelResponse] = []
    thought_last: bool | None = None
    for index in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            thought = draw(st.booleans())
            if thought_last is not None and thought_last == thought and expected:
                thought = not thought  # adjacent text blocks of one kind would merge
            text = draw(st.text(alphabet=string.ascii_letters + " .", min_size=1, max_size=20))
            signature = draw(st.none() | st.binary(min_size=1, max_size=4))
            expected.append(Part(text=text, thought=thought, thought_signature=signature))
            pieces = _split(text, draw(st.lists(st.integers(0, 40), max_size=4)))
            for position, piece in enumerate(pieces):
                sign = signature if position == len(pieces) - 1 else None
                chunks.append(
                    ModelResponse(
                        content=Content(
                            role="model",
                            parts=[Part(text=piece, thought=thought, thought_signature=sign)],
                        ),
                        partial=True,
                    )
                )
            thought_last = thought
        else:
            thought_last = None
            call_id = f"c{index}"
            value = draw(st.text(alphabet=string.ascii_letters, min_size=1, max_size=12))
            signature = draw(st.none() | st.binary(min_size=1, max_size=4))
            expected.append(
                Part(
                    function_call=FunctionCall(name="f", args={"q": value}, id=call_id),
                    thought_signature=signature,
                )
            )
            pieces = _split(value, draw(st.lists(st.integers(0, 30), max_size=3)))
            signed_at = draw(st.integers(0, len(pieces) - 1))
            for position, piece in enumerate(pieces):
                call = FunctionCall(
                    name="f",
                    id=call_id,
                    partial_args=[PartialArg(json_path="$.q", value=piece)],
                    will_continue=position < len(pieces) - 1,
                )
                sign = signature if position == signed_at else None
                chunks.append(
                    ModelResponse(
                        content=Content(
                            role="model", parts=[Part(function_call=call, thought_signature=sign)]
                        ),
                        partial=True,
                    )
                )
    return expected, chunks


@PROPERTIES
@given(responses_and_splits())
def test_a1_any_chunk_split_aggregates_to_the_same_response(
    case: tuple[list[Part], list[ModelResponse]],
) -> None:
    expected, chunks = case
    aggregator = StreamAggregator()
    for chunk in chunks:
        delta = aggregator.add(chunk)
        assert delta.partial
    final = aggregator.close()
    assert final is not None
    assert final.partial is False
    assert final.content is not None
    assert final.content.parts == expected


# -- JSON projections ---------------------------------------------------------------------------

ids = st.text(alphabet=string.ascii_lowercase + string.digits + "-", min_size=1, max_size=10)
parts = st.one_of(
    st.builds(Part, text=words, thought=st.booleans()),
    st.builds(
        Part,
        function_call=st.builds(FunctionCall, name=st.just("f"), args=json_objects, id=ids),
        thought_signature=st.none() | st.binary(max_size=6),
    ),
    st.builds(
        Part,
        function_response=st.builds(
            FunctionResponse, name=st.just("f"), response=json_objects, id=ids
        ),
    ),
    st.builds(Part, inline_data=st.builds(Blob, mime_type=st.just("image/png"), data=st.binary())),
)
contents = st.builds(Content, role=st.sampled_from(["user", "model"]), parts=st.lists(parts))
records = st.builds(
    Event,
    author=st.sampled_from(["user", "a", "b"]),
    invocation_id=ids,
    run_id=ids,
    branch=st.sampled_from(["", "x.y"]),
    content=st.none() | contents,
    partial=st.booleans(),
    usage=st.none() | st.builds(Usage, input_tokens=st.integers(0, 99)),
    actions=st.builds(
        EventActions,
        state_delta=json_objects,
        artifact_delta=st.dictionaries(words, st.integers(0, 5), max_size=2),
        escalate=st.none() | st.booleans(),
        requested_tool_confirmations=st.dictionaries(
            ids, st.builds(ToolConfirmation, hint=words, payload=json_values), max_size=2
        ),
    ),
    long_running_tool_ids=st.frozensets(ids, max_size=3),
    custom_metadata=st.none() | json_objects,
)
pendings = st.builds(PendingCall, call_id=ids, tool_name=words, args=json_objects)
corr: dict[str, Any] = {"run_id": ids, "invocation_id": ids, "agent_name": words}
lifecycle_events = st.one_of(
    st.builds(RunStart, **corr, session_id=ids, resumed=st.booleans()),
    st.builds(ReasonStart, **corr, reason_id=ids),
    st.builds(
        ReasonDelta,
        **corr,
        reason_id=ids,
        kind=st.sampled_from(["text_delta", "thinking_delta"]),
        text=words,
    ),
    st.builds(ReasonEnd, **corr, reason_id=ids, event=st.none() | records),
    st.builds(ActionStart, **corr, reason_id=ids),
    st.builds(
        ToolCallStart, **corr, reason_id=ids, call_id=ids, tool_name=words, args=json_objects
    ),
    st.builds(
        ToolCallProgress, **corr, reason_id=ids, call_id=ids, tool_name=words, chunk=json_values
    ),
    st.builds(
        ToolCallEnd,
        **corr,
        reason_id=ids,
        call_id=ids,
        tool_name=words,
        result=st.none() | json_objects,
        error=st.none() | words,
    ),
    st.builds(ActionEnd, **corr, reason_id=ids, event=st.none() | records),
    st.builds(HITLPending, **corr, pending=st.lists(pendings, max_size=2)),
    st.builds(HITLDecided, **corr, call_id=ids, decision=st.sampled_from(["approve", "skip"])),
    st.builds(PlanUpdate, **corr, plans=st.lists(words, max_size=3), index=st.integers(0, 3)),
    st.builds(ContextSize, **corr, token_count=st.integers(0, 10_000)),
    st.builds(
        Transcript,
        **corr,
        reason_id=ids,
        role=st.sampled_from(["user", "model"]),
        text=words,
        finished=st.booleans(),
    ),
    st.builds(NodeStart, **corr, node=st.none() | words),
    st.builds(NodeEnd, **corr, text=words),
    st.builds(
        RunEnd,
        **corr,
        text=words,
        output=json_values,
        metrics=st.builds(RunMetrics, model_calls=st.integers(0, 9)),
        pending=st.lists(pendings, max_size=2),
        error=st.none() | words,
    ),
)
task_events = st.builds(TaskEvent, **corr, parent_run_id=ids, task_id=ids, event=lifecycle_events)


@PROPERTIES
@given(records)
def test_v6_every_record_round_trips_through_json(event: Event) -> None:
    assert Event.model_validate_json(event.model_dump_json()) == event
    assert Event.model_validate(event.model_dump(mode="json")) == event


@PROPERTIES
@given(lifecycle_events | task_events)
def test_v6_every_lifecycle_event_round_trips_through_its_wire_projection(event: Any) -> None:
    assert parse_lifecycle_event(event.model_dump(mode="json")) == event
