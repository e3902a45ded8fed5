"""SPEC H4 (issue 18 item 1): a remote A2A agent whose task is input-required pauses the
whole run — reached directly (a sub-agent) or through an `AgentTool` — on a real rondo A2A
server on loopback, and on an a2a-sdk server that asks its question in text.

The waiting call is listed on the top session (with its path through the AgentTool call),
the parent's model is not called again, the answer given there (`pending.respond(...)`)
reaches the same remote task (same A2A task and context ids), the remote continues, and the
parent receives the remote's real answer — one run id from the pause to the end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests._a2a import serve, weather_runner

pytestmark = pytest.mark.integration

from rondo import Agent, AgentTool, Event, FunctionCall, Runner  # noqa: E402
from rondo.a2a import A2AApp, RemoteA2AAgent  # noqa: E402
from rondo.sessions.base import Session  # noqa: E402
from rondo.testing import ScriptedModel  # noqa: E402
from rondo.tools import LongRunningFunctionTool  # noqa: E402

WIRINGS = ["sub_agent", "agent_tool"]


def ask_human(question: str) -> None:
    """Ask the human a question; the answer arrives later."""
    return None  # no response yet: the remote run pauses on this call


class Local:
    """A local root agent that reaches the remote `weather` agent one way."""

    def __init__(self, wiring: str, url: str) -> None:
        remote = RemoteA2AAgent(name="weather", url=url, description="Weather.")
        self.wiring = wiring
        if wiring == "agent_tool":
            call = FunctionCall(name="weather", args={"request": "weather?"}, id="c1")
            self.model = ScriptedModel([call, "root: it is sunny", "root: again"])
            agent = Agent(name="root", model=self.model, tools=[AgentTool(remote)])
        else:
            transfer = FunctionCall(name="transfer_to_agent", args={"agent_name": "weather"})
            self.model = ScriptedModel([transfer, "root: again"])
            agent = Agent(name="root", model=self.model, sub_agents=[remote])
        self.runner = Runner(agent=agent, app_name="local")

    async def session(self, session_id: str = "s") -> Session:
        found = await self.runner.session_service.get_session(
            app_name="local", user_id="u", session_id=session_id
        )
        assert found is not None
        return found

    def path(self) -> tuple[str, ...]:
        return ("root", "weather@c1") if self.wiring == "agent_tool" else ()

    def answer_to_c1(self, session: Session) -> dict[str, Any] | None:
        for event in session.events:
            for response in event.get_function_responses():
                if response.id == "c1":
                    return dict(response.response)
        return None


def _a2a_ids(events: list[Event]) -> set[tuple[str, str]]:
    return {
        (str(e.custom_metadata["a2a_task_id"]), str(e.custom_metadata["a2a_context_id"]))
        for e in events
        if e.author == "weather" and e.custom_metadata and e.custom_metadata.get("a2a_task_id")
    }


async def _remote_events(local: Local) -> list[Event]:
    """The remote agent's records: in the top session, or in the AgentTool call's session."""
    session_id = "s~c1" if local.wiring == "agent_tool" else "s"
    return [e for e in (await local.session(session_id)).events if e.author == "weather"]


@pytest.fixture
async def rondo_remote() -> AsyncIterator[tuple[str, Runner]]:
    remote = weather_runner(
        [
            FunctionCall(name="ask_human", args={"question": "Which city?"}, id="r1"),
            "Sunny in Oslo.",
        ],
        tools=[LongRunningFunctionTool(ask_human)],
    )
    async with serve(A2AApp(remote)) as url:
        yield url, remote


@pytest.mark.parametrize("wiring", WIRINGS)
async def test_h4_a_remote_input_required_task_pauses_the_whole_run_and_its_answer_continues_it(
    wiring: str, rondo_remote: tuple[str, Runner]
) -> None:
    url, remote = rondo_remote
    local = Local(wiring, url)
    paused = await local.runner.run_to_result(user_id="u", session_id="s", new_message="go")

    assert local.model.calls == 1  # the parent's model is not called again
    session = await local.session()
    assert [(p.tool_name, p.kind, p.agent_name, p.path) for p in session.pending] == [
        ("ask_human", "long_running", "weather", local.path())
    ]
    assert session.pending[0].args == {"question": "Which city?"}
    assert paused.pending == session.pending
    assert local.answer_to_c1(session) is None  # the AgentTool call stays open
    asked_in = _a2a_ids(await _remote_events(local))
    assert len(asked_in) == 1

    done = await local.runner.run_to_result(
        user_id="u", session_id="s", new_message=[session.pending[0].respond("Oslo")]
    )
    assert done.run_id == paused.run_id  # one run from the pause to the end
    assert done.pending == []
    assert (await local.session()).pending == []
    # The answer reached the remote's waiting call, in the same A2A task and context.
    remote_model: Any = remote.agent.model  # pyright: ignore[reportAttributeAccessIssue]
    assert remote_model.calls == 2
    seen = [
        p.function_response
        for c in remote_model.requests[-1].contents
        for p in c.parts
        if p.function_response is not None
    ]
    assert [(r.id, r.response) for r in seen] == [("r1", {"text": "Oslo"})]
    assert _a2a_ids(await _remote_events(local)) == asked_in
    if wiring == "agent_tool":
        # The parent's call got the remote's real answer, then the parent went on.
        assert local.answer_to_c1(await local.session()) == {"result": "Sunny in Oslo."}
        assert done.text == "root: it is sunny"
        assert local.model.calls == 2
    else:
        assert done.text == "Sunny in Oslo."
        assert local.model.calls == 1


# -- a remote that asks its question in text (an a2a-sdk server) --------------------------------


@pytest.fixture
async def asking_remote() -> AsyncIterator[tuple[str, list[tuple[str, str, str]]]]:
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        Part,
        Task,
        TaskState,
        TaskStatus,
    )
    from starlette.applications import Starlette

    seen: list[tuple[str, str, str]] = []  # (task id, context id, text) of every message

    class Asking(AgentExecutor):
        """Asks which city in text (input-required, no calls), then answers."""

        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            text = context.get_user_input()
            task_id, context_id = context.task_id or "", context.context_id or ""
            seen.append((task_id, context_id, text))
            updater = TaskUpdater(event_queue, task_id, context_id)
            if context.current_task is None:
                assert context.message is not None
                status = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
                task = Task(
                    id=task_id, context_id=context_id, status=status, history=[context.message]
                )
                await event_queue.enqueue_event(task)
                await updater.start_work()
                await updater.requires_input(updater.new_agent_message([Part(text="Which city?")]))
                return
            await updater.start_work()
            await updater.add_artifact([Part(text=f"Sunny in {text}.")])
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            raise NotImplementedError

    where: dict[str, str] = {}
    card = AgentCard(
        name="asking",
        description="Asks, then answers.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url="http://placeholder/", protocol_binding="JSONRPC")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="ask", name="ask", description="Asks.", tags=["ask"])],
    )

    async def served_card(card: AgentCard) -> AgentCard:
        out = AgentCard()
        out.CopyFrom(card)
        out.supported_interfaces[0].url = where["url"]
        return out

    handler = DefaultRequestHandler(
        agent_executor=Asking(), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(
        routes=[
            *create_agent_card_routes(card, card_modifier=served_card),
            *create_jsonrpc_routes(handler, rpc_url="/"),
        ]
    )
    async with serve(app) as url:
        where["url"] = url + "/"
        yield url, seen
        await handler.aclose()


@pytest.mark.parametrize("wiring", WIRINGS)
async def test_h4_a_remote_question_in_text_pauses_the_run_and_a_text_answer_reaches_its_task(
    wiring: str, asking_remote: tuple[str, list[tuple[str, str, str]]]
) -> None:
    url, seen = asking_remote
    local = Local(wiring, url)
    paused = await local.runner.run_to_result(user_id="u", session_id="s", new_message="go")
    assert local.model.calls == 1
    [pending] = (await local.session()).pending
    assert (pending.tool_name, pending.kind, pending.agent_name, pending.path) == (
        "a2a_input_required",
        "long_running",
        "weather",
        local.path(),
    )
    assert pending.args["question"] == "Which city?"

    done = await local.runner.run_to_result(
        user_id="u", session_id="s", new_message=[pending.respond("Oslo")]
    )
    assert done.run_id == paused.run_id
    assert (await local.session()).pending == []
    (asked_task, asked_context, _), (task, context, text) = seen
    assert (task, context, text) == (asked_task, asked_context, "Oslo")  # the same task, as text
    if wiring == "agent_tool":
        assert local.answer_to_c1(await local.session()) == {"result": "Sunny in Oslo."}
        assert done.text == "root: it is sunny"
    else:
        assert done.text == "Sunny in Oslo."
