"""SPEC W6 (issue 10 point 5): a remote A2A agent as a sub-agent or a tool of a rondo agent,
against a rondo A2A server and a minimal a2a-sdk sample server, on loopback."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests._a2a import serve, weather_runner

pytestmark = pytest.mark.integration

from a2a.helpers import new_text_message  # noqa: E402
from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater  # noqa: E402
from a2a.types import (  # noqa: E402
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import JSONResponse, PlainTextResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from rondo import Agent, AgentTool, Event, FunctionCall, FunctionTool, Runner  # noqa: E402
from rondo.a2a import A2AApp, RemoteA2AAgent  # noqa: E402
from rondo.errors import (  # noqa: E402
    AgentCardError,
    RemoteAgentTimeoutError,
    RemoteAgentUnreachableError,
)
from rondo.testing import ScriptedModel  # noqa: E402

TRANSFER = FunctionCall(name="transfer_to_agent", args={"agent_name": "weather"})


def _root(remote: RemoteA2AAgent, turns: int = 1) -> Runner:
    """A local root agent that hands every turn to `remote`."""
    model = ScriptedModel([TRANSFER] * turns)
    return Runner(agent=Agent(name="root", model=model, sub_agents=[remote]), app_name="local")


async def _turn(runner: Runner, message: Any, session_id: str = "s") -> list[Event]:
    return [
        e async for e in runner.run_async(user_id="u", session_id=session_id, new_message=message)
    ]


def _remote_events(events: list[Event]) -> list[Event]:
    return [e for e in events if e.author == "weather"]


# -- against a rondo A2A server ---------------------------------------------------------------


@pytest.fixture
async def rondo_weather() -> AsyncIterator[tuple[str, Runner]]:
    runner = weather_runner(
        [
            FunctionCall(name="get_weather", args={"city": "Oslo"}),
            "Sunny in Oslo.",
            "Still sunny tomorrow.",
        ]
    )
    async with serve(A2AApp(runner)) as url:
        yield url, runner


@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
async def test_w6_a2a_remote_rondo_agent_as_a_sub_agent(
    rondo_weather: tuple[str, Runner], streaming: bool
) -> None:
    url, remote_runner = rondo_weather
    remote = RemoteA2AAgent(name="weather", url=url, description="Weather.", streaming=streaming)
    local = _root(remote, turns=2)
    first = _remote_events(await _turn(local, "Weather in Oslo?"))
    assert [e.get_function_calls()[0].name for e in first[:1]] == ["get_weather"]
    assert first[0].get_function_calls()[0].args == {"city": "Oslo"}
    assert first[1].get_function_responses()[0].response == {
        "city": "Oslo",
        "sky": "sunny",
        "temp": 21,
    }
    assert [e.text for e in first[2:]] == ["Sunny in Oslo."]
    assert first[-1].is_final_response()
    # The second turn continues the remote conversation (its model sees the first turn).
    second = _remote_events(await _turn(local, "And tomorrow?"))
    assert [e.text for e in second] == ["Still sunny tomorrow."]
    remote_model: Any = remote_runner.agent.model  # pyright: ignore[reportAttributeAccessIssue]
    seen = [c.text for c in remote_model.requests[-1].contents if c.text]
    assert seen[0] == "Weather in Oslo?"
    assert seen[-1] == "And tomorrow?"
    session = await local.session_service.get_session(app_name="local", user_id="u", session_id="s")
    assert session is not None
    assert session.state["a2a:weather"]["context_id"]
    assert session.state["a2a:weather"]["task_id"] is None


async def test_w6_a2a_remote_agent_as_a_tool(rondo_weather: tuple[str, Runner]) -> None:
    url, _ = rondo_weather
    tool = AgentTool(RemoteA2AAgent(name="weather", url=url, description="Weather."))
    model = ScriptedModel([FunctionCall(name="weather", args={"request": "Oslo?"}), "It is sunny."])
    runner = Runner(agent=Agent(name="root", model=model, tools=[tool]))
    events = await _turn(runner, "Weather in Oslo?")
    assert events[1].get_function_responses()[0].response == {"result": "Sunny in Oslo."}
    assert events[-1].text == "It is sunny."


def delete_file(path: str) -> dict[str, Any]:
    """Delete a file."""
    deleted.append(path)
    return {"deleted": path}


deleted: list[str] = []


async def test_w6_a2a_remote_confirmation_pauses_the_local_run_until_answered() -> None:
    deleted.clear()
    remote_runner = weather_runner(
        [FunctionCall(name="delete_file", args={"path": "a.txt"}), "Deleted a.txt."],
        tools=[FunctionTool(delete_file, require_confirmation=True)],
    )
    async with serve(A2AApp(remote_runner)) as url:
        local = _root(RemoteA2AAgent(name="weather", url=url, description="Files."))
        await _turn(local, "Delete a.txt")
        session = await local.session_service.get_session(
            app_name="local", user_id="u", session_id="s"
        )
        assert session is not None
        [pending] = session.pending
        assert (pending.kind, pending.tool_name, pending.args) == (
            "confirmation",
            "delete_file",
            {"path": "a.txt"},
        )
        assert deleted == []
        answer = _remote_events(await _turn(local, pending.approve()))
    # Approved, the remote ran the tool and answered.
    assert answer[0].get_function_responses()[0].response == {"deleted": "a.txt"}
    assert [e.text for e in answer[1:]] == ["Deleted a.txt."]
    assert deleted == ["a.txt"]


# -- against a minimal a2a-sdk sample server --------------------------------------------------


class SampleExecutor(AgentExecutor):
    """A sample agent written with the SDK only: echoes, asks, fails, replies or hangs."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []  # (task id, text) of every message

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task_id, context_id = context.task_id or "", context.context_id or ""
        self.seen.append((task_id, text))
        updater = TaskUpdater(event_queue, task_id, context_id)
        if text == "message":  # a direct reply, no task
            await event_queue.enqueue_event(new_text_message("a direct reply", context_id))
            return
        if context.current_task is None:
            assert context.message is not None
            status = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
            task = Task(id=task_id, context_id=context_id, status=status, history=[context.message])
            await event_queue.enqueue_event(task)
        await updater.start_work()
        if text == "hang":
            await asyncio.sleep(3600)
        if text == "stop":
            return  # ends its part without finishing the task
        if text == "fail":
            await updater.failed(updater.new_agent_message([Part(text="out of quota")]))
        elif text == "weather?":
            await updater.requires_input(updater.new_agent_message([Part(text="Which city?")]))
        else:
            answer = f"Sunny in {text}." if context.current_task else f"echo: {text}"
            await updater.add_artifact([Part(text=answer)])
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def _sample_card(url: str, streaming: bool) -> AgentCard:
    return AgentCard(
        name="sample",
        description="An a2a-sdk sample agent.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Echoes.", tags=["echo"])],
    )


