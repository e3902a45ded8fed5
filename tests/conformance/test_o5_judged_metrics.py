"""SPEC O5 / issue 24 item 1: google-adk's LLM-judged metrics, scored as ADK scores them.

One eval run of a rondo agent (ScriptedModel) is judged by rondo with judges that replay a
fixed list of answers; the same actual invocations (as ADK `Invocation` JSON) and the same
answers go through google-adk's own evaluators (`tests/fixtures/eval/adk/judge_crosscheck.py`,
in the ADK virtualenv, its judge a fake `BaseLlm` registered in ADK's `LLMRegistry`). The
scores, statuses, per-invocation scores, rubric verdicts and the number of judge calls must be
the same. The answers cover ADK's label quirks: verdicts in brackets, the `..._invalid` field,
unlabelled answers, ties, failed samples, rubrics matched by text instead of id, unreadable
rubric answers, "not applicable" read as "no", segmenters without sentences.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest

from rondo import Agent
from rondo.errors import ModelError
from rondo.evaluation import EvalReport, parse_eval_config, parse_eval_set, run_eval
from rondo.evaluation.adk_json import invocation_json
from rondo.models import Model, ModelResponse
from rondo.testing import ScriptedModel
from rondo.types import Content, FunctionCall, Part
from tests._require import require
from tests.server._adk import adk_python

CROSSCHECK = Path(__file__).parents[1] / "fixtures" / "eval" / "adk" / "judge_crosscheck.py"


def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"city": city, "forecast": {"Paris": "sunny", "Tokyo": "rainy, 18 degrees"}[city]}


def agent() -> Agent:
    model = ScriptedModel(
        [
            FunctionCall(name="get_weather", args={"city": "Paris"}),
            "It is sunny in Paris. Enjoy!",
            "You're welcome.",
            ModelResponse(
                content=Content(
                    role="model",
                    parts=[
                        Part(text="Let me check."),
                        Part(
                            function_call=FunctionCall(name="get_weather", args={"city": "Tokyo"})
                        ),
                    ],
                )
            ),
            "Tokyo is rainy, 18 degrees. Bring an umbrella.",
        ]
    )
    return Agent(
        name="weather", model=model, instruction="Answer weather questions.", tools=[get_weather]
    )


def text(role: str, value: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": value}]}


def rubric(rid: str, prop: str, kind: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"rubric_id": rid, "rubric_content": {"text_property": prop}}
    return found | ({"type": kind} if kind else {})


EVAL_SET = {
    "eval_set_id": "judged",
    "eval_cases": [
        {
            "eval_id": "paris",
            "rubrics": [
                rubric("q_polite", "The response is polite.", "FINAL_RESPONSE_QUALITY"),
                rubric("t_city", "The city argument matches the user's city.", "TOOL_USE_QUALITY"),
            ],
            "conversation": [
                {
                    "invocation_id": "p1",
                    "user_content": text("user", "Weather in Paris?"),
                    "final_response": text("model", "Sunny in Paris."),
                },
                {
                    "invocation_id": "p2",
                    "user_content": text("user", "Thanks!"),
                    "final_response": text("model", "You are welcome."),
                },
            ],
        },
        {
            "eval_id": "tokyo",
            "rubrics": [rubric("q_polite", "The response is polite.", "FINAL_RESPONSE_QUALITY")],
            "conversation": [
                {
                    "invocation_id": "t1",
                    "user_content": text("user", "Weather in Tokyo?"),
                    "final_response": text("model", "Rainy in Tokyo, 18 degrees."),
                    # An invocation's own rubrics sit in a one-invocation case: ADK 2.13 reads
                    # every invocation's verdicts against the rubrics of the case's last one
                    # (it formats all prompts before parsing any answer); rondo does not.
                    "rubrics": [
                        rubric("q_city", "The response names the city.", "FINAL_RESPONSE_QUALITY")
                    ],
                }
            ],
        },
    ],
}

CRITERIA = {
    "final_response_match_v2": {
        "threshold": 0.5,
        "judge_model_options": {"judge_model": "crosscheck-frm", "num_samples": 3},
    },
    "rubric_based_final_response_quality_v1": {
        "threshold": 0.7,
        "judge_model_options": {"judge_model": "crosscheck-rfq", "num_samples": 2},
        "rubrics": [rubric("q_concise", "The response is concise.")],
    },
    "rubric_based_tool_use_quality_v1": {
        "threshold": 0.5,
        "judgeModelOptions": {"judgeModel": "crosscheck-rtu", "numSamples": 1},
        "rubrics": [rubric("t_called", "get_weather is called.")],
    },
    "hallucinations_v1": {
        "threshold": 0.7,
        "judge_model_options": {"judge_model": "crosscheck-hal"},
        "evaluate_intermediate_nl_responses": True,
    },
}


def verdict(rid: str | None, prop: str, says: str) -> str:
    head = f"ID: {rid}\n" if rid else ""
    return f"{head}Property: {prop}\nRationale: because.\nVerdict: {says}\n"


CONCISE, POLITE, CITY = (
    "The response is concise.",
    "The response is polite.",
    "The response names the city.",
)


def labelled(*rows: tuple[str, str]) -> str:
    return "\n".join(
        f"sentence: {s}\nlabel: {label}\nrationale: r\nsupporting_excerpt: null\n"
        "contradicting_excerpt: null"
        for s, label in rows
    )


ANSWERS: dict[str, list[str]] = {
    "crosscheck-frm": [
        # paris 1: two valid (one bracketed) against one invalid -> valid
        '{"reasoning": "same facts", "is_the_agent_response_valid": "valid"}',
        '{"reasoning": "ok",\n "is_the_agent_response_valid": ["valid"]\n}',
        '{"reasoning": "no", "is_the_agent_response_valid": "invalid"}',
        # paris 2: valid (named the other way round), unlabelled, "almost" -> a tie: invalid
        '{"reasoning": "x", "is_the_agent_response_invalid": "false"}',
        "I think it is fine.",
        '{"reasoning": "close", "is_the_agent_response_valid": "almost"}',
        # tokyo: a failed sample -> not evaluated
        "!error",
        '{"is_the_agent_response_valid": "valid"}',
        '{"is_the_agent_response_valid": "valid"}',
    ],
    "crosscheck-rfq": [
        # paris 1 (concise, polite): polite ties 1-1 -> no; a rubric the judge made up is dropped
        verdict("q_concise", CONCISE, "yes")
        + verdict("q_polite", POLITE, "no")
        + verdict("q_made_up", "The response rhymes.", "yes"),
        verdict("q_concise", CONCISE, "Yes.") + verdict("q_polite", POLITE, "yes"),
        # paris 2 (concise, polite): an unreadable answer, then rubrics matched by their text
        "ID: q_concise\nProperty: The response is concise.\nVerdict: yes\n",
        verdict(None, "**The response is concise.**", "yes") + verdict(None, POLITE, "No"),
        # tokyo (concise, polite, city)
        verdict("q_concise", CONCISE, "no")
        + verdict("q_polite", POLITE, "yes")
        + verdict("q_city", CITY, "yes"),
        verdict("q_concise", CONCISE, "no") + verdict("q_polite", POLITE, "yes"),
    ],
    "crosscheck-rtu": [
        verdict("t_called", "get_weather is called.", "yes")
        + verdict("t_city", "The city argument matches the user's city.", "yes"),
        verdict("t_called", "get_weather is called.", "no")
        + verdict("t_city", "The city argument matches the user's city.", "not applicable"),
        verdict("t_called", "get_weather is called.", "yes"),
    ],
    "crosscheck-hal": [
        # paris 1: the answer
        "<sentence>It is sunny in Paris.</sentence><sentence>Enjoy!</sentence>",
        labelled(("It is sunny in Paris.", "supported"), ("Enjoy!", "not_applicable")),
        # paris 2: the segmenter finds no sentence -> not scored
        "There is nothing to split.",
        # tokyo: the text said before the tool call, then the answer
        "<sentence>Let me check.</sentence>",
        labelled(("Let me check.", "not_applicable")),
        "<sentence>Tokyo is rainy, 18 degrees.</sentence>\n<sentence>Bring an umbrella.</sentence>",
        labelled(
            ("Tokyo is rainy, 18 degrees.", "supported"), ("Bring an umbrella.", "contradictory")
        ),
    ],
}


def judges() -> dict[str, ScriptedModel]:
    return {
        name: ScriptedModel(
            [ModelError("the judge failed") if a == "!error" else a for a in answers], name=name
        )
        for name, answers in ANSWERS.items()
    }


async def rondo_run(models: dict[str, ScriptedModel]) -> EvalReport:
    def judge(name: str) -> Model:
        return models[name]

    config = parse_eval_config({"criteria": CRITERIA})
    return await run_eval(agent(), parse_eval_set(EVAL_SET), config, judge=judge)


def adk_run(report: EvalReport, tmp_path: Path) -> dict[str, Any]:
    python = adk_python()
    require(python, what="ADK", reason="google-adk not found (set RONDO_ADK_PYTHON)")
    assert python is not None
    cases = [
        {
            "eval_case": case,
            "actual": [
                invocation_json(inv.actual, wanted["invocation_id"])
                for inv, wanted in zip(result.invocations, case["conversation"], strict=True)
            ],
        }
        for case, result in zip(EVAL_SET["eval_cases"], report.cases, strict=True)
    ]
    data = tmp_path / "crosscheck.json"
    data.write_text(json.dumps({"criteria": CRITERIA, "cases": cases, "answers": ANSWERS}))
    done = subprocess.run(
        [python, str(CROSSCHECK), str(data)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def rondo_scores(report: EvalReport, calls: dict[tuple[str, str], int]) -> dict[str, Any]:
    return {
        case.eval_id: {
            m.metric: {
                "score": m.score,
                "status": m.status.upper(),
                "per_invocation": list(m.per_invocation),
                "rubric_scores": [
                    [[s.rubric_id, s.score] for s in scores or ()] for scores in m.rubric_scores
                ]
                or [[] for _ in m.per_invocation],
                "calls": calls[case.eval_id, m.metric],
            }
            for m in case.metrics
        }
        for case in report.cases
    }


def calls_per_case(report: EvalReport) -> dict[tuple[str, str], int]:
    # Every judge call of a metric, split by case: cases run one after the other, in order.
    per_case_calls = {
        "final_response_match_v2": [6, 3],
        "rubric_based_final_response_quality_v1": [4, 2],
        "rubric_based_tool_use_quality_v1": [2, 1],
        "hallucinations_v1": [3, 4],
    }
    return {
        (case.eval_id, metric): counts[index]
        for index, case in enumerate(report.cases)
        for metric, counts in per_case_calls.items()
    }


def rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in cast(dict[str, Any], value).items()}
    if isinstance(value, list):
        return [rounded(v) for v in cast(list[Any], value)]
    return value


async def test_o5_judged_scores_equal_adks_on_the_same_judge_answers(tmp_path: Path) -> None:
    models = judges()
    report = await rondo_run(models)
    for name, model in models.items():  # every answer was asked for, none more
        assert len(model.requests) == len(ANSWERS[name]), name
    ours = rondo_scores(report, calls_per_case(report))
    adk = adk_run(report, tmp_path)
    assert rounded(ours) == rounded(adk)
    # The cases exercise every outcome: passed, failed, not evaluated, partial scores.
    statuses = {m["status"] for case in adk.values() for m in case.values()}
    assert statuses == {"PASSED", "FAILED", "NOT_EVALUATED"}
    assert adk["paris"]["rubric_based_final_response_quality_v1"]["score"] == pytest.approx(2 / 4)


async def test_o5_judged_scores_decide_the_case() -> None:
    report = await rondo_run(judges())
    paris, tokyo = report.cases
    assert {m.metric: m.status for m in paris.metrics} == {
        "final_response_match_v2": "passed",
        "rubric_based_final_response_quality_v1": "failed",
        "rubric_based_tool_use_quality_v1": "passed",
        "hallucinations_v1": "passed",
    }
    assert not paris.passed
    assert "rubric_based_final_response_quality_v1" in "\n".join(paris.explain())
    # tokyo's final_response_match_v2 is not evaluated: it abstains, the others decide.
    assert tokyo.metrics[0].status == "not_evaluated"
    assert tokyo.passed is False  # its final-response rubrics score 2/3 < 0.7
