"""Issue 23 items 1 and 6: the README's commands work as written, and its option lists are
`rondo --help`'s.

Every command line of a bash block in README.md and examples/README.md is accounted for: run
here (offline), or named with the test that runs it. A new command nobody runs fails
`test_every_readme_command_is_run_somewhere`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import typer

from rondo.cli import app
from tests._require import require, require_module

ROOT = Path(__file__).parents[2]
DOCS = (ROOT / "README.md", ROOT / "examples" / "README.md")
_PROMPT = re.compile(r"^(?:\./dev|rondo|curl|pip|python)\b")

# Commands run by other tests (or CI itself), and where.
ELSEWHERE = {
    "./dev run examples/weather": ".ci/run (README command 1) and test_examples.py",
    "./dev test": ".ci/run (README command 2)",
    "rondo eval examples/weather": "test_examples.py::test_o3_the_weather_eval_set_passes",
    "rondo run examples/guarded --session g1 --reject": "test_feature_examples.py (all three)",
    "rondo run examples/notes": "test_feature_examples.py::test_e3_...",
    "rondo run examples/team": "test_feature_examples.py::test_a1_...",
    "rondo run examples/structured": "test_feature_examples.py::test_s1_...",
    "rondo run examples/guarded": "test_feature_examples.py::test_h3_... and below",
    "rondo run PATH": "the synopsis: test_readme_options_match_rondo_help",
    "rondo eval PATH": "the synopsis: test_readme_options_match_rondo_help",
    "rondo api-server DIR": "the synopsis: test_readme_options_match_rondo_help",
    "rondo api-server AGENTS_DIR": "the synopsis: test_readme_options_match_rondo_help",
    "rondo web AGENTS_DIR": "the synopsis and test_dev_web_serves_the_examples",
    "rondo --version": "tests/unit/test_cli.py::test_version",
    "./dev web": "test_dev_web_serves_the_examples",
    "curl": "test_the_readme_curl_session_runs",
    "python examples/weather_walkthrough.py": "tests/conformance/test_weather_walkthrough.py",
    "pip install -e": "test_readme_pip_installs_name_real_extras",
}


def _bash_blocks(path: Path) -> list[list[str]]:
    text = path.read_text(encoding="utf-8")
    return [block.splitlines() for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL)]


def readme_commands() -> list[str]:
    """Each command of the bash blocks (continuation lines joined, comments dropped)."""
    commands: list[str] = []
    for path in DOCS:
        for block in _bash_blocks(path):
            for line in block:
                stripped = line.split("  #", 1)[0].rstrip()
                if _PROMPT.match(stripped):
                    commands.append(stripped)
                elif commands and line.startswith("  ") and not line.lstrip().startswith("--"):
                    commands[-1] += " " + stripped.strip()
    return commands


def test_every_readme_command_is_run_somewhere() -> None:
    commands = readme_commands()
    assert len(commands) > 15
    unaccounted = [c for c in commands if not any(c.startswith(k) for k in ELSEWHERE)]
    assert unaccounted == []


def _synopsis_flags(command: str) -> set[str]:
    """The flags the README lists under `rondo COMMAND ...` (indented lines after it)."""
    flags: set[str] = set()
    for block in _bash_blocks(ROOT / "README.md"):
        current = ""
        for line in block:
            if line.startswith("rondo "):
                current = line.split()[1]
                continue
            if not line.startswith("    --") or current not in (command, _SERVE_PAIR[command]):
                continue
            shown, _, note = line.partition("#")
            if command == "web" and "api-server only" in note:
                continue
            flags.update(re.findall(r"--[a-z][a-z0-9-]*", shown))
    return flags


_SERVE_PAIR = {"run": "run", "eval": "eval", "api-server": "web", "web": "api-server"}


@pytest.mark.parametrize("command", ["run", "eval", "api-server", "web"])
def test_readme_options_match_rondo_help(command: str) -> None:
    click_command = typer.main.get_command(app)
    sub = click_command.commands[command]  # pyright: ignore[reportAttributeAccessIssue, reportUnknownVariableType, reportUnknownMemberType]
    helped = {
        opt
        for param in sub.params  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        for opt in param.opts  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if opt.startswith("--") and opt != "--help"
    }
    assert _synopsis_flags(command) == helped


def test_readme_pip_installs_name_real_extras() -> None:
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    docs = [*DOCS, *(ROOT / "docs").glob("*.md")]
    named: set[str] = set()
    for path in docs:
        text = path.read_text(encoding="utf-8")
        assert "pip install 'rondo-agents" not in text, f"{path.name}: rondo is not on PyPI"
        for group in re.findall(r"pip install -e '\.\[([a-z0-9,-]+)\]'", text):
            named.update(group.split(","))
    assert named
    assert named <= extras


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _server(argv: list[str], ready: str, cwd: Path) -> Iterator[subprocess.Popen[str]]:
    """A server process; yields once it printed `ready` on stderr."""
    process = subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    readers: list[threading.Thread] = []
    try:
        assert process.stderr is not None
        seen: list[str] = []
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line and process.poll() is not None:
                raise AssertionError("the server exited:\n" + "".join(seen))
            seen.append(line)
            if ready in line:
                break
        else:
            raise AssertionError("the server never said it was ready:\n" + "".join(seen))
        _wait_listening(int(ready.rsplit(":", 1)[1].strip("/")))
        # Keep reading its log, so a full pipe never blocks it.
        reader = threading.Thread(target=seen.extend, args=(process.stderr,), daemon=True)
        reader.start()
        readers.append(reader)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
        for reader in readers:
            reader.join(30)  # it ends at the log's end, now that the process is gone
        if process.stderr is not None:
            process.stderr.close()


def _wait_listening(port: int) -> None:
    import socket

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


def test_dev_web_serves_the_examples() -> None:
    """`./dev web` (default examples/) prints the UI's address and serves it there."""
    require_module("fastapi", what="SERVER", install="pip install -e '.[server]'")
    httpx = require_module("httpx", what="SERVER", install="pip install -e '.[server]'")
    venv = ROOT / ".venv" / "bin" / "python"
    require(
        venv.exists() and Path(sys.executable).resolve() == venv.resolve(),
        what="SERVER",
        reason="./dev web runs in the project's .venv: run the tests with it",
    )
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    with _server(
        [str(ROOT / "dev"), "web", "--port", str(port), "--db", "memory"],
        f"open {url}",
        ROOT,
    ):
        page = httpx.get(url, timeout=30)
        assert page.status_code == 200
        assert "<title>" in page.text
        apps = httpx.get(url + "list-apps", timeout=30).json()
        assert {"guarded", "notes", "structured", "team", "weather"} <= set(apps)


