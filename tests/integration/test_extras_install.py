"""Issue 26 item 2: the documented installs work, each in a clean venv, its feature run once.

`pip install 'rondo-agents[server]'` serves an app (`rondo api-server`, SQLite);
`pip install -e '.[server,postgres,a2a]'` serves it over A2A on PostgreSQL, its tasks in the
SDK's `DatabaseTaskStore` (which needs greenlet: SQLAlchemy 2.1 stopped pulling it in). The
venvs are cached, keyed on pyproject.toml and the extras (`RONDO_EXTRAS_CACHE`, default
`~/.cache/rondo/extras-venvs`): a run installs only when the declared dependencies changed.
They install editable, so the code under test is this checkout's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests._require import require_module
from tests._stores import postgres_url
from tests.server._live import free_port, wait_for_health

__all__ = ["postgres_url"]

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
APPS = ROOT / "tests" / "server" / "apps"
CACHE = Path(
    os.environ.get("RONDO_EXTRAS_CACHE") or Path.home() / ".cache" / "rondo" / "extras-venvs"
)


def _venv(extras: str) -> Path:
    """A venv with exactly `rondo-agents[extras]` installed (cached); its bin directory."""
    key = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()
    venv = CACHE / f"{extras.replace(',', '-')}-{key[:12]}"
    python = venv / "bin" / "python"
    if (venv / ".installed").is_file():
        return venv / "bin"
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    install = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    done = subprocess.run([*install, "-e", f"{ROOT}[{extras}]"], capture_output=True, text=True)
    assert done.returncode == 0, f"pip install '.[{extras}]' failed:\n{done.stderr[-3000:]}"
    (venv / ".installed").write_text(extras)
    return venv / "bin"


@contextmanager
def _server(bin_dir: Path, cwd: Path, *args: str) -> Iterator[str]:
    port = free_port()
    command = [str(bin_dir / "rondo"), "api-server", str(APPS), "--port", str(port), *args]
    log = cwd / "server.log"
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, process, log.read_text)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def _run_chat(url: str) -> str:
    user = f"u-{uuid.uuid4().hex[:8]}"
    assert httpx.post(f"{url}/apps/chat/users/{user}/sessions/s").status_code == 200
    body = {
        "appName": "chat",
        "userId": user,
        "sessionId": "s",
        "newMessage": {"role": "user", "parts": [{"text": "tea"}]},
    }
    events = httpx.post(f"{url}/run", json=body, timeout=60).json()
    return events[-1]["content"]["parts"][0]["text"]


def test_extras_server_serves_an_app(tmp_path: Path) -> None:
    bin_dir = _venv("server")
    with _server(bin_dir, tmp_path) as url:
        assert _run_chat(url) == "Stub reply: noted 'tea'"
    assert (tmp_path / ".rondo" / "sessions.db").is_file()


@pytest.mark.postgres
async def test_extras_server_postgres_a2a_answer_a2a_on_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    require_module("a2a", what="A2A", install="pip install 'rondo-agents[a2a]'")
    from a2a.client import ClientConfig, create_client
    from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState

    from tests.server._attack import fresh_postgres

    bin_dir = _venv("server,postgres,a2a")
    with fresh_postgres(postgres_url) as db, _server(bin_dir, tmp_path, "--a2a", "--db", db) as url:
        client = await create_client(f"{url}/a2a/chat", ClientConfig(streaming=False))
        async with client:
            message = Message(role=Role.ROLE_USER, message_id="m1", parts=[Part(text="tea")])
            answers = [r async for r in client.send_message(SendMessageRequest(message=message))]
            first = answers[0]
            task_id = first.task.id if first.HasField("task") else first.status_update.task_id
            task = await client.get_task(GetTaskRequest(id=task_id))  # from the database
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [p.text for a in task.artifacts for p in a.parts] == ["Stub reply: noted 'tea'"]
