"""The local model's turn plan, prompt, grammar and output parsing (no model is loaded)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rondo import Content, FunctionCall, FunctionResponse, Part
from rondo.errors import ConfigurationError, ModelNotFoundError
from rondo.models import FunctionDeclaration, GenerateConfig, ModelRequest
from rondo.models._local_prompt import (
    CALL_CLOSE,
    CALL_OPEN,
    TOOL_DEMO,
    TurnPlan,
    call_grammar,
    parse_calls,
    plan_turn,
    render_messages,
)

WEATHER = FunctionDeclaration(
    name="get_weather",
    description="Returns the weather.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = FunctionDeclaration(name="get_time", description="Returns the time.")


def request(*contents: Content, tool_choice: str | None = None, tools: bool = True) -> ModelRequest:
    config = GenerateConfig(
        system_instruction="Be brief.",
        tools=[WEATHER, TIME] if tools else [],
        tool_choice=tool_choice,
    )
    return ModelRequest(contents=list(contents), config=config)


QUESTION = Content.user("Weather in Paris?")
CALL = Content(
    role="model",
    parts=[Part(function_call=FunctionCall(name="get_weather", args={"city": "Paris"}))],
)
RESULT = Content(
    role="user",
    parts=[Part(function_response=FunctionResponse(name="get_weather", response={"t": "18°C"}))],
)


# -- plan -----------------------------------------------------------------------------------------


def test_auto_lets_the_model_choose_on_a_new_question() -> None:
    assert plan_turn(request(QUESTION), answer_after_tool=True) == TurnPlan(
        "maybe_calls", (WEATHER, TIME)
    )


def test_auto_answers_right_after_tool_results() -> None:
    assert plan_turn(request(QUESTION, CALL, RESULT), answer_after_tool=True) == TurnPlan("text")
    assert plan_turn(request(QUESTION, CALL, RESULT), answer_after_tool=False).mode == "maybe_calls"


def test_no_tools_or_none_is_text() -> None:
    assert plan_turn(request(QUESTION, tools=False), answer_after_tool=True).mode == "text"
    assert plan_turn(request(QUESTION, tool_choice="none"), answer_after_tool=True).mode == "text"


def test_required_and_named_tool_force_a_call_even_after_results() -> None:
    required = plan_turn(
        request(QUESTION, CALL, RESULT, tool_choice="required"), answer_after_tool=True
    )
    assert required == TurnPlan("calls", (WEATHER, TIME))
    named = plan_turn(request(QUESTION, tool_choice="get_time"), answer_after_tool=True)
    assert named == TurnPlan("calls", (TIME,))


def test_tool_choice_naming_an_unknown_tool() -> None:
    with pytest.raises(ConfigurationError, match="tool_choice='nope' names no declared tool"):
        plan_turn(request(QUESTION, tool_choice="nope"), answer_after_tool=True)


# -- messages ---------------------------------------------------------------------------------------


def test_messages_with_tools_list_them_show_the_demo_and_render_calls_and_results() -> None:
    thought = Content(role="model", parts=[Part(text="secret plan", thought=True)])
    messages = render_messages(request(QUESTION, thought, CALL, RESULT))
    system = messages[0]
    assert system["role"] == "system"
    assert system["content"].startswith("Be brief.\n\nYou are an expert in composing functions.")
    listed = system["content"].split("<tools>")[1].split("</tools>")[0]
    assert [t["name"] for t in json.loads(listed)] == ["get_weather", "get_time"]
    assert messages[1:5] == list(TOOL_DEMO)
    assert messages[5:] == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": f'{CALL_OPEN}{{"name": "get_weather", "arguments": {{"city": "Paris"}}}}{CALL_CLOSE}',
        },
        # Non-ASCII stays as is: a small model copies "18°C", not "18\u00b0C".
        {"role": "user", "content": 'Result of get_weather: {"t": "18°C"}'},
    ]


def test_every_turn_of_a_request_with_tools_shares_the_prefix() -> None:
    first = render_messages(request(QUESTION))
    second = render_messages(request(QUESTION, CALL, RESULT, tool_choice="none"))
    assert second[: len(first)] == first


def test_messages_without_tools_are_plain() -> None:
    answer = Content.model("Sunny.")
    messages = render_messages(request(QUESTION, answer, tools=False))
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Sunny."},
    ]


def test_no_demo_and_no_instruction() -> None:
    req = ModelRequest(contents=[QUESTION], config=GenerateConfig(tools=[WEATHER]))
    messages = render_messages(req, demo=False)
    assert messages[0]["content"].startswith("You are an expert")
    assert messages[1] == {"role": "user", "content": "Weather in Paris?"}


def test_text_and_calls_of_one_model_turn_share_a_message() -> None:
    both = Content(role="model", parts=[Part(text="Let me look."), *CALL.parts])
    messages = render_messages(request(both, tools=False))
    assert messages[-1]["content"].startswith("Let me look.\n<tool_call>[")


# -- grammar ------------------------------------------------------------------------------------------


def fake_converter(schema: str) -> str:
    """Stands in for llama.cpp's converter: shows which schema it was given."""
    return f"root ::= alt\nschema ::= {json.dumps(schema)}"


