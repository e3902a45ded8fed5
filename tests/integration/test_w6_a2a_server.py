"""SPEC W6 (issue 10 point 4): rondo apps served over A2A, called with the a2a-sdk's own
client, blocking and streaming, against real uvicorn on a free loopback port."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests._a2a import confirmation_answer, serve, weather_runner

pytestmark = pytest.mark.integration

from a2a.client import ClientConfig, create_client  # noqa: E402
from a2a.types import (  # noqa: E402
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.routing import Mount  # noqa: E402

from rondo import FunctionCall, FunctionTool, Runner  # noqa: E402
from rondo.a2a import A2AApp, A2AApps  # noqa: E402
from rondo.errors import ModelServerError  # noqa: E402

WEATHER_SCRIPT: list[Any] = [
    FunctionCall(name="get_weather", args={"city": "Oslo"}),
    "Sunny in Oslo, 21 degrees.",
]


def _message(text: str = "", *, context_id: str = "", task_id: str = "", parts: Any = None) -> Any:
    return Message(
        role=Role.ROLE_USER,
        message_id=f"m-{id(parts)}-{text}",
        context_id=context_id,
        task_id=task_id,
        parts=parts if parts is not None else [Part(text=text)],
    )


async def _send(client: Any, message: Any) -> list[StreamResponse]:
    return [r async for r in client.send_message(SendMessageRequest(message=message))]


def _final_task(responses: list[StreamResponse]) -> Task:
    """The task a blocking send answered with."""
    assert len(responses) == 1
    assert responses[0].HasField("task")
    return responses[0].task


def _data(part: Part) -> tuple[str, dict[str, Any]]:
    meta = json_format.MessageToDict(part.metadata)
    return meta.get("adk_type", ""), json_format.MessageToDict(part.data)


@pytest.fixture
async def weather_url() -> AsyncIterator[tuple[str, Runner]]:
    runner = weather_runner([*WEATHER_SCRIPT, "Still sunny in Oslo."])

    async def runner_for(name: str) -> Runner:
        if name != "weather":
            raise LookupError(f"no app named {name!r}")
        return runner

    app = Starlette(routes=[Mount("/a2a", A2AApps(runner_for))])
    async with serve(app) as base:
        yield f"{base}/a2a/weather", runner


async def test_w6_a2a_agent_card_is_generated_from_the_agent(
    weather_url: tuple[str, Runner],
) -> None:
    import httpx
    from a2a.client.card_resolver import parse_agent_card
    from a2a.utils.proto_utils import validate_proto_required_fields

    url, _ = weather_url
    async with httpx.AsyncClient() as http:
        response = await http.get(f"{url}/.well-known/agent-card.json")
    assert response.status_code == 200
    body = response.json()
    assert body["name"] == "weather"
    assert body["description"] == "Answers questions about the weather."
    assert body["version"]
    # One URL, two protocol versions: 1.0, and 0.3 for clients that send no A2A-Version.
    assert body["supportedInterfaces"] == [
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
    ]
    # The SDK adds the 0.3 card's own fields, for 0.3 clients.
    assert (body["url"], body["preferredTransport"]) == (url, "JSONRPC")
    assert body["capabilities"]["streaming"] is True
    assert body["defaultInputModes"] == ["text/plain"]
    assert body["defaultOutputModes"] == ["text/plain"]
    tools = [s for s in body["skills"] if "tool" in s["tags"]]
    assert [(s["name"], s["description"]) for s in tools] == [
        ("get_weather", "The weather in a city.")
    ]
    card = parse_agent_card(body)
    assert validate_proto_required_fields(card) is None  # spec-complete, per the SDK


@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
async def test_w6_a2a_send_is_answered_with_a_completed_task(
    weather_url: tuple[str, Runner], streaming: bool
) -> None:
    url, _ = weather_url
    client = await create_client(url, ClientConfig(streaming=streaming))
    async with client:
        responses = await _send(client, _message("Weather in Oslo?"))
        if streaming:
            assert responses[0].HasField("task")
            states = [
                r.status_update.status.state for r in responses if r.HasField("status_update")
            ]
            assert responses[0].task.status.state == TaskState.TASK_STATE_SUBMITTED
            assert states[0] == TaskState.TASK_STATE_WORKING
            assert states[-1] == TaskState.TASK_STATE_COMPLETED
            assert set(states[:-1]) == {TaskState.TASK_STATE_WORKING}
            artifacts = [r.artifact_update for r in responses if r.HasField("artifact_update")]
            assert [a.artifact.parts[0].text for a in artifacts] == ["Sunny in Oslo, 21 degrees."]
            task = await client.get_task(GetTaskRequest(id=responses[0].task.id))
        else:
            task = _final_task(responses)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [a.parts[0].text for a in task.artifacts] == ["Sunny in Oslo, 21 degrees."]
    history = list(task.history)
    assert history[0].role == Role.ROLE_USER
    assert history[0].parts[0].text == "Weather in Oslo?"
    call_kind, call = _data(history[1].parts[0])
    assert call_kind == "function_call"
    assert call["name"] == "get_weather"
    assert call["args"] == {"city": "Oslo"}
    result_kind, result = _data(history[2].parts[0])
    assert result_kind == "function_response"
    assert result["id"] == call["id"]
    assert result["response"] == {"city": "Oslo", "sky": "sunny", "temp": 21}
    assert history[3].parts[0].text == "Sunny in Oslo, 21 degrees."


async def test_w6_a2a_context_continues_the_session_and_list_tasks_by_context(
    weather_url: tuple[str, Runner],
) -> None:
    url, runner = weather_url
    client = await create_client(url, ClientConfig(streaming=False))
    async with client:
        first = _final_task(await _send(client, _message("Weather in Oslo?")))
        second = _final_task(
            await _send(client, _message("And tomorrow?", context_id=first.context_id))
        )
        other = _final_task(await _send(client, _message("Hello?")))
        listed = await client.list_tasks(ListTasksRequest(context_id=first.context_id))
    assert second.context_id == first.context_id
    assert second.id != first.id
    assert other.context_id != first.context_id
    assert {t.id for t in listed.tasks} == {first.id, second.id}
    # The second message continued the first conversation: the model saw both turns.
    model: Any = runner.agent.model  # pyright: ignore[reportAttributeAccessIssue]
    seen = [c.text for c in model.requests[2].contents if c.text]
    assert seen[0] == "Weather in Oslo?"
    assert seen[-1] == "And tomorrow?"
    session = await runner.session_service.get_session(
        app_name="weather", user_id=f"A2A_USER_{first.context_id}", session_id=first.context_id
    )
    assert session is not None
    assert [e.author for e in session.events].count("user") == 2


async def test_w6_a2a_message_to_a_finished_task_is_refused(
    weather_url: tuple[str, Runner],
) -> None:
    url, _ = weather_url
    client = await create_client(url, ClientConfig(streaming=False))
    async with client:
        task = _final_task(await _send(client, _message("Weather in Oslo?")))
        with pytest.raises(UnsupportedOperationError, match="terminal state"):
            await _send(client, _message("More?", context_id=task.context_id, task_id=task.id))


async def test_w6_a2a_unknown_app_is_a_404(weather_url: tuple[str, Runner]) -> None:
    import httpx

    url, _ = weather_url
    async with httpx.AsyncClient() as http:
        response = await http.get(url.replace("/weather", "/nope") + "/.well-known/agent-card.json")
    assert response.status_code == 404
    assert "nope" in response.json()["detail"]


def delete_file(path: str) -> dict[str, Any]:
    """Delete a file."""
    deleted.append(path)
    return {"deleted": path}


deleted: list[str] = []


@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
async def test_w6_a2a_confirmation_pause_is_input_required_and_its_answer_completes_the_task(
    streaming: bool,
) -> None:
    deleted.clear()
    runner = weather_runner(
        [FunctionCall(name="delete_file", args={"path": "a.txt"}), "Deleted a.txt."],
        tools=[FunctionTool(delete_file, require_confirmation=True)],
    )
    async with serve(A2AApp(runner)) as url:
        client = await create_client(url, ClientConfig(streaming=streaming))
        async with client:
            first = await _send(client, _message("Delete a.txt"))
            task_id = first[0].task.id
            task = await client.get_task(GetTaskRequest(id=task_id))
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            kind, call = _data(task.status.message.parts[0])
            meta = json_format.MessageToDict(task.status.message.parts[0].metadata)
            assert kind == "function_call"
            assert meta["adk_is_long_running"] is True
            assert call["name"] == "adk_request_confirmation"
            assert call["args"]["originalFunctionCall"]["name"] == "delete_file"
            assert deleted == []
            # Text is not an answer: the task keeps waiting, and says what it waits for.
            await _send(client, _message("hmm?", context_id=task.context_id, task_id=task_id))
            task = await client.get_task(GetTaskRequest(id=task_id))
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert "function_response" in task.status.message.parts[0].text
            answer = _message(
                context_id=task.context_id,
                task_id=task_id,
                parts=[confirmation_answer(call["id"], True)],
            )
            await _send(client, answer)
            task = await client.get_task(GetTaskRequest(id=task_id))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [a.parts[0].text for a in task.artifacts] == ["Deleted a.txt."]
    assert deleted == ["a.txt"]


async def test_w6_a2a_a_failed_run_fails_the_task_with_its_error() -> None:
    runner = weather_runner([ModelServerError("provider is down")])
    async with serve(A2AApp(runner)) as url:
        client = await create_client(url, ClientConfig(streaming=False))
        async with client:
            task = _final_task(await _send(client, _message("Weather?")))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert task.status.message.parts[0].text == "provider is down"


def _user_header(request: Request) -> str | None:
    return request.headers.get("x-test-user")


async def test_w6_a2a_tasks_and_contexts_belong_to_the_authenticated_user() -> None:
    import httpx

    runner = weather_runner([*WEATHER_SCRIPT, "Hello Bob."])
    app = A2AApp(runner, user_for=_user_header, bearer_auth=True)
    async with (
        serve(app) as url,
        httpx.AsyncClient(headers={"x-test-user": "alice"}) as alice_http,
        httpx.AsyncClient(headers={"x-test-user": "bob"}) as bob_http,
    ):
        alice = await create_client(url, ClientConfig(streaming=False, httpx_client=alice_http))
        bob = await create_client(url, ClientConfig(streaming=False, httpx_client=bob_http))
        async with alice, bob:
            task = _final_task(await _send(alice, _message("Weather in Oslo?")))
            with pytest.raises(TaskNotFoundError):
                await bob.get_task(GetTaskRequest(id=task.id))
            assert (
                list((await bob.list_tasks(ListTasksRequest(context_id=task.context_id))).tasks)
                == []
            )
            # Bob's message in Alice's context is Bob's own conversation, not hers.
            await _send(bob, _message("Hi", context_id=task.context_id))
    sessions = runner.session_service
    mine = await sessions.get_session(
        app_name="weather", user_id="alice", session_id=task.context_id
    )
    his = await sessions.get_session(app_name="weather", user_id="bob", session_id=task.context_id)
    assert mine is not None
    assert his is not None
    assert [e.text for e in his.events if e.author == "user"] == ["Hi"]
    assert "bearer" in json_format.MessageToDict(app.card)["securitySchemes"]


gate: list[Any] = []  # [entered, released]: asyncio.Events of the current test


async def hold_on(note: str) -> dict[str, Any]:
    """Wait until the test lets go."""
    gate[0].set()
    await gate[1].wait()
    return {"note": note}


async def test_w6_a2a_two_messages_at_once_in_one_context_run_one_after_the_other() -> None:
    import asyncio

    gate[:] = [asyncio.Event(), asyncio.Event()]
    runner = weather_runner(
        [FunctionCall(name="hold_on", args={"note": "x"}), "First done.", "Second done."],
        tools=[hold_on],
    )
    async with serve(A2AApp(runner)) as url:
        client = await create_client(url, ClientConfig(streaming=False))
        async with client:
            first = asyncio.create_task(_send(client, _message("one", context_id="c1")))
            await asyncio.wait_for(gate[0].wait(), 10)  # the first run is in its tool
            second = asyncio.create_task(_send(client, _message("two", context_id="c1")))
            await asyncio.sleep(0.3)  # time for the second run to start, were it not held
            gate[1].set()
            a, b = _final_task(await first), _final_task(await second)
    # The second waited for the first: each answered its own message, nothing raced.
    assert [t.artifacts[0].parts[0].text for t in (a, b)] == ["First done.", "Second done."]
    assert [t.status.state for t in (a, b)] == [TaskState.TASK_STATE_COMPLETED] * 2


started: list[str] = []
stopped: list[str] = []


async def wait_forever(topic: str) -> dict[str, Any]:
    """Research a topic (forever)."""
    import asyncio

    started.append(topic)
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        stopped.append(topic)
        raise
    return {}


async def test_w6_a2a_cancel_stops_the_run() -> None:
    import asyncio

    from a2a.types import CancelTaskRequest

    started.clear()
    stopped.clear()
    runner = weather_runner(
        [FunctionCall(name="wait_forever", args={"topic": "a2a"})], tools=[wait_forever]
    )
    async with serve(A2AApp(runner)) as url:
        # `polling`: the send returns at once with the submitted task.
        client = await create_client(url, ClientConfig(streaming=False, polling=True))
        async with client:
            task = _final_task(await _send(client, _message("Research a2a")))
            for _ in range(500):
                if started:
                    break
                await asyncio.sleep(0.01)
            canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert started == ["a2a"]
    assert stopped == ["a2a"]


async def test_w6_a2a_a_message_with_nothing_readable_is_invalid_params(
    weather_url: tuple[str, Runner],
) -> None:
    from a2a.utils.errors import InvalidParamsError

    url, _ = weather_url
    client = await create_client(url, ClientConfig(streaming=False))
    async with client:
        with pytest.raises(InvalidParamsError, match="no part rondo can read"):
            await _send(client, _message(parts=[Part(text="")]))
