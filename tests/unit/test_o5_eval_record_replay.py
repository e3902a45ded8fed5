"""Issue 24 item 3: `rondo eval --record` puts the agent's and the judges' exchanges in one
cassette; `--replay` reruns the whole eval offline with the same scores; `--junit` and
`--json` write the results for CI."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest
import typer
from typer.testing import CliRunner

from rondo import FunctionCall
from rondo.errors import ModelNotFoundError
from rondo.models import ModelRequest, register_provider
from rondo.testing import ScriptedModel

runner = CliRunner()

AGENT = """\
from rondo import Agent


def get_weather(city: str) -> dict:
    \"\"\"Returns the weather for a city.\"\"\"
    return {"report": f"It is sunny in {city}."}


root_agent = Agent(
    name="weather_agent",
    model="evrec:agent-model",
    instruction="Answer weather questions.",
    tools=[get_weather],
)
"""

EVAL_SET = {
    "eval_set_id": "recorded",
    "eval_cases": [
        {
            "eval_id": city.lower(),
            "conversation": [
                {
                    "user_content": {"parts": [{"text": f"Weather in {city}?"}]},
                    "final_response": {"parts": [{"text": f"Sunny in {city}."}]},
                }
            ],
        }
        for city in ("Paris", "Rome")
    ],
}

CONFIG = {
    "criteria": {
        "final_response_match_v2": {
            "threshold": 0.5,
            "judge_model_options": {"judge_model": "evrec:judge", "num_samples": 3},
        },
        "rubric_based_final_response_quality_v1": {
            "threshold": 1.0,
            "judge_model_options": {"judge_model": "evrec:judge", "num_samples": 1},
            "rubrics": [
                {"rubric_id": "short", "rubric_content": {"text_property": "It is short."}}
            ],
        },
    }
}


def judge_answer(request: ModelRequest) -> str:
    prompt = request.contents[0].text
    if "rubrics" in prompt.lower():
        return "ID: short\nProperty: It is short.\nRationale: r\nVerdict: yes\n"
    # Paris is judged valid twice of three times, Rome once: Rome fails on the majority.
    judge_answer.calls += 1  # type: ignore[attr-defined]
    valid = "Paris" in prompt or judge_answer.calls % 3 == 0  # type: ignore[attr-defined]
    return (
        f'{{"reasoning": "r", "is_the_agent_response_valid": "{"valid" if valid else "invalid"}"}}'
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "agent": tmp_path / "agent.py",
        "evalset": tmp_path / "w.evalset.json",
        "config": tmp_path / "cfg.json",
    }
    paths["agent"].write_text(AGENT, encoding="utf-8")
    paths["evalset"].write_text(json.dumps(EVAL_SET), encoding="utf-8")
    paths["config"].write_text(json.dumps(CONFIG), encoding="utf-8")
    return paths


def live(name: str) -> ScriptedModel:
    if name == "judge":
        judge_answer.calls = 0  # type: ignore[attr-defined]
        return ScriptedModel([judge_answer] * 20, name=name)

    def reply(request: ModelRequest) -> object:
        asked = request.contents[0].text
        city = "Paris" if "Paris" in asked else "Rome"
        if request.contents[-1].role == "user" and len(request.contents) == 1:
            return FunctionCall(name="get_weather", args={"city": city})
        return f"Sunny in {city}." if city == "Paris" else "It rains in Rome."

    return ScriptedModel([reply] * 10, name=name)


def offline(name: str) -> ScriptedModel:
    raise ModelNotFoundError(f"{name}: no network in a replay")


def evaluate(files: dict[str, Path], *extra: str) -> tuple[int, str, str]:
    result = runner.invoke(
        app_cli(),
        [
            "eval",
            str(files["agent"]),
            str(files["evalset"]),
            "--config",
            str(files["config"]),
            *extra,
        ],
    )
    return result.exit_code, result.stdout, result.stderr


def app_cli() -> typer.Typer:
    from rondo.cli import app

    return app


def test_o4_eval_records_agent_and_judges_then_replays_offline(
    files: dict[str, Path], tmp_path: Path
) -> None:
    cassette, junit, report = tmp_path / "eval.jsonl", tmp_path / "j.xml", tmp_path / "r.json"
    register_provider("evrec", live)
    code, out, err = evaluate(
        files, "--record", str(cassette), "--junit", str(junit), "--json", str(report)
    )
    assert code == 1, err  # rome fails final_response_match_v2
    lines = [json.loads(x) for x in cassette.read_text().splitlines()[1:]]
    # Per case: two agent calls, three verdict samples, one rubric sample.
    assert [x["model"] for x in lines].count("judge") == 8
    assert [x["model"] for x in lines].count("agent-model") == 4
    recorded = json.loads(report.read_text())

    register_provider("evrec", offline)  # a replay must not reach the "live" models
    again = tmp_path / "again.json"
    code2, out2, err2 = evaluate(files, "--replay", str(cassette), "--json", str(again))
    assert code2 == 1, err2
    assert json.loads(again.read_text()) == recorded
    assert out2 == out

    by_case = {c["eval_id"]: c for c in recorded["cases"]}
    assert by_case["paris"]["passed"]
    assert not by_case["rome"]["passed"]
    assert by_case["rome"]["metrics"][0]["per_invocation"] == [0.0]
    assert by_case["paris"]["metrics"][1]["rubric_scores"] == [
        [{"rubric_id": "short", "score": 1.0, "rationale": "r"}]
    ]
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")
    failure = suite.find("testcase[@name='rome']/failure")
    assert failure is not None
    assert failure.get("message") == "failed: final_response_match_v2"
    assert "It rains in Rome." in (failure.text or "")


def test_o4_a_replay_whose_judge_prompt_changed_is_a_mismatch(
    files: dict[str, Path], tmp_path: Path
) -> None:
    cassette = tmp_path / "eval.jsonl"
    register_provider("evrec", live)
    evaluate(files, "--record", str(cassette))
    changed = json.loads(files["config"].read_text())
    changed["criteria"]["rubric_based_final_response_quality_v1"]["rubrics"][0]["rubric_content"][
        "text_property"
    ] = "It is long."
    files["config"].write_text(json.dumps(changed))
    register_provider("evrec", offline)
    code, out, _ = evaluate(files, "--replay", str(cassette))
    # The judge's call differs from the recording: the case fails, saying where.
    assert code == 1
    assert "CassetteMismatchError" in out
    assert "It is long." in out