def test_grammar_wraps_the_call_schema_in_the_tool_call_format() -> None:
    grammar = call_grammar([WEATHER], required=True, max_calls=2, to_gbnf=fake_converter)
    lines = grammar.splitlines()
    assert lines[0] == 'root ::= "<tool_call>[" rondo-call ("," " "? rondo-call)? "]</tool_call>"'
    assert lines[1] == "rondo-call ::= alt"
    schema = json.loads(json.loads(lines[2].split(" ::= ", 1)[1]))
    assert schema == {
        "oneOf": [
            {
                "type": "object",
                "properties": {"name": {"const": "get_weather"}, "arguments": WEATHER.parameters},
                "required": ["name", "arguments"],
            }
        ]
    }


def test_grammar_allows_no_call_unless_required() -> None:
    grammar = call_grammar([WEATHER], required=False, max_calls=1, to_gbnf=fake_converter)
    assert grammar.splitlines()[0] == 'root ::= "<tool_call>[" (rondo-call)? "]</tool_call>"'


def test_definitions_of_each_tool_are_kept_apart() -> None:
    def with_defs(name: str, field: str) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=name,
            parameters={
                "type": "object",
                "properties": {"x": {"$ref": "#/$defs/Item"}},
                "$defs": {"Item": {"type": "object", "properties": {field: {"type": "string"}}}},
            },
        )

    seen: list[dict[str, Any]] = []

    def capture(schema: str) -> str:
        seen.append(json.loads(schema))
        return "root ::= x"

    call_grammar(
        [with_defs("a", "p"), with_defs("b", "q")], required=True, max_calls=1, to_gbnf=capture
    )
    schema = seen[0]
    assert set(schema["$defs"]) == {"t0-Item", "t1-Item"}
    refs = [alt["properties"]["arguments"]["properties"]["x"]["$ref"] for alt in schema["oneOf"]]
    assert refs == ["#/$defs/t0-Item", "#/$defs/t1-Item"]
    assert "$defs" not in schema["oneOf"][0]["properties"]["arguments"]


def test_parameters_the_converter_rejects_fall_back_to_any_object() -> None:
    calls: list[str] = []

    def picky(schema: str) -> str:
        calls.append(schema)
        if "weird" in schema:
            raise AssertionError("Unrecognized schema")
        return "root ::= x"

    odd = FunctionDeclaration(name="odd", parameters={"type": "weird"})
    call_grammar([odd], required=True, max_calls=1, to_gbnf=picky)
    assert json.loads(calls[-1])["oneOf"][0]["properties"]["arguments"] == {"type": "object"}


