"""Reading google-adk's eval-set files and test_config.json criteria, as ADK reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rondo.evaluation import (
    Criterion,
    EvalConfig,
    EvalSetError,
    ExpectedCall,
    config_beside,
    load_eval_config,
    load_eval_set,
    parse_eval_config,
    parse_eval_set,
)

WEATHER = Path(__file__).parents[1] / "fixtures" / "eval" / "weather"


def write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_evalset_json_as_adk_writes_it() -> None:
    eval_set = load_eval_set(WEATHER / "weather.evalset.json")
    assert eval_set.eval_set_id == "weather"
    assert [c.eval_id for c in eval_set.eval_cases] == [
        "paris",
        "rome_wrong_city",
        "greeting_then_paris",
        "compare_order",
        "tokyo_cjk",
        "home_city_state",
    ]
    paris = eval_set.eval_cases[0].conversation or []
    assert paris[0].user_content.text() == "What's the weather in Paris?"
    assert paris[0].expected_calls() == [ExpectedCall(name="get_weather", args={"city": "Paris"})]
    assert paris[0].expected_text() == "It is 18°C and sunny in Paris."
    home = eval_set.eval_cases[5]
    assert home.session_input is not None
    assert (home.session_input.app_name, home.session_input.user_id) == ("weather_app", "alice")
    assert home.session_input.state == {"home_city": "Lyon"}


def test_invocation_events_form_gives_the_trajectory() -> None:
    compare = load_eval_set(WEATHER / "weather.evalset.json").eval_cases[3]
    (invocation,) = compare.conversation or []
    assert [c.args["city"] for c in invocation.expected_calls()] == ["Tokyo", "Paris"]


def test_camel_case_file_reads_the_same() -> None:
    snake = load_eval_set(WEATHER / "weather.evalset.json")
    camel = load_eval_set(WEATHER / "weather_camel.evalset.json")
    assert camel.eval_set_id == "weather_camel"
    assert camel.eval_cases == snake.eval_cases


def test_legacy_eval_set_list() -> None:
    eval_set = load_eval_set(WEATHER / "weather_legacy.json")
    assert [c.eval_id for c in eval_set.eval_cases] == [
        "paris",
        "greeting_then_rome",
        "home_city_state",
    ]
    rome = (eval_set.eval_cases[1].conversation or [])[1]
    # mock_tool_output is not part of the trajectory
    assert rome.expected_calls() == [ExpectedCall(name="get_weather", args={"city": "Rome"})]
    assert eval_set.eval_cases[0].session_input is None  # an empty initial_session
    session = eval_set.eval_cases[2].session_input
    assert session is not None
    assert session.user_id == "bob"


def test_test_json_queries_are_one_case_with_an_initial_session() -> None:
    session = json.loads((WEATHER / "initial_session.json").read_text())
    eval_set = load_eval_set(WEATHER / "weather.test.json", initial_session=session)
    (case,) = eval_set.eval_cases
    assert case.eval_id == "weather.test.json"
    assert [i.user_content.text() for i in case.conversation or []] == [
        "Hi",
        "What's the weather in Paris?",
        "Weather in Rome please",
        "What's my home city?",
    ]
    assert case.session_input is not None
    assert case.session_input.state == {"home_city": "Lyon"}


def test_user_content_with_inline_data_becomes_rondo_content() -> None:
    eval_set = parse_eval_set(
        {
            "eval_set_id": "img",
            "eval_cases": [
                {
                    "evalId": "pic",
                    "conversation": [
                        {
                            "userContent": {
                                "role": "user",
                                "parts": [
                                    {"text": "what is this?", "videoMetadata": None},
                                    {"inlineData": {"mimeType": "image/png", "data": "AAFoaQ=="}},
                                ],
                            }
                        }
                    ],
                }
            ],
        }
    )
    content = (eval_set.eval_cases[0].conversation or [])[0].user_content.to_content("user")
    assert content.parts[0].text == "what is this?"
    blob = content.parts[1].inline_data
    assert blob is not None
    assert (blob.mime_type, blob.data) == ("image/png", b"\x00\x01hi")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON"),
        ({"eval_set_id": "x"}, "not an eval set (no 'eval_cases')"),
        ([1, 2], "not an eval set: expected an EvalSet object"),
        ({"eval_set_id": "x", "eval_cases": []}, "the eval set has no cases"),
        (
            {"eval_set_id": "x", "eval_cases": [{"eval_id": "a", "conversation": [{}]}]},
            "eval_cases[0].conversation[0].user_content: Field required",
        ),
        (
            {"eval_set_id": "x", "eval_cases": [{"eval_id": "a", "conversation": []}]},
            "case 'a' has an empty conversation",
        ),
        (
            {"eval_set_id": "x", "eval_cases": [{"eval_id": "a", "conversation_scenario": {}}]},
            "case 'a': conversation_scenario.starting_prompt must be a non-empty text",
        ),
        (
            {"eval_set_id": "x", "eval_cases": [{"eval_id": "a"}]},
            "case 'a' needs a conversation or a conversation_scenario",
        ),
        (
            [{"query": "hi", "expected_tool_use": [{"tool_input": {}}]}],
            "[0].expected_tool_use[0]: needs 'tool_name' and 'tool_input'",
        ),
        ([{"name": "a", "data": "nope"}], "[0].data must be a list"),
    ],
)
def test_unusable_eval_sets_are_clear_errors(tmp_path: Path, content: Any, message: str) -> None:
    path = write(tmp_path / "bad.evalset.json", content)
    with pytest.raises(EvalSetError) as caught:
        load_eval_set(path)
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


def test_missing_eval_set_file(tmp_path: Path) -> None:
    with pytest.raises(EvalSetError, match="no such eval set file"):
        load_eval_set(tmp_path / "absent.evalset.json")


def test_duplicate_case_ids_are_refused(tmp_path: Path) -> None:
    case = {"eval_id": "a", "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}]}
    path = write(tmp_path / "dup.json", {"eval_set_id": "x", "eval_cases": [case, case]})
    with pytest.raises(EvalSetError, match="two cases are named 'a'"):
        load_eval_set(path)


def test_config_numbers_and_criterion_objects() -> None:
    config = parse_eval_config(
        {
            "criteria": {
                "tool_trajectory_avg_score": {
                    "threshold": 0.5,
                    "matchType": "in-order",
                    "ignore_args": True,
                },
                "response_match_score": 1,
            }
        }
    )
    assert config.criteria == (
        Criterion("tool_trajectory_avg_score", 0.5, "IN_ORDER", True),
        Criterion("response_match_score", 1.0),
    )
    assert parse_eval_config(
        {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": 2}}}
    ).criteria == (Criterion("tool_trajectory_avg_score", 1.0, "ANY_ORDER"),)


def test_metrics_rondo_cannot_compute_are_listed_not_evaluated() -> None:
    config = parse_eval_config(
        {
            "criteria": {
                "response_match_score": 0.7,
                "safety_v1": 0.5,
                "my_metric": 0.3,
            }
        }
    )
    assert config.criteria == (Criterion("response_match_score", 0.7),)
    assert dict(config.not_evaluated) == {
        "safety_v1": "an ADK metric that needs Vertex AI or a multi-turn judge, which rondo "
        "does not run",
        "my_metric": "unknown metric (rondo eval computes tool_trajectory_avg_score, "
        "response_match_score, final_response_match_v2, "
        "rubric_based_final_response_quality_v1, rubric_based_tool_use_quality_v1, "
        "hallucinations_v1)",
    }


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, 'expected {"criteria": {metric: threshold, ...}}'),
        ({"criteria": []}, 'expected {"criteria"'),
        ({"criteria": {"safety_v1": 0.5}}, "no criterion rondo eval can compute"),
        ({"criteria": {"response_match_score": "high"}}, "the threshold must be a number"),
        ({"criteria": {"response_match_score": True}}, "the threshold must be a number"),
        ({"criteria": {"response_match_score": {}}}, "a criterion object needs a 'threshold'"),
        (
            {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "FUZZY"}}},
            "match_type must be one of EXACT, IN_ORDER, ANY_ORDER",
        ),
    ],
)
def test_unusable_configs_are_clear_errors(data: Any, message: str) -> None:
    with pytest.raises(EvalSetError) as caught:
        parse_eval_config(data, source="cfg.json")
    assert str(caught.value).startswith("cfg.json: ")
    assert message in str(caught.value)


def test_config_beside_the_eval_set_or_adk_defaults(tmp_path: Path) -> None:
    assert config_beside(tmp_path / "x.evalset.json") == EvalConfig.default()
    assert EvalConfig.default().describe() == (
        "tool_trajectory_avg_score >= 1, response_match_score >= 0.8"
    )
    write(tmp_path / "test_config.json", {"criteria": {"response_match_score": 0.5}})
    assert config_beside(tmp_path / "x.evalset.json").criteria == (
        Criterion("response_match_score", 0.5),
    )


def test_config_file_errors(tmp_path: Path) -> None:
    with pytest.raises(EvalSetError, match="no such config file"):
        load_eval_config(tmp_path / "absent.json")
    with pytest.raises(EvalSetError, match="is not valid JSON"):
        load_eval_config(write(tmp_path / "bad.json", "{"))
