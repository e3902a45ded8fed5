"""Issue 26 item 2: the documented installs work, each in a clean venv, its feature run once.

Each extra the README and docs/ name: `[server]` serves an app (`rondo api-server`, SQLite);
`[server,postgres,a2a]` serves it over A2A on PostgreSQL, its tasks in the SDK's
`DatabaseTaskStore` (which needs greenlet: SQLAlchemy 2.1 stopped pulling it in);
`[server,aiosqlite]` on a `sqlite+aiosqlite://` URL; `[server,agui]` answers AG-UI;
`[server,mcp]` serves apps as MCP tools to the MCP SDK's own client; `[eval]` scores an eval
set with ROUGE-1; `[openai]`, `[anthropic]`, `[gemini]` answer (from a loopback fake of each
provider's HTTP API) and price the call with genai-prices; `[dbos]` runs an invocation as a DBOS
workflow on PostgreSQL. `[local]` is README command 1 itself (`./dev run` installs only it). The
venvs are cached, keyed on pyproject.toml, the extras and the checkout's path
(`RONDO_EXTRAS_CACHE`, default `~/.cache/rondo/extras-venvs`): a run installs only when the
declared dependencies changed or the checkout is another one.
They install editable, so the code under test is this checkout's.
"""

from __future__ import annotations

import hashlib
import json
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
    # The checkout's path is in the key: an editable install runs the code where it was
    # installed from, so another checkout's venv would test other code (or none, once that
    # checkout is deleted: "No module named 'rondo'").
    spec = (ROOT / "pyproject.toml").read_bytes() + extras.encode() + str(ROOT).encode()
    key = hashlib.sha256(spec).hexdigest()
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
        _live_handshake(url)
    assert (tmp_path / ".rondo" / "sessions.db").is_file()


def _live_handshake(url: str) -> None:
    """Issue 20: the extra serves WebSockets (uvicorn needs a WebSocket library for them) —
    `/run_live` answers the handshake, then closes on the unknown session as google-adk does."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    target = "ws" + url.removeprefix("http") + "/run_live?app_name=talk&user_id=u&session_id=no"
    with connect(target, open_timeout=30) as ws, pytest.raises(ConnectionClosed):
        ws.recv(timeout=30)
    assert ws.close_code == 1002


def test_20_extras_openai_brings_what_the_realtime_client_needs(tmp_path: Path) -> None:
    """Issue 20: the openai SDK's realtime client dials with `websockets`, which the SDK
    declares only in its own `realtime` extra: rondo's `[openai]` extra must bring it."""
    bin_dir = _venv("openai")
    script = "import rondo.models.openai_realtime, websockets.asyncio.client; print('ok')"
    assert _python(bin_dir, script, tmp_path).split() == ["ok"]


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


def _python(bin_dir: Path, script: str, cwd: Path, **env: str) -> str:
    """Run `script` with the venv's Python (no PYTHONPATH: only what the extra installed)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "RONDO_"))}
    done = subprocess.run(
        [str(bin_dir / "python"), "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**clean, **env},
    )
    assert done.returncode == 0, f"{script}\n--- stderr:\n{done.stderr[-3000:]}"
    return done.stdout


def test_extras_aiosqlite_serves_on_an_aiosqlite_url(tmp_path: Path) -> None:
    bin_dir = _venv("server,aiosqlite")
    db = f"sqlite+aiosqlite:///{tmp_path / 'a.db'}"
    with _server(bin_dir, tmp_path, "--db", db) as url:
        assert _run_chat(url) == "Stub reply: noted 'tea'"
    assert (tmp_path / "a.db").is_file()


def test_extras_agui_serves_ag_ui(tmp_path: Path) -> None:
    bin_dir = _venv("server,agui")
    with _server(bin_dir, tmp_path) as url:
        body = {
            "threadId": "t1",
            "runId": "r1",
            "messages": [{"id": "m1", "role": "user", "content": "tea"}],
            "state": {},
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
        answer = httpx.post(f"{url}/ag-ui/chat", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    frames = [line[6:] for line in answer.text.splitlines() if line.startswith("data: ")]
    kinds = [json.loads(f)["type"] for f in frames]
    assert kinds[0] == "RUN_STARTED"
    assert kinds[-1] == "RUN_FINISHED"
    assert "TEXT_MESSAGE_CONTENT" in kinds


MCP_CLIENT = """
import asyncio, sys
import httpx2, mcp
from mcp.client.streamable_http import streamable_http_client

async def main():
    async with httpx2.AsyncClient(timeout=30) as http:
        async with mcp.Client(streamable_http_client(sys.argv[1] + "/mcp", http_client=http)) as c:
            result = await c.call_tool("chat", {"message": "tea"})
            print(result.content[0].text)