def test_the_readme_curl_session_runs(tmp_path: Path) -> None:
    """The README's curl session against `rondo api-server examples`, as written (only the
    port and the call id filled in)."""
    require_module("fastapi", what="SERVER", install="pip install -e '.[server]'")
    require(shutil.which("curl"), what="SERVER", reason="needs curl")
    port = _free_port()
    curls = [c for c in readme_commands() if c.startswith("curl")]
    assert len(curls) == 4
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    argv = [sys.executable, "-m", "rondo.cli", "api-server", str(ROOT / "examples")]
    argv += ["--port", str(port), "--db", "memory"]
    with _server(argv, f"at http://127.0.0.1:{port}/", tmp_path):
        outputs: list[str] = []
        for command in curls:
            command = command.replace("localhost:8000", f"localhost:{port}").replace(" \\", "")
            if "CALL_ID" in command:
                [pending] = json.loads(outputs[-1])
                command = command.replace("CALL_ID", pending["callId"])
            done = subprocess.run(
                ["bash", "-c", command], capture_output=True, text=True, timeout=120, env=env
            )
            assert done.returncode == 0, (command, done.stderr)
            outputs.append(done.stdout)
    created, run, _, decided = outputs
    assert json.loads(created)["id"] == "s1"
    assert '"name":"delete_file"' in run.replace(" ", "")
    assert "Comment: keep it" in decided


_PATH = re.compile(r"`((?:src|tests|bench|docs|examples|\.ci)/[\w./-]+)`")
_LINK = re.compile(r"\]\((?!https?:|#)([^)#\s]+)")


def test_every_path_the_docs_name_exists() -> None:
    """Each repository path in README.md, examples/README.md and docs/ (in backticks or as a
    link) is a real file or folder."""
    missing: list[str] = []
    for doc in [*DOCS, *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for path in _PATH.findall(text):
            if not (ROOT / path.rstrip("/.")).exists():
                missing.append(f"{doc.name}: {path}")
        for link in _LINK.findall(text):
            if not (doc.parent / link).exists():
                missing.append(f"{doc.name}: link {link}")
    assert missing == []
