"""Issue 24 item 1: reading judges' answers in ADK's label formats; naming the judge model."""

from __future__ import annotations

import pytest

from rondo.errors import ModelNotFoundError
from rondo.evaluation import JudgeOptions, parse_eval_config
from rondo.evaluation.judge import provider_of, resolve_judge_model
from rondo.evaluation.labels import (
    read_rubric_verdicts,
    read_sentence_labels,
    read_sentences,
    read_validity,
)
from rondo.models.registry import substitute_models
from rondo.testing import ScriptedModel


@pytest.mark.parametrize(
    ("answer", "valid"),
    [
        ('{"reasoning": "r", "is_the_agent_response_valid": "valid"}', True),
        ('{"is_the_agent_response_valid": ["valid"]\n}', True),
        ('{"is_the_agent_response_valid": true}', True),
        ('{"is_the_agent_response_valid": "invalid"}', False),
        ('{"is_the_agent_response_valid": "partially_valid"}', False),
        ('{"is_the_agent_response_valid": "almost"}', False),
        ('{"is_the_agent_response_valid": "Valid"}', None),  # ADK compares as written
        ('{"is_the_agent_response_invalid": "true"}', False),
        ('{"is_the_agent_response_invalid": "no"}', True),
        ("It looks right to me.", None),
    ],
)
def test_o5_verdict_labels_read_as_adks(answer: str, valid: bool | None) -> None:
    assert read_validity(answer) is valid


def test_o5_rubric_verdicts_pair_ids_with_their_property() -> None:
    answer = (
        "ID: a\nProperty: Is short.\nRationale: yes it is.\nVerdict: yes\n\n"
        "Property: Is kind.\nRationale: rude.\nVerdict: no\n"
        "ID: c\nProperty: Names the city.\nRationale: ?\nVerdict: unsure\n"
    )
    verdicts = read_rubric_verdicts(answer)
    assert [(v.rubric_id, v.property_text, v.score) for v in verdicts] == [
        ("a", "Is short.", 1.0),
        (None, "Is kind.", 0.0),
        ("c", "Names the city.", None),
    ]
    # A rationale missing: nothing is read rather than a partial, inflated reading.
    assert (
        read_rubric_verdicts("Property: x\nVerdict: no\nProperty: y\nRationale: r\nVerdict: yes")
        == []
    )


def test_o5_sentences_and_their_labels() -> None:
    assert read_sentences("<sentence>A.</sentence>\n<sentence>B\nC.</sentence>") == ["A.", "B\nC."]
    labels = read_sentence_labels(
        "sentence: A.\nlabel: supported\nrationale: r\nsupporting_excerpt: x\n"
        "contradicting_excerpt: null\nsentence: B.\nlabel: Disputed\nrationale: r\n"
        "supporting_excerpt: null\ncontradicting_excerpt: y\nsentence: C.\nlabel: maybe\n"
        "rationale: r\nsupporting_excerpt: null\ncontradicting_excerpt: null"
    )
    assert [(x.sentence, x.score) for x in labels] == [("A.", 1.0), ("B.", 0.0), ("C.", None)]


def test_o5_judge_options_as_adk_configures_them() -> None:
    config = parse_eval_config(
        {
            "criteria": {
                "final_response_match_v2": 0.8,
                "hallucinations_v1": {
                    "threshold": 0.5,
                    "judgeModelOptions": {"judgeModel": "openai:gpt-4o-mini", "numSamples": 2},
                    "evaluateIntermediateNlResponses": True,
                },
            }
        }
    )
    first, second = config.criteria
    assert first.judge == JudgeOptions("gemini-2.5-flash", 5, 1)  # ADK's defaults
    assert second.judge == JudgeOptions("openai:gpt-4o-mini", 2, 1)
    assert second.evaluate_intermediate_nl_responses


@pytest.mark.parametrize(
    ("name", "provider"),
    [
        ("gemini-2.5-flash", "gemini"),
        ("gpt-4o-mini", "openai"),
        ("o3-mini", "openai"),
        ("claude-sonnet-4-5", "anthropic"),
        ("llama-3", None),
    ],
)
def test_o5_a_bare_adk_model_name_names_its_provider(name: str, provider: str | None) -> None:
    assert provider_of(name) == provider


def test_o5_bare_judge_names_resolve_through_the_model_registry() -> None:
    asked: list[str] = []

    def factory(spec: str) -> ScriptedModel:
        asked.append(spec)
        return ScriptedModel(name=spec)

    with substitute_models(factory):
        assert resolve_judge_model("gemini-2.5-flash").name == "gemini:gemini-2.5-flash"
        assert resolve_judge_model("local:smollm2").name == "local:smollm2"
    assert asked == ["gemini:gemini-2.5-flash", "local:smollm2"]
    with pytest.raises(ModelNotFoundError, match="write it as 'provider:model'"):
        resolve_judge_model("mystery-model")


def test_o5_the_judge_and_simulator_prompts_are_documented_in_full() -> None:
    from pathlib import Path

    from rondo.evaluation import prompts
    from rondo.evaluation.simulation import SIMULATOR_PROMPT

    docs = (Path(__file__).parents[2] / "docs" / "testing.md").read_text(encoding="utf-8")
    for prompt in (
        prompts.FINAL_RESPONSE_MATCH,
        prompts.RUBRIC_FINAL_RESPONSE,
        prompts.RUBRIC_TOOL_USE,
        prompts.HALLUCINATION_SEGMENTER,
        prompts.HALLUCINATION_VALIDATOR,
        SIMULATOR_PROMPT,
    ):
        assert prompt.strip() in docs
    assert f"`PROMPT_VERSION` (now `{prompts.PROMPT_VERSION}`)" in docs
