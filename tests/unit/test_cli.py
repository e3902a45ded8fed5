"""`rondo run`: loading agents, rendering the lifecycle stream, JSON lines, errors, sessions."""

from __future__ import annotations

import importlib
import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rondo import __version__
from rondo.cli import app
from rondo.lifecycle import parse_lifecycle_event
from rondo.models import register_provider
from rondo.testing import ScriptedModel

runner = CliRunner()
# `rondo.cli.app` the attribute is the Typer app; the module is reached through importlib.
app_module = importlib.import_module("rondo.cli.app")

WEATHER_AGENT = """
from rondo import Agent, FunctionCall
from rondo.testing import ScriptedModel

def get_weather(city: str) -> dict:
    \"\"\"Returns the weather for a city.\"\"\"
    return {"report": f"It is 18°C and sunny in {city}."}

def answer(request):
    result = request.contents[-1].parts[0].function_response.response
    return result["report"]

root_agent = Agent(
    name="weather_agent",
    model=ScriptedModel([FunctionCall(name="get_weather", args={"city": "Paris"}), answer] * 5),
    instruction="Answer weather questions.",
    tools=[get_weather],
)
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def agent_file(tmp_path: Path) -> Path:
    return write(tmp_path / "weather.py", WEATHER_AGENT)


def run(*args: str, input: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, ["run", *args], input=input)
    return result.exit_code, result.stdout, result.stderr


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"rondo {__version__}"


def test_one_message_shows_tool_call_result_answer_and_usage(agent_file: Path) -> None:
    code, out, err = run(str(agent_file), "What's the weather in Paris?", "--db", "memory")
    assert code == 0, err
    assert '→ get_weather(city="Paris")' in out
    assert '← get_weather {"report": "It is 18°C and sunny in Paris."}' in out
    assert "It is 18°C and sunny in Paris." in out.splitlines()[-2]
    assert "2 model calls · 1 tool call" in out.splitlines()[-1]
    assert "Traceback" not in out + err


def test_jsonl_prints_only_lifecycle_events(agent_file: Path) -> None:
    code, out, err = run(str(agent_file), "weather?", "--jsonl", "--db", "memory")
    assert code == 0, err
    events = [parse_lifecycle_event(json.loads(line)) for line in out.splitlines()]
    types = [e.type for e in events]
    assert types[0] == "run_start"
    assert types[-1] == "run_end"
    assert "tool_call_end" in types
    end = next(e for e in events if e.type == "tool_call_end")
    assert end.tool_name == "get_weather"
    assert end.error is None
    assert events[-1].text == "It is 18°C and sunny in Paris."


def test_streamed_text_and_thinking(tmp_path: Path) -> None:
    agent = write(
        tmp_path / "stream.py",
        """
        from rondo import Agent, Content, Part
        from rondo.models import ModelResponse
        from rondo.testing import ScriptedModel

        def chunk(text, thought=False):
            part = Part(text=text, thought=thought)
            return ModelResponse(content=Content(role="model", parts=[part]), partial=True)

        root_agent = Agent(
            name="streamer",
            model=ScriptedModel([[chunk("pondering", True), chunk("Hel"), chunk("lo!")]]),
        )
        """,
    )
    code, out, err = run(str(agent), "hi", "--db", "memory")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "pondering"
    assert lines[1] == "Hello!"


def test_a_model_that_does_not_stream_still_shows_its_text(tmp_path: Path) -> None:
    agent = write(
        tmp_path / "plain.py",
        """
        from rondo import Agent
        from rondo.models import ModelResponse
        from rondo.testing import ScriptedModel

        class Plain(ScriptedModel):
            async def generate(self, request, *, stream=False):
                async for response in super().generate(request, stream=False):
                    yield response

        root_agent = Agent(name="plain", model=Plain(["Just text."]))
        """,
    )
    code, out, err = run(str(agent), "hi", "--db", "memory")
    assert code == 0, err
    assert out.splitlines()[0] == "Just text."


def test_tool_error_is_shown(tmp_path: Path) -> None:
    agent = write(
        tmp_path / "broken.py",
        """
        from rondo import Agent, FunctionCall
        from rondo.testing import ScriptedModel

        def explode() -> dict:
            \"\"\"Fails.\"\"\"
            raise RuntimeError("boom")

        root_agent = Agent(
            name="broken",
            model=ScriptedModel([FunctionCall(name="explode"), "It failed."]),
            tools=[explode],
        )
        """,
    )
    code, out, err = run(str(agent), "go", "--db", "memory")
    assert code == 0, err
    assert "✗ explode: " in out
    assert "boom" in out


def test_message_from_stdin(agent_file: Path) -> None:
    code, out, _ = run(str(agent_file), "--db", "memory", input="What's the weather?\n")
    assert code == 0
    assert "It is 18°C" in out


def test_no_message_and_no_terminal_is_an_error(agent_file: Path) -> None:
    code, _, err = run(str(agent_file), "--db", "memory", input="")
    assert code == 1
    assert err.startswith("error: no message")


def test_interactive_chat(agent_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_module, "_stdin_is_tty", lambda: True)
    code, out, err = run(str(agent_file), "--db", "memory", input="weather?\n\nweather?\nexit\n")
    assert code == 0, err
    assert out.count("← get_weather") == 2
    assert "chatting with weather_agent" in out


def test_directory_package_with_relative_import(tmp_path: Path) -> None:
    app_dir = tmp_path / "myapp"
    write(app_dir / "__init__.py", "")
    write(app_dir / "texts.py", "ANSWER = 'from a sibling module'\n")
    write(
        app_dir / "agent.py",
        """
        from rondo import Agent
        from rondo.testing import ScriptedModel
        from .texts import ANSWER

        root_agent = Agent(name="pkg_agent", model=ScriptedModel([ANSWER]))
        """,
    )
    code, out, err = run(str(app_dir), "hi", "--db", "memory")
    assert code == 0, err
    assert "from a sibling module" in out


def test_directory_without_package(tmp_path: Path) -> None:
    write(
        tmp_path / "plain_dir" / "agent.py",
        """
        from rondo import Agent
        from rondo.testing import ScriptedModel

        root_agent = Agent(name="dir_agent", model=ScriptedModel(["from a directory"]))
        """,
    )
    code, out, err = run(str(tmp_path / "plain_dir"), "hi", "--db", "memory")
    assert code == 0, err
    assert "from a directory" in out


def test_module_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(
        tmp_path / "cli_test_module_agent.py",
        """
        from rondo import Agent
        from rondo.testing import ScriptedModel

        root_agent = Agent(name="module_agent", model=ScriptedModel(["from a module"]))
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = run("cli_test_module_agent", "hi", "--db", "memory")
    assert code == 0, err
    assert "from a module" in out


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("missing.py", "error: no such file: missing.py"),
        ("no/such/dir", "error: no such file or directory: no/such/dir"),
        ("no_such_module_xyz", "error: no agent at 'no_such_module_xyz'"),
    ],
)
def test_missing_agent_is_a_one_line_error(target: str, message: str) -> None:
    code, out, err = run(target, "hi")
    assert code == 1
    assert out == ""
    assert err.startswith(message)
    assert len(err.strip().splitlines()) == 1


