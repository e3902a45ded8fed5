"""Issue 24 item 3: `pytest --rondo-evalset PATH` turns each eval case into a test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

from rondo.testing import evaluate
from tests._require import require_module

require_module("rouge_score", what="EVAL", install="pip install 'rondo-agents[eval]'")

WEATHER = Path(__file__).parents[1] / "fixtures" / "eval" / "weather"


def pytest_run(tmp_path: Path, *args: str) -> tuple[int, str, ElementTree.Element]:
    junit = tmp_path / "out.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout + done.stderr, ElementTree.parse(junit).getroot()


def test_o5_each_case_is_a_test_with_rondo_evals_verdict(tmp_path: Path) -> None:
    evalset = WEATHER / "weather.evalset.json"
    code, output, junit = pytest_run(
        tmp_path, "--rondo-evalset", str(evalset), "--rondo-agent", str(WEATHER / "agent.py")
    )
    report = evaluate(WEATHER / "agent.py", evalset)
    outcomes = {case.get("name"): case.find("failure") is None for case in junit.iter("testcase")}
    assert outcomes == {case.eval_id: case.passed for case in report.cases}, output
    assert code == (0 if report.passed else 1)
    # A failing case shows rondo eval's explanation, not a traceback into the plugin.
    for case in report.failures:
        assert case.explain()[0] in output


def test_o5_a_directory_of_eval_sets_and_an_explicit_config(tmp_path: Path) -> None:
    sets = tmp_path / "evals"
    sets.mkdir()
    data = json.loads((WEATHER / "weather.evalset.json").read_text())
    data["eval_cases"] = data["eval_cases"][:2]
    (sets / "two.evalset.json").write_text(json.dumps(data))
    (sets / "ignored.json").write_text("{}")
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps({"criteria": {"response_match_score": 1.01}}))
    code, output, junit = pytest_run(
        tmp_path,
        "--rondo-evalset",
        str(sets),
        "--rondo-agent",
        str(WEATHER / "agent.py"),
        "--rondo-eval-config",
        str(strict),
    )
    names = [case.get("name") for case in junit.iter("testcase")]
    assert names == [c["eval_id"] for c in data["eval_cases"]], output
    assert all(case.find("failure") is not None for case in junit.iter("testcase"))
    assert code == 1


def test_o5_a_malformed_eval_set_is_a_collection_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.evalset.json"
    bad.write_text(json.dumps({"eval_set_id": "x", "eval_cases": []}))
    code, output, _ = pytest_run(tmp_path, "--rondo-evalset", str(bad))
    assert code == 2
    assert "the eval set has no cases" in output