@pytest.fixture(params=[False, True], ids=["blocking", "streaming"])
async def sample(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, SampleExecutor]]:
    streaming: bool = request.param
    executor = SampleExecutor()
    where: dict[str, str] = {}
    card = _sample_card("http://placeholder/", streaming)

    async def served_card(card: AgentCard) -> AgentCard:
        out = AgentCard()
        out.CopyFrom(card)
        out.supported_interfaces[0].url = where["url"]
        return out

    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(
        routes=[
            *create_agent_card_routes(card, card_modifier=served_card),
            *create_jsonrpc_routes(handler, rpc_url="/"),
        ]
    )
    async with serve(app) as url:
        where["url"] = url + "/"
        yield url, executor
        # Stop what still runs (the hanging task) before the server waits for its requests.
        await handler.aclose()


async def test_w6_a2a_sdk_sample_server_as_a_sub_agent(
    sample: tuple[str, SampleExecutor],
) -> None:
    url, _ = sample
    local = _root(RemoteA2AAgent(name="weather", url=url), turns=2)
    events = _remote_events(await _turn(local, "hello"))
    assert [e.text for e in events] == ["echo: hello"]
    assert events[-1].is_final_response()
    # A direct message reply (no task) is an answer too.
    assert [e.text for e in _remote_events(await _turn(local, "message"))] == ["a direct reply"]


async def test_w6_a2a_sdk_sample_question_is_answered_in_the_same_task(
    sample: tuple[str, SampleExecutor],
) -> None:
    url, executor = sample
    local = _root(RemoteA2AAgent(name="weather", url=url), turns=2)
    [asked] = _remote_events(await _turn(local, "weather?"))
    assert asked.text == "Which city?"
    [question] = asked.get_function_calls()  # H4: the question is a call the run waits on
    assert question.id in asked.long_running_tool_ids
    # A plain text reply answers it too: the question's call gets that text as its answer.
    answered, reply = _remote_events(await _turn(local, "Oslo"))
    assert [(r.id, r.response) for r in answered.get_function_responses()] == [
        (question.id, {"text": "Oslo"})
    ]
    assert reply.text == "Sunny in Oslo."
    (asked_in, _), (answered_in, _) = executor.seen
    assert asked_in == answered_in
    session = await local.session_service.get_session(app_name="local", user_id="u", session_id="s")
    assert session is not None
    assert session.pending == []