def test_agent_that_fails_to_load(tmp_path: Path) -> None:
    agent = write(tmp_path / "bad.py", "raise ValueError('no API key here')\n")
    code, _, err = run(str(agent), "hi")
    assert code == 1
    assert err.strip() == f"error: cannot load the agent from {agent}: ValueError: no API key here"


def test_file_without_root_agent(tmp_path: Path) -> None:
    agent = write(tmp_path / "empty.py", "x = 1\n")
    code, _, err = run(str(agent), "hi")
    assert code == 1
    assert err.strip() == f"error: {agent} defines no `root_agent`"


def test_root_agent_that_is_not_an_agent(tmp_path: Path) -> None:
    agent = write(tmp_path / "notagent.py", "root_agent = 42\n")
    code, _, err = run(str(agent), "hi")
    assert code == 1
    assert "is a int, not an agent" in err


def test_run_that_raises_a_rondo_error(tmp_path: Path) -> None:
    agent = write(
        tmp_path / "short.py",
        """
        from rondo import Agent
        from rondo.testing import ScriptedModel

        root_agent = Agent(name="short", model=ScriptedModel([]))
        """,
    )
    code, _, err = run(str(agent), "hi", "--db", "memory")
    assert code == 1
    assert err.startswith("error: ScriptExhaustedError: ")
    assert "Traceback" not in err


