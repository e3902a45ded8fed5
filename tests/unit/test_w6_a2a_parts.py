"""SPEC W6: rondo parts ↔ A2A parts (what the A2A server sends and the client reads)."""

from __future__ import annotations

from typing import Any

import pytest

from tests._require import require_module

require_module("a2a", what="A2A", install="pip install 'rondo-agents[a2a]'")

from a2a.types import Part as A2APart  # noqa: E402
from google.protobuf import json_format, struct_pb2  # noqa: E402

from rondo.a2a._parts import (  # noqa: E402
    from_a2a_part,
    from_a2a_parts,
    long_running_ids,
    to_a2a_part,
    to_a2a_parts,
)
from rondo.errors import ConfigurationError  # noqa: E402
from rondo.types import (  # noqa: E402
    Blob,
    CodeExecutionResult,
    Content,
    ExecutableCode,
    FileData,
    FunctionCall,
    FunctionResponse,
    Part,
)

# Property tests need hypothesis (the dev extra); without it this module skips, naming it.
_hypothesis = require_module("hypothesis", what="HYPOTHESIS", install="pip install hypothesis")
st = require_module("hypothesis.strategies", what="HYPOTHESIS", install="pip install hypothesis")
given = _hypothesis.given

ROUND_TRIPS = [
    Part(text="hello"),
    Part(text="thinking...", thought=True),
    Part(function_call=FunctionCall(name="get_weather", args={"city": "Oslo", "days": 3}, id="c1")),
    Part(function_response=FunctionResponse(name="get_weather", response={"t": 21.5}, id="c1")),
    Part(inline_data=Blob(mime_type="image/png", data=b"\x89PNG", display_name="a.png")),
    Part(file_data=FileData(file_uri="https://x/y.pdf", mime_type="application/pdf")),
    Part(executable_code=ExecutableCode(code="print(1)")),
    Part(code_execution_result=CodeExecutionResult(output="1")),
]


@pytest.mark.parametrize(
    "part", ROUND_TRIPS, ids=lambda p: next(iter(p.model_dump(exclude_defaults=True)))
)
def test_w6_a2a_parts_round_trip(part: Part) -> None:
    converted = to_a2a_part(part)
    assert converted is not None
    assert from_a2a_part(converted) == part


def test_w6_a2a_tool_calls_are_data_parts_marked_as_google_adk_marks_them() -> None:
    call = Part(function_call=FunctionCall(name="delete", args={"path": "a"}, id="c9"))
    [marked] = to_a2a_parts(Content(role="model", parts=[call]), long_running=["c9"])
    assert json_format.MessageToDict(marked.metadata) == {
        "adk_type": "function_call",
        "adk_is_long_running": True,
    }
    assert json_format.MessageToDict(marked.data) == {
        "name": "delete",
        "args": {"path": "a"},
        "id": "c9",
    }
    assert long_running_ids([marked]) == {"c9"}
    assert to_a2a_parts(Content(role="model", parts=[call]), skip=["c9"]) == []


def test_w6_a2a_unmarked_data_part_becomes_json_text() -> None:
    data = A2APart(data=json_format.ParseDict({"rows": [1, 2]}, struct_pb2.Value()))
    assert from_a2a_parts([data, A2APart(text="")]) == [Part(text='{"rows": [1, 2]}')]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**52), 2**52) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(args=st.dictionaries(st.text(max_size=6), json_values, max_size=4))
def test_w6_a2a_call_arguments_survive_protobuf(args: dict[str, Any]) -> None:
    """Protobuf stores numbers as doubles; whole numbers come back as ints."""
    part = Part(function_call=FunctionCall(name="f", args=args, id="c"))
    converted = to_a2a_part(part)
    assert converted is not None
    assert from_a2a_part(converted) == part


def test_w6_a2a_remote_agent_checks_its_configuration() -> None:
    from rondo.a2a import RemoteA2AAgent

    with pytest.raises(ConfigurationError, match="http"):
        RemoteA2AAgent(name="r", url="ftp://x")
    with pytest.raises(ConfigurationError, match="positive"):
        RemoteA2AAgent(name="r", url="http://x", timeout=0)
    with pytest.raises(ConfigurationError, match="identifier"):
        RemoteA2AAgent(name="not a name", url="http://x")
