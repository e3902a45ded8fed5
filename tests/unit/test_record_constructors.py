"""DESIGN §4: `Content(role, parts)`, `FunctionCall(name, args, id)`,
`FunctionResponse(name, response, id)`, `Blob(mime_type, data)` — by position or keyword."""

from __future__ import annotations

import pydantic
import pytest

from rondo import Content, FunctionCall, FunctionResponse, Part
from rondo.types import Blob


def test_records_take_their_leading_fields_by_position() -> None:
    assert Content("model", [Part(text="hi")]) == Content(role="model", parts=[Part(text="hi")])
    call = FunctionCall("get_weather", {"city": "Paris"}, "c1")
    assert (call.name, call.args, call.id) == ("get_weather", {"city": "Paris"}, "c1")
    answer = FunctionResponse("get_weather", {"temp": 18}, "c1")
    assert (answer.name, answer.response, answer.id) == ("get_weather", {"temp": 18}, "c1")
    assert Blob("image/png", b"\x89PNG") == Blob(mime_type="image/png", data=b"\x89PNG")


def test_only_the_given_fields_are_set_and_bad_input_still_fails() -> None:
    assert Content().model_fields_set == set()
    assert FunctionCall("f").model_fields_set == {"name"}
    assert FunctionResponse(name="f", id="c").model_fields_set == {"name", "id"}
    with pytest.raises(pydantic.ValidationError):
        FunctionCall()  # name is required
    with pytest.raises(pydantic.ValidationError):
        Content(rol="user")  # a misspelt field is refused (extra="forbid")
    with pytest.raises(pydantic.ValidationError):
        FunctionCall("f", "not a mapping")  # pyright: ignore[reportArgumentType]
    frozen = Content("user", [])
    with pytest.raises(pydantic.ValidationError):
        frozen.role = "model"  # pyright: ignore[reportAttributeAccessIssue]
