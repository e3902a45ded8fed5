"""SPEC W7: frame ids — `<record ordinal>.<frame after it>`, the same however they are made."""

from __future__ import annotations

import pytest

from rondo.events import Event, EventActions
from rondo.lifecycle import ReasonDelta, RunStart
from rondo.types import Content
from tests._require import require_module

require_module("fastapi", what="SERVER", install="pip install 'rondo-agents[server]'")

from rondo.server.errors import BadRequestError  # noqa: E402
from rondo.server.frames import Numbering, format_id, parse_id  # noqa: E402


def _items() -> list[object]:
    return [
        RunStart(run_id="r"),
        Event(author="a", run_id="r", partial=True, content=Content.model("he")),
        ReasonDelta(run_id="r", reason_id="x", kind="text_delta", text="he"),
        Event(author="a", run_id="r", content=Content.model("hello")),
        Event(
            author="a",
            run_id="r",
            content=Content.model("saved"),
            actions=EventActions(artifact_delta={"f.txt": 0}),
        ),
    ]


@pytest.mark.parametrize("fmt", ["adk", "lifecycle"])
def test_w7_ids_grow_and_counting_them_agrees_with_making_them(fmt: str) -> None:
    made = Numbering(fmt, 1)  # type: ignore[arg-type]
    counted = Numbering(fmt, 1)  # type: ignore[arg-type]
    ids = []
    for item in _items():
        ids += [frame_id for frame_id, _, _ in made.frames(item)]
        counted.advance(item)
        assert counted.last == made.last
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    if fmt == "adk":  # the partial after the user's record, then two records, one split in two
        assert ids == [(1, 0), (2, 0), (3, 0), (3, 1)]
    else:
        assert ids == [(1, 0), (1, 1)]


def test_w7_a_frame_id_reads_back_and_a_bad_one_is_a_clear_400() -> None:
    assert parse_id(format_id((12, 3))) == (12, 3)
    assert parse_id("7") == (7, 0)
    for bad in ("", "a.b", "1.2.3", "-1.0", "1." + "9" * 50):
        with pytest.raises(BadRequestError, match="frame id"):
            parse_id(bad)