def test_unknown_model_override_is_a_one_line_error(agent_file: Path) -> None:
    code, _, err = run(str(agent_file), "hi", "--model", "nope:model")
    assert code == 1
    assert err.startswith("error: ModelNotFoundError: unknown model provider 'nope'")


def test_model_override_reaches_root_and_inheriting_sub_agents(tmp_path: Path) -> None:
    override = ScriptedModel(["overridden"] * 3, name="override")
    register_provider("clitest", lambda name: override)
    agent = write(
        tmp_path / "tree.py",
        """
        from rondo import Agent, SequentialAgent
        from rondo.testing import ScriptedModel

        own = Agent(name="own", model=ScriptedModel(["own model"]), sub_agents=[Agent(name="heir")])
        root_agent = SequentialAgent(name="flow", sub_agents=[Agent(name="first"), own])
        """,
    )
    code, out, err = run(str(agent), "hi", "--db", "memory", "--model", "clitest:any")
    assert code == 0, err
    assert "overridden" in out
    assert "own model" in out
    assert override.calls == 1


def test_sessions_persist_in_sqlite(tmp_path: Path) -> None:
    agent = write(
        tmp_path / "counter.py",
        """
        from rondo import Agent
        from rondo.testing import ScriptedModel

        def count(request):
            return f"I have seen {len(request.contents)} messages."

        root_agent = Agent(name="counter", model=ScriptedModel([count] * 5))
        """,
    )
    db = tmp_path / "store" / "sessions.db"
    first = run(str(agent), "one", "--db", str(db), "--session", "s1")
    second = run(str(agent), "two", "--db", str(db), "--session", "s1")
    assert first[0] == second[0] == 0, first[2] + second[2]
    assert "I have seen 1 messages." in first[1]
    assert "I have seen 3 messages." in second[1]
    assert "--session s1 continues it" in second[1]
    assert db.is_file()


BANK_AGENT = """
from rondo import Agent, FunctionCall, FunctionTool
from rondo.testing import ScriptedModel

def pay(amount: int) -> dict:
    \"\"\"Pays an amount.\"\"\"
    return {"paid": amount}

def answer(request):
    result = request.contents[-1].parts[0].function_response.response
    return f"done: {result}"

root_agent = Agent(
    name="bank",
    model=ScriptedModel([FunctionCall(name="pay", args={"amount": 7}), answer] * 3),
    tools=[FunctionTool(pay, require_confirmation=True)],
)
"""


@pytest.mark.parametrize(
    ("typed", "shown"),
    [
        ("a\n", "done: {'paid': 7}"),
        ("r\ntoo much\n", "rejected by the user. Comment: too much"),
        ("s\nby hand\n", "done: {'result': 'by hand'}"),
    ],
)
def test_h3_a_paused_call_is_decided_in_the_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed: str, shown: str
) -> None:
    monkeypatch.setattr(app_module, "_stdin_is_tty", lambda: True)
    agent = write(tmp_path / "bank.py", BANK_AGENT)
    code, out, err = run(str(agent), "pay 7", "--db", "memory", input=typed)
    assert code == 0, err
    # The paused call is not shown as a call that ran and ended.
    before = out.split("approve, reject or skip?")[0]
    assert "⏸ waiting for: pay(amount=7)" in before
    assert "← pay" not in before
    assert shown in out


def test_h3_a_pause_without_a_terminal_leaves_the_call_waiting(tmp_path: Path) -> None:
    agent = write(tmp_path / "bank.py", BANK_AGENT)
    code, out, err = run(str(agent), "pay 7", "--db", "memory")
    assert code == 3, err
    assert "pay(amount=7)" in err
    assert "--db memory keeps nothing" in err
    assert "⏸ waiting for: pay(amount=7)" in out
    assert "← pay" not in out
