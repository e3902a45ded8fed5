"""SPEC W5 with A2A (issue 10 points 1 and 4): an A2A message takes the same run claim as the
REST run routes, so an A2A run and a REST run on one session — on one server, or on two
replicas of one PostgreSQL — never interleave: the later one is refused before it stores
anything (REST: 409; A2A: the task FAILED with the reason), and the session only ever holds
whole invocations. Real uvicorn servers in this process, the a2a-sdk's own client.

The A2A context id is the session id; an anonymous caller's user is `A2A_USER_<context>`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests._require import require_module

httpx = require_module("httpx", what="SERVER", install="pip install httpx")
require_module("fastapi", what="SERVER", install="pip install 'rondo-agents[server]'")
require_module("a2a", what="A2A", install="pip install 'rondo-agents[a2a]'")

from a2a.client import ClientConfig, create_client  # noqa: E402
from a2a.types import (  # noqa: E402
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import UnsupportedOperationError  # noqa: E402

from rondo.server import create_app  # noqa: E402
from tests._a2a import serve  # noqa: E402
from tests._stores import postgres_url as postgres_url  # noqa: E402  (the PostgreSQL fixture)

pytestmark = pytest.mark.integration

APPS = Path(__file__).parents[1] / "server" / "apps"


def _context() -> tuple[str, str]:
    """A fresh A2A context: (session id, the rondo user its anonymous caller runs as)."""
    context = f"w5a2a-{uuid.uuid4().hex[:12]}"
    return context, f"A2A_USER_{context}"


def _run_body(user: str, session_id: str, text: str) -> dict[str, Any]:
    return {
        "appName": "tally",
        "userId": user,
        "sessionId": session_id,
        "newMessage": {"role": "user", "parts": [{"text": text}]},
    }


async def _ask(base: str, text: str, context_id: str) -> Any:
    """Send `text` over A2A (blocking) and return the task as it ended."""
    client = await create_client(f"{base}/a2a/tally", ClientConfig(streaming=False))
    async with client:
        message = Message(
            role=Role.ROLE_USER,
            message_id=f"m-{uuid.uuid4().hex[:8]}",
            context_id=context_id,
            parts=[Part(text=text)],
        )
        responses = [r async for r in client.send_message(SendMessageRequest(message=message))]
        first = responses[0]
        task_id = first.task.id if first.HasField("task") else first.status_update.task_id
        return await client.get_task(GetTaskRequest(id=task_id))


async def _events(http: Any, user: str, sid: str) -> list[dict[str, Any]]:
    answer = await http.get(f"/apps/tally/users/{user}/sessions/{sid}")
    assert answer.status_code == 200, answer.text
    return answer.json()["events"]


async def _started(http: Any, user: str, sid: str) -> None:
    """Wait until a run on the session has stored its first record."""
    for _ in range(1000):
        answer = await http.get(f"/apps/tally/users/{user}/sessions/{sid}")
        if answer.status_code == 200 and answer.json()["events"]:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the run never started")


def _whole_invocations(events: list[dict[str, Any]]) -> list[str]:
    """The user texts of the session's invocations, each checked to be complete: a user
    message, the tally call, its result, the answer."""
    assert len(events) % 4 == 0, events
    texts = []
    for at in range(0, len(events), 4):
        user, call, result, answer = events[at : at + 4]
        assert user["author"] == "user"
        assert call["content"]["parts"][0]["functionCall"]["name"] == "tally"
        assert result["content"]["parts"][0]["functionResponse"]["name"] == "tally"
        assert answer["content"]["parts"][0]["text"].startswith("counted ")
        texts.append(user["content"]["parts"][0]["text"])
    return texts


@pytest.fixture
async def one_server() -> AsyncIterator[str]:
    async with serve(create_app(APPS, db="memory", a2a=True, loopback_only=True)) as url:
        yield url


async def test_w5_a_rest_run_during_an_a2a_run_on_its_session_is_refused_409(
    one_server: str,
) -> None:
    base = one_server
    sid, user = _context()
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        asked = asyncio.create_task(_ask(base, "slow one", sid))
        await _started(http, user, sid)
        refused = await http.post("/run", json=_run_body(user, sid, "rest"))
        assert refused.status_code == 409, refused.text
        assert "busy" in refused.json()["detail"]
        task = await asked
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert _whole_invocations(await _events(http, user, sid)) == ["slow one"]
        # Once the A2A run ended, the session is free for REST.
        after = await http.post("/run", json=_run_body(user, sid, "rest"))
        assert after.status_code == 200, after.text
        events = await _events(http, user, sid)
        assert _whole_invocations(events) == ["slow one", "rest"]
        state = (await http.get(f"/apps/tally/users/{user}/sessions/{sid}")).json()["state"]
        assert state == {"count": 2}


@pytest.fixture
async def two_replicas(postgres_url: str) -> AsyncIterator[tuple[str, str]]:
    """Two servers in this process, each with a store of its own on the test database."""
    options: dict[str, Any] = {"db": postgres_url, "a2a": True, "loopback_only": True}
    async with serve(create_app(APPS, **options)) as one, serve(create_app(APPS, **options)) as two:
        yield one, two


@pytest.mark.postgres
async def test_w5_an_a2a_message_during_a_rest_run_on_another_replica_stores_nothing(
    two_replicas: tuple[str, str],
) -> None:
    one, two = two_replicas
    sid, user = _context()
    async with (
        httpx.AsyncClient(base_url=one, timeout=30) as rest,
        httpx.AsyncClient(base_url=two, timeout=30) as other,
    ):
        created = await rest.post(f"/apps/tally/users/{user}/sessions", json={"sessionId": sid})
        assert created.status_code == 200, created.text
        running = asyncio.create_task(rest.post("/run", json=_run_body(user, sid, "slow rest")))
        await _started(other, user, sid)
        task = await _ask(two, "a2a", sid)
        assert task.status.state == TaskState.TASK_STATE_FAILED
        assert "busy" in task.status.message.parts[0].text
        assert (await running).status_code == 200
        # The refused message left nothing in the session: one whole REST invocation.
        assert _whole_invocations(await _events(other, user, sid)) == ["slow rest"]
        # And the other way round: an A2A run on replica two holds the session against a
        # REST run on replica one.
        asked = asyncio.create_task(_ask(two, "slow a2a", sid))
        await _until_events(rest, user, sid, 5)
        refused = await rest.post("/run", json=_run_body(user, sid, "rest"))
        assert refused.status_code == 409, refused.text
        finished = await asked
        assert finished.status.state == TaskState.TASK_STATE_COMPLETED
        events = await _events(rest, user, sid)
        assert _whole_invocations(events) == ["slow rest", "slow a2a"]
        state = (await rest.get(f"/apps/tally/users/{user}/sessions/{sid}")).json()["state"]
        assert state == {"count": 2}


async def _until_events(http: Any, user: str, sid: str, count: int) -> None:
    for _ in range(1000):
        if len(await _events(http, user, sid)) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the session never reached {count} events")


@pytest.mark.postgres
async def test_w5_an_a2a_task_run_on_one_replica_is_read_listed_and_closed_on_another(
    two_replicas: tuple[str, str],
) -> None:
    """Tasks live in the sessions' PostgreSQL (the SDK's DatabaseTaskStore): no sticky
    routing for A2A either. The task run on replica one is found, listed by its context and
    refused a new message on replica two — and only within its app."""
    one, two = two_replicas
    sid, _ = _context()
    task = await _ask(one, "count me", sid)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    client = await create_client(f"{two}/a2a/tally", ClientConfig(streaming=False))
    async with client:
        again = await client.get_task(GetTaskRequest(id=task.id))
        assert again.status.state == TaskState.TASK_STATE_COMPLETED
        assert again.artifacts[0].parts[0].text == task.artifacts[0].parts[0].text
        listed = await client.list_tasks(ListTasksRequest(context_id=sid))
        assert [t.id for t in listed.tasks] == [task.id]
        message = Message(
            role=Role.ROLE_USER,
            message_id=f"m-{uuid.uuid4().hex[:8]}",
            context_id=sid,
            task_id=task.id,
            parts=[Part(text="more")],
        )
        with pytest.raises(UnsupportedOperationError, match="terminal state"):
            _ = [r async for r in client.send_message(SendMessageRequest(message=message))]
    other_app = await create_client(f"{two}/a2a/chat", ClientConfig(streaming=False))
    async with other_app:
        assert list((await other_app.list_tasks(ListTasksRequest(context_id=sid))).tasks) == []
