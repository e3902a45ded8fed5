"""Issue 19: one app loader for the CLI and the server (`rondo.apps.import_app_folder`).

As with google-adk, an app folder's PARENT directory is importable, so an app may import a
module that sits beside it (`tests/server/apps/chat` imports `echo_model` from `apps/`)."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rondo import apps
from rondo.apps import load_agent
from rondo.cli import app as cli_app
from rondo.sessions.memory import InMemorySessionService

CHAT = Path(__file__).parents[1] / "server" / "apps" / "chat"


def _layout(root: Path, sibling: str) -> Path:
    """AGENTS_DIR with an app folder `bot` importing `<sibling>.py`, a file beside the folder."""
    (root / f"{sibling}.py").write_text("GREETING = 'hello from the sibling'\n")
    folder = root / "bot"
    folder.mkdir()
    (folder / "agent.py").write_text(
        textwrap.dedent(
            f"""
            from {sibling} import GREETING
            from rondo import Agent
            from rondo.testing import ScriptedModel

            root_agent = Agent(name="bot", model=ScriptedModel([GREETING]), instruction=GREETING)
            """
        )
    )
    return folder


def test_19_one_app_loader_cli_imports_a_module_beside_the_app_folder(tmp_path: Path) -> None:
    folder = _layout(tmp_path, "sibling_cli_19")
    try:
        agent = load_agent(str(folder))
    finally:
        sys.modules.pop("sibling_cli_19", None)
    assert agent.name == "bot"
    assert load_agent(str(CHAT)).name == "chat"  # `from echo_model import EchoModel` works


def test_19_one_app_loader_server_and_cli_share_the_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rondo.server.discovery import AppRegistry

    folder = _layout(tmp_path, "sibling_srv_19")
    calls: list[Path] = []
    real = apps.import_app_folder

    def counted(path: Path):  # type: ignore[no-untyped-def]
        calls.append(path)
        return real(path)

    monkeypatch.setattr(apps, "import_app_folder", counted)
    import rondo.server.discovery as discovery

    monkeypatch.setattr(discovery, "import_app_folder", counted)
    try:
        registry = AppRegistry(tmp_path, session_service=InMemorySessionService())
        agent = asyncio.run(registry.root_agent("bot"))
        cli_agent = load_agent(str(folder))
    finally:
        sys.modules.pop("sibling_srv_19", None)
    assert agent.name == cli_agent.name == "bot"
    assert [p.name for p in calls] == ["bot", "bot"]


def test_19_one_app_loader_rondo_eval_runs_an_app_that_imports_a_sibling(tmp_path: Path) -> None:
    pytest.importorskip("rouge_score")
    evalset = tmp_path / "chat.evalset.json"
    evalset.write_text(
        json.dumps(
            {
                "eval_set_id": "chat19",
                "eval_cases": [
                    {
                        "eval_id": "one",
                        "conversation": [
                            {
                                "user_content": {"parts": [{"text": "hi"}]},
                                "final_response": {"parts": [{"text": "hi"}]},
                            }
                        ],
                    }
                ],
            }
        )
    )
    result = CliRunner().invoke(cli_app, ["eval", str(CHAT), str(evalset)])
    assert "echo_model" not in result.output + result.stderr
    assert "cannot load" not in result.output + result.stderr
