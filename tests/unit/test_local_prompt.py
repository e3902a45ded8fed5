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
    grounded,
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
    demo_end = 1 + len(TOOL_DEMO)
    assert messages[1:demo_end] == list(TOOL_DEMO)
    assert messages[demo_end:] == [
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


def call_schema_of(grammar: str) -> dict[str, Any]:
    """The JSON schema a call grammar embeds for one call."""
    (line,) = [x for x in grammar.splitlines() if x.startswith("rondo_call: %json ")]
    return json.loads(line.removeprefix("rondo_call: %json "))


def test_grammar_wraps_the_call_schema_in_the_tool_call_format() -> None:
    grammar = call_grammar([WEATHER], required=True, max_calls=2)
    lines = grammar.splitlines()
    assert lines[0] == "%llguidance {}"
    assert lines[1] == 'start: "<tool_call>[" rondo_call ("," " " rondo_call)? "]</tool_call>"'
    schema = call_schema_of(grammar)
    compact = schema.pop("x-guidance")
    assert compact["whitespace_flexible"] is False
    closed_parameters = {**WEATHER.parameters, "additionalProperties": False}
    assert schema == {
        "oneOf": [
            {
                "type": "object",
                "properties": {"name": {"const": "get_weather"}, "arguments": closed_parameters},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        ]
    }


def test_grammar_allows_no_call_unless_required() -> None:
    grammar = call_grammar([WEATHER], required=False, max_calls=1)
    assert grammar.splitlines()[1] == 'start: "<tool_call>[" (rondo_call)? "]</tool_call>"'


def test_grammar_keeps_extra_keys_a_schema_allows() -> None:
    open_ended = FunctionDeclaration(
        name="tag",
        parameters={"type": "object", "properties": {}, "additionalProperties": True},
    )
    schema = call_schema_of(call_grammar([open_ended], required=True, max_calls=1))
    assert schema["oneOf"][0]["properties"]["arguments"]["additionalProperties"] is True


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

    schema = call_schema_of(
        call_grammar([with_defs("a", "p"), with_defs("b", "q")], required=True, max_calls=1)
    )
    assert set(schema["$defs"]) == {"t0-Item", "t1-Item"}
    assert schema["$defs"]["t0-Item"]["additionalProperties"] is False
    refs = [alt["properties"]["arguments"]["properties"]["x"]["$ref"] for alt in schema["oneOf"]]
    assert refs == ["#/$defs/t0-Item", "#/$defs/t1-Item"]
    assert "$defs" not in schema["oneOf"][0]["properties"]["arguments"]


# -- grounding ----------------------------------------------------------------------------------


def test_a_call_is_grounded_when_its_words_come_from_the_user() -> None:
    asked = [Content.user("Tell me the temperature in New York.")]
    assert grounded([FunctionCall(name="get_weather", args={"city": "new york"})], asked)
    assert grounded([FunctionCall(name="get_weather", args={"city": "NEW YORK"})], asked)
    assert grounded([FunctionCall(name="get_time", args={})], asked)  # nothing to invent


def test_invented_arguments_are_not_grounded() -> None:
    assert not grounded(
        [FunctionCall(name="get_weather", args={"city": "New York"})], [Content.user("Hello")]
    )
    # Digits name nothing: "What is 2+2?" is no weather question.
    assert not grounded(
        [FunctionCall(name="get_weather", args={"city": "2,2"})], [Content.user("What is 2+2?")]
    )
    # Nested values count, and words of the model's own turns do not.
    history = [
        Content.user("Hi"),
        Content(role="model", parts=[Part(text="Paris is lovely.")]),
    ]
    assert not grounded([FunctionCall(name="find", args={"where": {"city": "Paris"}})], history)


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
    pytest.importorskip("xllamacpp")
    from rondo.models.local import from_model_string

    with pytest.raises(ModelNotFoundError, match="no GGUF model file at"):
        from_model_string(str(tmp_path / "absent.gguf"))


def test_missing_xllamacpp_names_the_local_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import importlib.util

    from rondo.models import local

    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "xllamacpp" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ModelNotFoundError, match=r"rondo-agents\[local\]"):
        local.LocalModel(tmp_path / "model.gguf")


# -- decoding helpers ---------------------------------------------------------------------------


def _chunk(text: str | None = None, finish: str | None = None) -> dict[str, Any]:
    delta = {"content": text} if text is not None else {}
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_stream_reader_collects_deltas_usage_and_the_finish_reason() -> None:
    import threading

    from rondo.models.local import _Stream

    emitted: list[str] = []
    reader = _Stream(emitted.append, threading.Event())
    for chunk in [
        _chunk("Hel"),
        _chunk("lo"),
        _chunk(finish="length"),
        {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2}},
    ]:
        assert reader(chunk) is False
    assert reader.text == "Hello"
    assert emitted == ["Hel", "lo"]
    assert (reader.prompt_tokens, reader.completion_tokens) == (9, 2)
    assert reader.finish_reason == "max_tokens"


def test_stream_reader_stops_the_generation_once_cancelled() -> None:
    import threading

    from rondo.models.local import _Stream

    cancel = threading.Event()
    emitted: list[str] = []
    reader = _Stream(emitted.append, cancel)
    assert reader(_chunk("a")) is False
    cancel.set()
    assert reader(_chunk("b")) is True  # True tells llama.cpp to cancel the task
    assert emitted == ["a"]


def test_stream_reader_keeps_the_servers_error() -> None:
    import threading

    from rondo.models.local import _request_error, _Stream

    reader = _Stream(None, threading.Event())
    error = {"type": "exceed_context_size_error", "n_prompt_tokens": 431, "n_ctx": 256}
    assert reader({"error": error}) is True
    assert reader.error == error
    message = str(_request_error(error, 256))
    assert "the prompt has 431 tokens; the local model's context holds 256" in message


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