asyncio.run(main())
"""


def test_extras_mcp_serves_apps_as_mcp_tools(tmp_path: Path) -> None:
    bin_dir = _venv("server,mcp")
    with _server(bin_dir, tmp_path, "--mcp") as url:
        script = MCP_CLIENT.replace("sys.argv[1]", repr(url))
        assert _python(bin_dir, script, tmp_path).strip() == "Stub reply: noted 'tea'"


EVALSET = {
    "eval_set_id": "chat_set",
    "eval_cases": [
        {
            "eval_id": "tea",
            "conversation": [
                {
                    "invocation_id": "i1",
                    "user_content": {"role": "user", "parts": [{"text": "tea"}]},
                    "final_response": {
                        "role": "model",
                        "parts": [{"text": "Stub reply: noted 'tea'"}],
                    },
                    "intermediate_data": {"tool_uses": []},
                }
            ],
            "session_input": {"app_name": "chat", "user_id": "u", "state": {}},
        }
    ],
}


def test_extras_eval_scores_an_eval_set(tmp_path: Path) -> None:
    bin_dir = _venv("eval")
    app = tmp_path / "chat"
    app.mkdir()
    (app / "agent.py").write_text(
        "from rondo import Agent\nfrom rondo.testing import ScriptedModel\n"
        "root_agent = Agent(name='chat', model=ScriptedModel([\"Stub reply: noted 'tea'\"]))\n"
    )
    evalset = tmp_path / "chat.evalset.json"
    evalset.write_text(json.dumps(EVALSET))
    config = {"criteria": {"response_match_score": 0.9}}
    (tmp_path / "test_config.json").write_text(json.dumps(config))
    report = tmp_path / "report.json"
    done = subprocess.run(
        [str(bin_dir / "rondo"), "eval", str(app), str(evalset), "--json", str(report)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    metric = json.loads(report.read_text())["cases"][0]["metrics"][0]
    # ROUGE-1 comes from rouge-score, the extra's one dependency.
    assert (metric["metric"], metric["score"], metric["status"]) == (
        "response_match_score",
        1.0,
        "passed",
    )


class _FakeProviders:
    """One loopback server answering OpenAI's, Anthropic's and Gemini's non-streaming calls."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        usage = {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010}
        replies: dict[str, dict[str, object]] = {
            "/v1/chat/completions": {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "openai says hi"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            },
            "/v1/messages": {
                "id": "m1",
                "type": "message",
                "role": "assistant",
                "model": "claude-3-5-haiku-20241022",
                "content": [{"type": "text", "text": "anthropic says hi"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1000, "output_tokens": 10},
            },
            "gemini": {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": "gemini says hi"}]},
                        "finishReason": "STOP",
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": 1000,
                    "candidatesTokenCount": 10,
                    "totalTokenCount": 1010,
                },
                "modelVersion": "gemini-2.0-flash",
            },
        }

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                path = self.path.split("?")[0]
                reply = replies.get(path) or (replies["gemini"] if ":generate" in path else None)
                body = json.dumps(reply or {"error": {"message": path}}).encode()
                self.send_response(200 if reply else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def providers() -> Iterator[_FakeProviders]:
    fake = _FakeProviders()
    yield fake
    fake.close()


PROVIDER_RUN = """
import asyncio
from rondo import Agent
result = asyncio.run(Agent(name="a", model=MODEL, instruction="Be brief.").run("hi"))
print(result.text)
print(result.metrics.cost_usd is not None and result.metrics.cost_usd > 0)
"""


@pytest.mark.parametrize(
    ("extra", "model", "env"),
    [
        ("openai", "openai:gpt-4o-mini", {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "{url}/v1"}),
        (
            "anthropic",
            "anthropic:claude-3-5-haiku-20241022",
            {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "{url}"},
        ),
        (
            "gemini",
            "gemini:gemini-2.0-flash",
            {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": "{url}"},
        ),
    ],
)
def test_extras_provider_answers_and_prices_the_call(
    tmp_path: Path, providers: _FakeProviders, extra: str, model: str, env: dict[str, str]
) -> None:
    bin_dir = _venv(extra)
    script = PROVIDER_RUN.replace("MODEL", repr(model))
    values = {k: v.format(url=providers.url) for k, v in env.items()}
    out = _python(bin_dir, script, tmp_path, **values).splitlines()
    assert out == [f"{extra} says hi", "True"]  # answered, and priced by genai-prices


DBOS_RUN = """
import asyncio
from dbos import DBOS
from rondo import Agent, Runner
from rondo.durable.dbos import DbosEngine
from rondo.sessions.sql import SqlSessionService
from rondo.testing import ScriptedModel

DBOS(config={"name": "extras", "system_database_url": SYSTEM, "application_version": "1"})
engine = DbosEngine(
    lambda: Runner(
        agent=Agent(name="a", model=ScriptedModel(["durable hi"])),
        app_name="extras",
        session_service=SqlSessionService(SESSIONS),
    ),
    polling_interval_sec=0.1,
)

async def main():
    DBOS.launch()
    await engine.start()
    key = engine.submit(user_id="u", session_id="s", message="hello")
    outcome = await engine.outcome_async(key)
    print(outcome.text)

asyncio.run(main())
DBOS.destroy()
"""


@pytest.mark.postgres
def test_extras_dbos_runs_an_invocation_as_a_workflow(tmp_path: Path, postgres_url: str) -> None:
    from sqlalchemy.engine import make_url

    from tests.server._attack import fresh_postgres

    bin_dir = _venv("dbos")
    with fresh_postgres(postgres_url) as sessions, fresh_postgres(postgres_url) as system:
        plain = make_url(system).set(drivername="postgresql").render_as_string(False)
        script = DBOS_RUN.replace("SYSTEM", repr(plain)).replace("SESSIONS", repr(sessions))
        assert _python(bin_dir, script, tmp_path).strip().splitlines()[-1] == "durable hi"
