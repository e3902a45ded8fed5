"""Issue 23 item 3: `rondo run` without a terminal, and the app name it stores sessions under.

A run that pauses (SPEC H3) with no terminal to ask in prints the waiting call and the
commands that answer it, and exits with status 3; `--approve` / `--reject --comment` /
`--skip` on `--session` resume it. The CLI names an app as the server does (a folder's name),
so a session started in one continues in the other.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rondo.apps import app_name_for
from rondo.cli import app
from rondo.cli.decisions import EXIT_WAITING
from tests._require import require_module

runner = CliRunner()

BANK = """
from rondo import Agent, FunctionCall, FunctionTool
from rondo.testing import ScriptedModel

def pay(amount: int) -> dict:
    \"\"\"Pays an amount.\"\"\"
    return {"paid": amount}

def step(request):
    last = request.contents[-1].parts[0]
    if last.function_response is None:
        return FunctionCall(name="pay", args={"amount": 7})
    return f"done: {last.function_response.response}"

root_agent = Agent(
    name="bank_agent",
    model=ScriptedModel([step] * 6),
    tools=[FunctionTool(pay, require_confirmation=True)],
)
"""


@pytest.fixture
def bank(tmp_path: Path) -> Path:
    folder = tmp_path / "apps" / "bank"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(textwrap.dedent(BANK), encoding="utf-8")
    return folder


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["run", *args])
    return result.exit_code, result.stdout, result.stderr


def _pause(bank: Path, db: Path) -> str:
    code, out, err = run(str(bank), "pay 7", "--db", str(db), "--session", "s1")
    assert code == EXIT_WAITING == 3, err
    assert "⏸ waiting for: pay(amount=7)" in out
    found = re.search(r"call id (\S+)", err)
    assert found is not None, err
    call_id = found.group(1)
    # The commands that answer it, ready to paste.
    assert f"rondo run {bank} --session s1 --db {db} --approve {call_id}" in err
    assert f"--reject {call_id} [--comment TEXT]" in err
    assert f"--skip {call_id} [--comment TEXT]" in err
    return call_id


@pytest.mark.parametrize(
    ("flags", "shown"),
    [
        (["--approve"], "done: {'paid': 7}"),
        (["--comment", "too much", "--reject"], "rejected by the user. Comment: too much"),
        (["--comment", "by hand", "--skip"], "done: {'result': 'by hand'}"),
    ],
)
def test_h3_without_a_terminal_a_pause_exits_3_and_a_flag_answers_it(
    bank: Path, tmp_path: Path, flags: list[str], shown: str
) -> None:
    db = tmp_path / "sessions.db"
    call_id = _pause(bank, db)
    code, out, err = run(str(bank), "--session", "s1", "--db", str(db), *flags, call_id)
    assert code == 0, err
    assert shown in out
    # Answered: nothing waits any more, so the same flag now names no waiting call.
    again = run(str(bank), "--session", "s1", "--db", str(db), "--approve", call_id)
    assert again[0] == 1
    assert "no waiting call" in again[2]


def test_h3_decision_flags_are_checked(bank: Path, tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    call_id = _pause(bank, db)
    no_session = run(str(bank), "--db", str(db), "--approve", call_id)
    assert no_session[0] == 1
    assert "need --session" in no_session[2]
    twice = run(str(bank), "--session", "s1", "--db", str(db), "--approve", "x", "--skip", "x")
    assert "two decisions" in twice[2]
    unknown = run(str(bank), "--session", "s1", "--db", str(db), "--approve", "nope")
    assert unknown[0] == 1
    assert f"waiting: {call_id}" in unknown[2]


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("examples/weather", "weather"),
        ("examples/weather/agent.py", "weather"),
        ("examples/weather_walkthrough.py", "weather_walkthrough"),
        ("examples.weather.agent", "weather"),
        ("mypkg", "mypkg"),
    ],
)
def test_w1_the_cli_names_an_app_as_the_server_does(
    path: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).parents[2])  # the paths are the repository's
    assert app_name_for(path) == name


def test_w1_a_session_started_in_the_cli_continues_in_the_server(
    bank: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_module("fastapi", what="SERVER", install="pip install -e '.[server]'")
    from fastapi.testclient import TestClient

    from rondo.server import create_app

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "sessions.db"
    call_id = _pause(bank, db)
    with TestClient(create_app(bank.parent, db=str(db))) as client:
        # Stored under the folder's name, not the agent's (bank_agent), for the same user.
        [pending] = client.get("/apps/bank/users/user/sessions/s1/pending").json()
        assert pending["callId"] == call_id
        decided = client.post(
            f"/apps/bank/users/user/sessions/s1/pending/{call_id}", json={"decision": "approve"}
        )
        assert decided.status_code == 200
    # And back in the CLI: the server's answer is in the session, nothing waits.
    code, _, err = run(str(bank), "--session", "s1", "--db", str(db), "--approve", call_id)
    assert code == 1
    assert "no waiting call" in err
    assert "(waiting: none)" in err


def test_h3_decision_flags_are_listed_in_help() -> None:
    help_text = runner.invoke(app, ["run", "--help"]).stdout
    for flag in ("--approve", "--reject", "--skip", "--comment", "--result"):
        assert flag in help_text