async def test_w6_a2a_failed_remote_task_is_an_error_event(
    sample: tuple[str, SampleExecutor],
) -> None:
    url, _ = sample
    events = _remote_events(await _turn(_root(RemoteA2AAgent(name="weather", url=url)), "fail"))
    assert events[-1].error_code == "RemoteAgentFailedError"
    assert "failed: out of quota" in (events[-1].error_message or "")


async def test_w6_a2a_remote_answer_that_ends_before_its_task_is_an_error_event(
    sample: tuple[str, SampleExecutor],
) -> None:
    url, _ = sample
    events = _remote_events(await _turn(_root(RemoteA2AAgent(name="weather", url=url)), "stop"))
    assert events[-1].error_code == "RemoteAgentFailedError"
    assert "ended before its task finished" in (events[-1].error_message or "")


async def test_w6_a2a_remote_that_hangs_times_out_into_an_error_event(
    sample: tuple[str, SampleExecutor],
) -> None:
    url, _ = sample
    remote = RemoteA2AAgent(name="weather", url=url, timeout=0.5)
    # The guard only stops a broken test from hanging the suite; the agent's own 0.5 s
    # timeout is what ends the run.
    events = _remote_events(await asyncio.wait_for(_turn(_root(remote), "hang"), timeout=30))
    assert [e.error_code for e in events] == [RemoteAgentTimeoutError.__name__]
    assert "did not answer within 0.5 s" in (events[0].error_message or "")


# -- unreachable agents and bad cards ---------------------------------------------------------


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


async def test_w6_a2a_unreachable_agent_is_an_error_event_and_a_tool_error() -> None:
    url = _closed_port_url()
    events = _remote_events(await _turn(_root(RemoteA2AAgent(name="weather", url=url)), "hi"))
    assert [e.error_code for e in events] == [RemoteAgentUnreachableError.__name__]
    assert url in (events[0].error_message or "")
    with pytest.raises(RemoteAgentUnreachableError):
        await RemoteA2AAgent(name="weather", url=url).get_card()
    tool = AgentTool(RemoteA2AAgent(name="weather", url=url, description="Weather."))
    model = ScriptedModel([FunctionCall(name="weather", args={"request": "Oslo?"}), "Sorry."])
    tool_events = await _turn(Runner(agent=Agent(name="root", model=model, tools=[tool])), "?")
    response = tool_events[1].get_function_responses()[0].response
    assert "cannot be reached" in response["error"]


@pytest.fixture
async def bad_cards() -> AsyncIterator[str]:
    async def not_json(_: Any) -> PlainTextResponse:
        return PlainTextResponse("<html>hello</html>")

    async def no_interface(_: Any) -> JSONResponse:
        return JSONResponse({"name": "x", "description": "no way to call me"})

    async def broken_rpc_card(request: Any) -> JSONResponse:
        from a2a.server.request_handlers.response_helpers import agent_card_to_dict

        url = str(request.base_url).rstrip("/") + "/broken-rpc"
        return JSONResponse(agent_card_to_dict(_sample_card(url, streaming=False)))

    async def broken_rpc(_: Any) -> PlainTextResponse:
        return PlainTextResponse("oops", status_code=500)

    app = Starlette(
        routes=[
            Route("/not-json/.well-known/agent-card.json", not_json),
            Route("/no-interface/.well-known/agent-card.json", no_interface),
            Route("/broken-rpc/.well-known/agent-card.json", broken_rpc_card),
            Route("/broken-rpc", broken_rpc, methods=["POST"]),
        ]
    )
    async with serve(app) as url:
        yield url


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("/missing", "no agent card at"),
        ("/not-json", "is not JSON"),
        ("/no-interface", "offers no JSON-RPC interface"),
    ],
)
async def test_w6_a2a_bad_agent_card_is_a_clear_error(
    bad_cards: str, path: str, problem: str
) -> None:
    remote = RemoteA2AAgent(name="weather", url=bad_cards + path)
    with pytest.raises(AgentCardError, match=problem):
        await remote.get_card()
    events = _remote_events(await _turn(_root(remote), "hi"))
    assert [e.error_code for e in events] == [AgentCardError.__name__]


async def test_w6_a2a_http_error_from_the_remote_is_a_failure_not_unreachable(
    bad_cards: str,
) -> None:
    from rondo.errors import RemoteAgentFailedError

    remote = RemoteA2AAgent(name="weather", url=bad_cards + "/broken-rpc")
    events = _remote_events(await _turn(_root(remote), "hi"))
    assert [e.error_code for e in events] == [RemoteAgentFailedError.__name__]
    assert "HTTP 500" in (events[0].error_message or "")
