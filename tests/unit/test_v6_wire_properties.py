"""V6 / issue 19.4: every record the server projects is a valid `WireEvent` — the documented
wire schema (`/openapi.json`) and the projection (`event_json`) cannot drift apart."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is not installed: pip install hypothesis")
pytest.importorskip("fastapi", reason="the server extra is not installed: pip install '.[server]'")

from hypothesis import given
from pydantic import BaseModel

from rondo.events import Event
from rondo.server.wire import WireEvent, event_json
from tests.unit.test_properties import PROPERTIES, histories


def _unknown_keys(model: type[BaseModel], data: dict[str, Any], where: str) -> list[str]:
    aliases = {(f.alias or name): f for name, f in model.model_fields.items()}
    unknown: list[str] = []
    for key, value in data.items():
        field = aliases.get(key)
        if field is None:
            unknown.append(f"{where}{key}")
            continue
        nested = field.annotation
        if isinstance(nested, type) and issubclass(nested, BaseModel) and isinstance(value, dict):
            unknown += _unknown_keys(nested, value, f"{where}{key}.")  # pyright: ignore[reportUnknownArgumentType]
    return unknown


@PROPERTIES
@given(histories())
def test_v6_every_projected_event_is_a_wire_event(events: list[Event]) -> None:
    for event in events:
        data = event_json(event)
        assert _unknown_keys(WireEvent, data, "") == []
        wire = WireEvent.model_validate(data)
        dumped = wire.model_dump(by_alias=True, exclude_none=True, mode="json")
        for key in ("invocationId", "author", "id", "timestamp", "content", "actions"):
            if key in data:
                assert key in dumped, key
        assert wire.id == event.id
        assert wire.author == event.author
        assert (wire.content is None) == (event.content is None)
