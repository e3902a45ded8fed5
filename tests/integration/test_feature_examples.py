"""Issue 23 item 2: every example in examples/README.md runs, offline, with the command the
README gives (through the CLI, in-process), and does what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rondo import Agent
from rondo.apps import load_agent
from rondo.cli import app
from rondo.cli.decisions import EXIT_WAITING
from tests._require import require_module

EXAMPLES = Path(__file__).parents[2] / "examples"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # .rondo/ (sessions, artifacts) goes to a scratch directory; the examples run offline.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RONDO_MODEL", raising=False)


def rondo(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _pause(text: str) -> str:
    code, out, err = rondo("run", str(EXAMPLES / "guarded"), text, "--session", "g1")
    assert code == EXIT_WAITING, out + err
    assert "⏸ waiting for: delete_file" in out
    found = re.search(r"call id (\S+)", err)
    assert found is not None, err
    return found[1]


def test_h3_the_guarded_example_approve_reject_skip() -> None:
    guarded = str(EXAMPLES / "guarded")
    call = _pause("delete report.txt")
    code, out, err = rondo("run", guarded, "--session", "g1", "--approve", call)
    assert code == 0, err
    assert "Deleted report.txt. Left: notes.md, budget.xlsx." in out
    call = _pause("delete notes.md")
    code, out, err = rondo(
        "run", guarded, "--session", "g1", "--reject", call, "--comment", "keep it"
    )
    assert code == 0, err
    assert "I did not delete it" in out
    assert "Comment: keep it" in out
    call = _pause("delete budget.xlsx")
    code, out, err = rondo(
        "run", guarded, "--session", "g1", "--skip", call, "--comment", "moved by hand"
    )
    assert code == 0, err
    assert "Skipped; recorded instead: moved by hand" in out
    # Only the approved deletion happened.
    code, out, _ = rondo("run", guarded, "what is there?", "--session", "g1")
    assert code == 0
    assert "The workspace has: notes.md, budget.xlsx." in out


def test_e3_the_notes_example_keeps_state_and_artifact_versions(tmp_path: Path) -> None:
    notes = str(EXAMPLES / "notes")
    first = rondo("run", notes, "note shopping: milk, eggs", "--session", "n1")
    second = rondo("run", notes, "note shopping: milk, eggs, bread", "--session", "n1")
    assert first[0] == second[0] == 0, first[2] + second[2]
    assert "version 0); notes saved in this session: 1." in first[1]
    assert "version 1); notes saved in this session: 2." in second[1]
    code, out, err = rondo("run", notes, "read shopping", "--session", "n1")
    assert code == 0, err
    assert "shopping: milk, eggs, bread" in out
    # The artifact's two versions are files beside the sessions, where the server looks.
    stored = list((tmp_path / ".rondo" / "artifacts").rglob("*"))
    assert len([p for p in stored if p.is_file()]) >= 2


def test_a1_the_team_example_hands_over_through_state() -> None:
    code, out, err = rondo("run", str(EXAMPLES / "team"), "Tell me about Paris", "--db", "memory")
    assert code == 0, err
    assert '→ look_up(topic="Paris")' in out
    assert "researcher ›" in out
    assert "writer ›" in out
    assert "Here is what I found: Paris is the capital of France" in out


def test_s1_the_structured_example_answers_with_a_valid_forecast() -> None:
    code, out, err = rondo(
        "run", str(EXAMPLES / "structured"), "Forecast for Tokyo", "--db", "memory"
    )
    assert code == 0, err
    assert '{"city": "Tokyo", "temperature_c": 22, "condition": "cloudy", "umbrella": false}' in out


def test_s1_the_structured_example_output_is_the_validated_object() -> None:
    agent = load_agent(str(EXAMPLES / "structured"))
    assert isinstance(agent, Agent)
    schema = agent.output_schema
    assert isinstance(schema, type)
    result = agent.run_sync("Forecast for London")
    assert isinstance(result.output, schema)
    assert result.output.model_dump() == {
        "city": "London",
        "temperature_c": 14,
        "condition": "rainy",
        "umbrella": True,
    }


def test_w1_the_examples_are_the_apps_of_rondo_web_examples() -> None:
    require_module("fastapi", what="SERVER", install="pip install -e '.[server]'")
    from fastapi.testclient import TestClient

    from rondo.server import create_app

    with TestClient(create_app(EXAMPLES, db="memory")) as client:
        assert client.get("/list-apps").json() == [
            "guarded",
            "notes",
            "structured",
            "team",
            "weather",
        ]
        client.post("/apps/guarded/users/user/sessions/s")
        run = client.post(
            "/run_lifecycle",
            json={
                "appName": "guarded",
                "userId": "user",
                "sessionId": "s",
                "newMessage": {"role": "user", "parts": [{"text": "delete notes.md"}]},
            },
        )
        assert run.status_code == 200
        [call] = client.get("/apps/guarded/users/user/sessions/s/pending").json()
        assert call["originalCall"] == {
            "id": call["originalCallId"],
            "args": {"path": "notes.md"},
            "name": "delete_file",
        }
