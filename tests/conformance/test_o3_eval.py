"""SPEC O3: `rondo eval` reads ADK eval sets, scores them as `adk eval` does, exits non-zero on
failure.

`tests/fixtures/eval/weather/adk_results.json` holds what google-adk 2.13.0 scored on the same
eval sets with an ADK agent driven by the same deterministic brain (`brain.py`); the
comparison recipe is in `tests/fixtures/eval/adk/README.md`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rondo.apps import load_agent
from rondo.cli import app
from rondo.errors import ModelNotFoundError
from rondo.evaluation import (
    EvalFailedError,
    EvalReport,
    config_beside,
    load_eval_config,
    load_eval_set,
    run_eval,
)
from rondo.models import Model
from rondo.testing import evaluate
from tests._require import require_module

require_module("rouge_score", what="EVAL", install="pip install 'rondo-agents[eval]'")

WEATHER = Path(__file__).parents[1] / "fixtures" / "eval" / "weather"
ADK = json.loads((WEATHER / "adk_results.json").read_text(encoding="utf-8"))
runner = CliRunner()


def adk_verdicts(cases: dict[str, Any]) -> dict[str, Any]:
    return {
        case_id: {
            "passed": case["status"] == "PASSED",
            "metrics": {
                name: (m["score"], m["per_invocation"], m["status"] == "PASSED")
                for name, m in case["metrics"].items()
                if m["status"] != "NOT_EVALUATED"
            },
            "not_evaluated": sorted(
                name for name, m in case["metrics"].items() if m["status"] == "NOT_EVALUATED"
            ),
        }
        for case_id, case in cases.items()
    }


def rondo_verdicts(report: EvalReport) -> dict[str, Any]:
    skipped = [name for name, _ in report.config.not_evaluated]
    return {
        case.eval_id: {
            "passed": case.passed,
            "metrics": {
                m.metric: (m.score, list(m.per_invocation), m.passed)
                for m in case.metrics
                if m.status != "not_evaluated"
            },
            "not_evaluated": sorted(
                skipped + [m.metric for m in case.metrics if m.status == "not_evaluated"]
            ),
        }
        for case in report.cases
    }


def no_judge(name: str) -> Model:
    # ADK's run had no judge model either: its LLM-judged metric was not evaluated.
    raise ModelNotFoundError(f"no judge model {name!r} in this comparison")


@pytest.mark.parametrize("run", ADK["runs"], ids=lambda r: f"{r['eval_set']}+{r['config']}")
async def test_o3_scores_equal_adk_eval_on_the_same_eval_sets(run: dict[str, Any]) -> None:
    session = run["initial_session"]
    eval_set = load_eval_set(
        WEATHER / run["eval_set"],
        initial_session=json.loads((WEATHER / session).read_text()) if session else None,
    )
    config = load_eval_config(WEATHER / run["config"])
    report = await run_eval(load_agent(str(WEATHER / "agent.py")), eval_set, config, judge=no_judge)
    expected = adk_verdicts(run["cases"])
    if run["tool"] == "AgentEvaluator":  # ADK names the one case after the file's full path
        expected = {report.cases[0].eval_id: next(iter(expected.values()))}
    assert rondo_verdicts(report) == expected


def test_o3_the_comparison_covers_passes_failures_and_partial_scores() -> None:
    scores = [
        m["score"]
        for run in ADK["runs"]
        for case in run["cases"].values()
        for m in case["metrics"].values()
        if m["score"] is not None
    ]
    statuses = {case["status"] for run in ADK["runs"] for case in run["cases"].values()}
    assert statuses == {"PASSED", "FAILED"}
    assert any(0 < s < 1 for s in scores)
    assert {r["tool"] for r in ADK["runs"]} == {"adk eval", "AgentEvaluator"}


def cli(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["eval", *args])
    return result.exit_code, result.stdout, result.stderr


def test_o3_exit_one_names_the_failing_cases() -> None:
    code, out, err = cli(str(WEATHER / "agent.py"), str(WEATHER / "weather.evalset.json"))
    assert code == 1, err
    assert out.strip().splitlines()[-1] == (
        "3 of 6 cases passed; failed: rome_wrong_city, compare_order, tokyo_cjk"
    )
    row = next(
        line for line in out.splitlines() if "rome_wrong_city" in line and "tool_traj" in line
    )
    assert [cell.strip() for cell in row.split("│")[1:6]] == [
        "rome_wrong_city",
        "tool_trajectory_avg_score",
        "0.0",
        "1.0",
        "FAIL",
    ]
    assert "[6/6] home_city_state passed" in err


def test_o3_exit_zero_when_every_case_passes(tmp_path: Path) -> None:
    eval_set = json.loads((WEATHER / "weather.evalset.json").read_text())
    eval_set["eval_cases"] = [c for c in eval_set["eval_cases"] if c["eval_id"] == "paris"]
    path = tmp_path / "paris.evalset.json"
    path.write_text(json.dumps(eval_set))
    code, out, err = cli(str(WEATHER / "agent.py"), str(path))
    assert code == 0, err
    assert out.strip().splitlines()[-1] == "1 of 1 case passed"


def test_o3_config_overrides_thresholds(tmp_path: Path) -> None:
    relaxed = json.loads((WEATHER / "relaxed_config.json").read_text())
    del relaxed["criteria"]["final_response_match_v2"]
    (tmp_path / "relaxed.json").write_text(json.dumps(relaxed))
    code, out, err = cli(
        str(WEATHER / "agent.py"),
        str(WEATHER / "weather.evalset.json"),
        "--config",
        str(tmp_path / "relaxed.json"),
    )
    assert code == 1, err
    assert out.strip().splitlines()[-1] == "5 of 6 cases passed; failed: rome_wrong_city"


def test_o3_a_judge_model_that_cannot_be_built_is_unusable_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    code, _, err = cli(
        str(WEATHER / "agent.py"),
        str(WEATHER / "weather.evalset.json"),
        "--config",
        str(WEATHER / "relaxed_config.json"),
        "--judge-model",
        "nobody-knows-7b",
    )
    assert code == 2
    assert "judge model of final_response_match_v2 'nobody-knows-7b'" in err
    assert "write it as 'provider:model'" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("agent.py", "missing.evalset.json"), "error: no such eval set file: "),
        (("agent.py", "weather.evalset.json", "--config", "nope.json"), "error: no such config"),
        (("nope.py", "weather.evalset.json"), "error: no such file: "),
    ],
)
def test_o3_exit_two_for_unusable_input(args: tuple[str, ...], message: str) -> None:
    code, out, err = cli(
        *(str(WEATHER / a) if a.endswith(".json") or a.endswith(".py") else a for a in args)
    )
    assert code == 2
    assert out == ""
    assert err.startswith(message)


def test_o3_runs_from_pytest() -> None:
    report = evaluate(WEATHER / "agent.py", WEATHER / "weather_legacy.json")
    assert report.config == config_beside(WEATHER / "weather_legacy.json")
    assert [c.eval_id for c in report.failures] == ["greeting_then_rome"]
    with pytest.raises(AssertionError) as caught:  # pytest shows a failed test, not an error
        report.assert_passed()
    assert isinstance(caught.value, EvalFailedError)
    message = str(caught.value)
    assert message.startswith("eval failed: 2 of 3 cases passed; failed: greeting_then_rome\n")
    assert "tool_trajectory_avg_score │ 0.5" in message
    assert '  actual tools:   get_weather({"city": "Roma"})' in message
