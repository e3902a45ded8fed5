"""SPEC K3 (issue 25.4): a reader that applies compaction starts past what the newest summary
provably replaces, and what it builds is what reading every record builds."""

from __future__ import annotations

from rondo import Content, Event, EventActions
from rondo.events import EventCompaction
from rondo.flow.contents import ContentsView, build_contents, summarized_head
from rondo.sessions.base import EventLog, EventsView

AGENT = "a"


def _summary(first: float, last: float, at: float) -> Event:
    compaction = EventCompaction(
        start_timestamp=first,
        end_timestamp=last,
        compacted_content=Content.user(f"summary {first}-{last}"),
    )
    return Event(author=AGENT, timestamp=at, actions=EventActions(compaction=compaction))


def _user(text: str, at: float) -> Event:
    return Event(author="user", invocation_id="inv-0", timestamp=at, content=Content.user(text))


def _built(log: EventLog) -> list[Content]:
    """The contents a step builds from the log, compaction applied (K3's head skipped)."""
    return build_contents(
        EventsView(log),
        agent_name=AGENT,
        branch="",
        isolation_scope="",
        compaction=True,
        invocation_id="inv-now",
    )


def _texts(contents: list[Content]) -> list[str]:
    return [content.text for content in contents]


def test_25_4_k3_a_summary_between_the_head_and_the_newest_one_is_read_with_the_head() -> None:
    # Found by the property test: the summary of [1, 2] lands ahead of "t0" (where the summary
    # it replaces stood); the late summary of [-1, 1] then replaces "t0" in place. Started
    # past the head, that summary would have no item to replace and go first instead.
    events = [
        _summary(-1.0, 1.0, at=0.0),
        _user("t0", at=0.0),
        _summary(1.0, 2.0, at=2.5),
        _summary(-1.0, 1.0, at=1.5),
        _user("t3", at=3.0),
    ]
    log = EventLog(events)
    assert summarized_head(log, 0, len(events), "", "") == 0
    full = ContentsView(AGENT, "", "", 0, compaction=True)
    full.advance(events, len(events))
    expected = full.contents(invocation_id="inv-now")
    assert _texts(expected) == ["summary 1.0-2.0", "summary -1.0-1.0", "t3"]
    built = _built(log)
    assert built == expected


def test_25_4_k3_records_a_summary_replaces_are_not_read() -> None:
    events = [
        _user("t0", at=0.0),
        _user("t1", at=1.0),
        _summary(0.0, 1.0, at=1.5),
        _user("t2", at=2.0),
    ]
    log = EventLog(events)
    assert summarized_head(log, 0, len(events), "", "") == 2
    built = _built(log)
    assert _texts(built) == ["summary 0.0-1.0", "t2"]
