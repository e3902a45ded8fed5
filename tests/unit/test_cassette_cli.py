"""`rondo run --record FILE` then `--replay FILE`: the same run offline, with no SDK or key."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rondo.cli import app
from rondo.models import register_provider
from rondo.testing import ScriptedModel

runner = CliRunner()

AGENT = """\
from rondo import Agent


def get_weather(city: str) -> dict:
    \"\"\"Returns the weather for a city.\"\"\"
    return {{"report": f"It is 18°C and sunny in {{city}}."}}


root_agent = Agent(
    name="weather_agent",
    model={model!r},
    instruction="Answer weather questions.",
    tools=[get_weather],
    sub_agents=[{helper}],
)
"""


def agent_file(path: Path, model: str, *, sub_agent: bool = False) -> Path:
    helper = 'Agent(name="helper", model="clirec:helper-model")' if sub_agent else ""
    path.write_text(AGENT.format(model=model, helper=helper), encoding="utf-8")
    return path


def timeless(output: str) -> str:
    return re.sub(r"\(\d+ ms\)|\d+\.\d+ s", "<time>", output)


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["run", *args, "--db", "memory"])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def live_models() -> None:
    """`clirec:<name>` resolves to a scripted model: the "real" models of these tests."""

    def answer(request: object) -> str:
        return "It is 18°C and sunny in Paris."

    from rondo import FunctionCall

    register_provider(
        "clirec",
        lambda name: ScriptedModel(
            [FunctionCall(name="get_weather", args={"city": "Paris"}), answer] * 3, name=name
        ),
    )


@pytest.fixture
def no_openai_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the openai extra were not installed and no key were set."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setitem(sys.modules, "openai", None)
    monkeypatch.delitem(sys.modules, "rondo.models.openai", raising=False)


@pytest.mark.usefixtures("live_models", "no_openai_sdk")
def test_record_then_replay_without_the_sdk_or_a_key(tmp_path: Path) -> None:
    cassette = tmp_path / "weather.jsonl"
    recorded = agent_file(tmp_path / "recorded.py", "clirec:gpt-4o-mini")
    code, out, err = run(str(recorded), "Weather in Paris?", "--record", str(cassette))
    assert code == 0, err
    assert [json.loads(x)["exchange"] for x in cassette.read_text().splitlines()[1:]] == [0, 1]

    offline = agent_file(tmp_path / "offline.py", "openai:gpt-4o-mini")
    code, _, err = run(str(offline), "Weather in Paris?")
    assert code == 1
    assert "ModelNotFoundError" in err  # without --replay, this agent cannot even load

    code, replayed, err = run(str(offline), "Weather in Paris?", "--replay", str(cassette))
    assert code == 0, err
    assert timeless(replayed) == timeless(out)
    assert "It is 18°C and sunny in Paris." in replayed


@pytest.mark.usefixtures("live_models")
def test_a_replay_that_diverges_exits_one_naming_the_difference(tmp_path: Path) -> None:
    cassette = tmp_path / "weather.jsonl"
    agent = agent_file(tmp_path / "agent.py", "clirec:gpt")
    assert run(str(agent), "Weather in Paris?", "--record", str(cassette))[0] == 0
    code, _, err = run(str(agent), "Weather in Rome?", "--replay", str(cassette))
    assert code == 1
    assert err.strip() == (
        f"error: CassetteMismatchError: {cassette}: model call 1 differs from exchange 1 of 2 "
        "at contents[0].parts[0].text (from character 11): recorded 'Weather in Paris?', "
        "got 'Weather in Rome?'"
    )


@pytest.mark.usefixtures("live_models")
def test_a_replay_that_leaves_calls_unasked_exits_one(tmp_path: Path) -> None:
    cassette = tmp_path / "weather.jsonl"
    agent = agent_file(tmp_path / "agent.py", "clirec:gpt")
    assert run(str(agent), "Weather in Paris?", "--record", str(cassette))[0] == 0
    lines = cassette.read_text().splitlines()
    cassette.write_text("\n".join([*lines, lines[-1].replace('"exchange":1', '"exchange":2')]))
    code, out, err = run(str(agent), "Weather in Paris?", "--replay", str(cassette))
    assert code == 1
    assert "It is 18°C and sunny in Paris." in out
    assert "the run made 2 model calls but the cassette holds 3; 1 were never asked for" in err


@pytest.mark.usefixtures("live_models")
def test_every_model_of_the_tree_is_recorded_and_replayed(tmp_path: Path) -> None:
    cassette = tmp_path / "tree.jsonl"
    agent = agent_file(tmp_path / "tree.py", "clirec:root-model", sub_agent=True)
    assert run(str(agent), "Weather in Paris?", "--record", str(cassette))[0] == 0
    models = {json.loads(x)["model"] for x in cassette.read_text().splitlines()[1:]}
    assert models == {"root-model"}  # the helper was never asked
    code, out, err = run(str(agent), "Weather in Paris?", "--replay", str(cassette))
    assert code == 0, err
    assert "It is 18°C and sunny in Paris." in out


def test_record_and_replay_together_is_an_error(tmp_path: Path) -> None:
    agent = agent_file(tmp_path / "agent.py", "clirec:gpt")
    code, _, err = run(str(agent), "hi", "--record", "a.jsonl", "--replay", "b.jsonl")
    assert code == 1
    assert err.strip() == "error: --record and --replay cannot be used together"


def test_replaying_a_missing_cassette_is_a_one_line_error(tmp_path: Path) -> None:
    agent = agent_file(tmp_path / "agent.py", "clirec:gpt")
    code, _, err = run(str(agent), "hi", "--replay", str(tmp_path / "none.jsonl"))
    assert code == 1
    assert err.strip() == f"error: CassetteError: no such cassette: {tmp_path / 'none.jsonl'}"


@pytest.mark.usefixtures("live_models")
def test_model_strings_resolve_normally_again_after_a_replay(tmp_path: Path) -> None:
    from rondo.models import resolve_model
    from rondo.models.registry import substitute_models

    cassette = tmp_path / "weather.jsonl"
    agent = agent_file(tmp_path / "agent.py", "clirec:gpt")
    assert run(str(agent), "Weather in Paris?", "--record", str(cassette))[0] == 0
    assert run(str(agent), "Weather in Paris?", "--replay", str(cassette))[0] == 0
    assert isinstance(resolve_model("clirec:gpt"), ScriptedModel)
    with substitute_models(lambda spec: ScriptedModel([], name=f"stand-in for {spec}")):
        assert resolve_model("openai:gpt-4o").name == "stand-in for openai:gpt-4o"
    assert isinstance(resolve_model("clirec:gpt"), ScriptedModel)