def test_real_converter_grammar() -> None:
    grammars = pytest.importorskip("llama_cpp.llama_grammar")
    text = call_grammar(
        [WEATHER, TIME], required=False, max_calls=4, to_gbnf=grammars.json_schema_to_gbnf
    )
    assert "rondo-call ::= alternative-0 | alternative-1" in text


# -- output -------------------------------------------------------------------------------------------


def test_parse_calls() -> None:
    text = (
        f'{CALL_OPEN}{{"name": "get_weather", "arguments": {{"city": "Paris"}}}}, '
        f'{{"name": "get_weather", "arguments": {{"city": "Paris"}}}}, '
        f'{{"name": "get_time", "arguments": {{}}}}{CALL_CLOSE}'
    )
    calls = parse_calls(text, [WEATHER, TIME])
    assert calls == [
        FunctionCall(name="get_weather", args={"city": "Paris"}),  # the repeat is dropped
        FunctionCall(name="get_time", args={}),
    ]
    assert parse_calls(f"{CALL_OPEN}{CALL_CLOSE}", [WEATHER]) == []


@pytest.mark.parametrize(
    "text",
    [
        f'{CALL_OPEN}{{"name": "get_weather", "arguments": {{"city": "Par',  # cut off
        f'{CALL_OPEN}{{"name": "other", "arguments": {{}}}}{CALL_CLOSE}',  # undeclared
        f'{CALL_OPEN}{{"name": "get_weather", "arguments": 3}}{CALL_CLOSE}',
        f"{CALL_OPEN}3{CALL_CLOSE}",
        f"{CALL_OPEN}{{]{CALL_CLOSE}",
        "plain text",
    ],
)
def test_parse_calls_rejects_what_is_not_a_complete_call(text: str) -> None:
    assert parse_calls(text, [WEATHER]) is None


# -- model strings and set-up errors ----------------------------------------------------------------


def test_unknown_local_model_name() -> None:
    from rondo.models.local import from_model_string

    with pytest.raises(ModelNotFoundError, match="unknown local model 'gpt'"):
        from_model_string("gpt")


def test_missing_gguf_file(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    from rondo.models.local import from_model_string

    with pytest.raises(ModelNotFoundError, match="no GGUF model file at"):
        from_model_string(str(tmp_path / "absent.gguf"))


def test_missing_llama_cpp_names_the_local_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.util

    from rondo.models import local

    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "llama_cpp" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ModelNotFoundError, match=r"rondo-agents\[local\]"):
        local.LocalModel(tmp_path / "model.gguf")


# -- decoding helpers ---------------------------------------------------------------------------


def test_text_sink_cuts_at_a_stop_sequence_and_never_emits_part_of_it() -> None:
    from rondo.models.local import _TextSink

    emitted: list[str] = []
    sink = _TextSink(("END",), emitted.append)
    for piece in ["Hello ", "E", "N", "D and more"]:
        sink.add(piece)
        if sink.stopped:
            break
    sink.flush()
    assert sink.text == "Hello "
    assert "".join(emitted) == "Hello "
    assert sink.stopped


def test_text_sink_without_stops_emits_at_once() -> None:
    from rondo.models.local import _TextSink

    emitted: list[str] = []
    sink = _TextSink((), emitted.append)
    sink.add("a")
    sink.add("b")
    assert emitted == ["a", "b"]


def test_sampling_is_greedy_and_bounded_by_default() -> None:
    from rondo.models.local import _Sampling

    default = _Sampling.from_config(GenerateConfig(), 256)
    assert (default.temperature, default.max_tokens, default.stops) == (0.0, 256, ())
    chosen = _Sampling.from_config(
        GenerateConfig(temperature=0.7, max_output_tokens=9, seed=3, stop_sequences=["", "x"]), 256
    )
    assert (chosen.temperature, chosen.max_tokens, chosen.seed, chosen.stops) == (0.7, 9, 3, ("x",))
    tuned = _Sampling.from_config(GenerateConfig(extra={"repeat_penalty": 1.1, "min_p": 0}), 1)
    assert (tuned.repeat_penalty, tuned.min_p) == (1.1, 0.0)
