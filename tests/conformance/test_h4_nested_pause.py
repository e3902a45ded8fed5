"""SPEC H4: a pause at any depth pauses the whole run, and its answer on the top session
continues the nested run.

A worker whose `delete_file` needs confirmation is reached three ways — as an `AgentTool`,
as a `Harness` task, as a `mode="task"` sub-agent. In each, on every store: the parent's model
is not called again while the confirmation waits, the parent's call has no response, the
request is listed on the top session with its path, the answer there runs the tool exactly
once (never on rejection), the parent's call receives the worker's real answer, and the
parent goes on — one run id from the pause to the end.
"""

from __future__ import annotations

from typing import Any

import pytest

from rondo import Agent, FunctionCall, FunctionTool, Runner
from rondo.agents.harness import Harness
from rondo.events import Event
from rondo.lifecycle import HITLPending, LifecycleEvent, RunEnd
from rondo.sessions.base import BaseSessionService, Session
from rondo.testing import ScriptedModel, check_stream
from rondo.tools.agent_tool import AgentTool
from tests._stores import Backend, backend, postgres_url

__all__ = ["backend", "postgres_url"]  # fixtures used by the tests below

WIRINGS = ["agent_tool", "harness_task", "task_mode"]


class World:
    """A main agent and its worker wired one way; `deleted` counts the tool's runs."""

    def __init__(
        self,
        wiring: str,
        service: BaseSessionService,
        worker_script: list[Any],
        *,
        restarted: bool = False,
    ) -> None:
        self.deleted: list[str] = []
        self.wiring = wiring

        def delete_file(path: str) -> dict[str, Any]:
            """Delete a file."""
            self.deleted.append(path)
            return {"deleted": path}

        self.worker = Agent(
            name="worker",
            model=ScriptedModel(worker_script),
            tools=[FunctionTool(delete_file, require_confirmation=True)],
            mode="task" if wiring == "task_mode" else "chat",
        )
        if wiring == "harness_task":
            call = FunctionCall(
                name="task", args={"agent_name": "worker", "prompt": "delete x"}, id="c1"
            )
        else:
            call = FunctionCall(name="worker", args={"request": "delete x"}, id="c1")
        # A restarted process continues the run: the first model calls happened before.
        script: list[Any] = ["main: done"] if restarted else [call, "main: done", "main: again"]
        self.main_model = ScriptedModel(script)
        if wiring == "agent_tool":
            self.main: Agent = Agent(
                name="main", model=self.main_model, tools=[AgentTool(self.worker)]
            )
        elif wiring == "harness_task":
            self.main = Harness("main", self.main_model, agents=[self.worker])
        else:
            self.main = Agent(name="main", model=self.main_model, sub_agents=[self.worker])
        self.runner = Runner(agent=self.main, app_name="app", session_service=service)

    async def session(self) -> Session:
        found = await self.runner.session_service.get_session(
            app_name="app", user_id="u", session_id="s"
        )
        assert found is not None
        return found

    def answer_to_c1(self, session: Session) -> dict[str, Any] | None:
        for event in session.events:
            for response in event.get_function_responses():
                if response.id == "c1":
                    return dict(response.response)
        return None


def _worker_script() -> list[Any]:
    return [FunctionCall(name="delete_file", args={"path": "x"}, id="w1"), "worker: deleted x"]


@pytest.mark.parametrize("wiring", WIRINGS)
async def test_h4_a_nested_confirmation_pauses_the_whole_run_and_its_approval_continues_it(
    wiring: str, backend: Backend
) -> None:
    world = World(wiring, backend.make(), _worker_script())
    paused = await world.runner.run_to_result(user_id="u", session_id="s", new_message="go")

    assert world.main_model.calls == 1  # the parent's model is not called again
    assert world.deleted == []
    session = await world.session()
    assert world.answer_to_c1(session) is None  # the parent's call stays open
    assert [(p.tool_name, p.kind, p.path) for p in session.pending] == [
        ("delete_file", "confirmation", ("main", "worker@c1"))
    ]
    assert session.pending[0].where == "main → worker@c1"
    assert session.pending[0].agent_name == "worker"
    assert paused.pending == session.pending
    assert paused.text == ""

    done = await world.runner.run_to_result(
        user_id="u", session_id="s", new_message=[session.pending[0].approve()]
    )
    assert world.deleted == ["x"]  # exactly once
    assert done.text == "main: done"
    assert done.run_id == paused.run_id  # one run from the pause to the end
    assert done.pending == []
    session = await world.session()
    assert session.pending == []
    answer = world.answer_to_c1(session)
    assert answer is not None
    assert answer.get("result") == "worker: deleted x"
    # The parent's model saw the worker's real answer.
    last = world.main_model.requests[-1]
    responses = [p.function_response for c in last.contents for p in c.parts if p.function_response]
    assert any(r.id == "c1" and r.response.get("result") == "worker: deleted x" for r in responses)
    # The model never saw the calls listed for the nested run.
    for content in last.contents:
        for part in content.parts:
            assert part.function_call is None or part.function_call.id == "c1"

    # Re-sending the answer does not run the tool again (it is a new message: a new turn).
    await world.runner.run_to_result(
        user_id="u", session_id="s", new_message=[paused.pending[0].approve()]
    )
    assert world.deleted == ["x"]


@pytest.mark.parametrize("wiring", WIRINGS)
async def test_h4_a_rejected_nested_call_never_runs_and_the_worker_answers_on(
    wiring: str, backend: Backend
) -> None:
    world = World(
        wiring,
        backend.make(),
        [FunctionCall(name="delete_file", args={"path": "x"}, id="w1"), "worker: refused"],
    )
    await world.runner.run_to_result(user_id="u", session_id="s", new_message="go")
    session = await world.session()
    done = await world.runner.run_to_result(
        user_id="u", session_id="s", new_message=[session.pending[0].reject("no")]
    )
    assert world.deleted == []
    assert done.text == "main: done"
    answer = world.answer_to_c1(await world.session())
    assert answer is not None
    assert answer.get("result") == "worker: refused"


@pytest.mark.parametrize("wiring", ["agent_tool", "harness_task"])
async def test_h4_the_nested_session_lives_in_the_runners_store_and_survives_a_restart(
    wiring: str, backend: Backend
) -> None:
    world = World(wiring, backend.make(), _worker_script())
    await world.runner.run_to_result(user_id="u", session_id="s", new_message="go")
    listed = await world.runner.session_service.list_sessions(app_name="app", user_id="u")
    assert sorted(s.id for s in listed.sessions) == ["s", "s~c1"]  # visible through the API
    nested = await world.runner.session_service.get_session(
        app_name="app", user_id="u", session_id="s~c1"
    )
    assert nested is not None
    assert [p.tool_name for p in nested.pending] == ["delete_file"]
    if not backend.durable:
        return
    # A new process on the same store: the answer still reaches the nested run.
    again = World(wiring, backend.make(), _worker_script()[1:], restarted=True)
    pending = (await again.session()).pending
    done = await again.runner.run_to_result(
        user_id="u", session_id="s", new_message=[pending[0].approve()]
    )
    assert again.deleted == ["x"]
    assert world.deleted == []
    assert done.text == "main: done"


@pytest.mark.parametrize("wiring", WIRINGS)
async def test_h4_the_lifecycle_stream_ends_pending_with_the_nested_call(wiring: str) -> None:
    from rondo.sessions.memory import InMemorySessionService

    world = World(wiring, InMemorySessionService(), _worker_script())
    items: list[LifecycleEvent] = [
        e async for e in world.runner.stream_async(user_id="u", session_id="s", new_message="go")
    ]
    check_stream(items)
    end = items[-1]
    assert isinstance(end, RunEnd)
    assert not end.is_abnormal
    assert [p.path for p in end.pending] == [("main", "worker@c1")]
    top = [i for i in items if isinstance(i, HITLPending) and i.agent_name == "main"]
    assert [p.path for p in top[-1].pending] == [("main", "worker@c1")]
    pending = (await world.session()).pending
    resumed = [
        e
        async for e in world.runner.stream_async(
            user_id="u", session_id="s", new_message=[pending[0].approve()]
        )
    ]
    check_stream(resumed)
    last = resumed[-1]
    assert isinstance(last, RunEnd)
    assert last.text == "main: done"
    assert last.pending == []
    assert last.run_id == end.run_id


def _harness_with_two_tasks(service: BaseSessionService) -> tuple[Runner, list[str], Agent]:
    deleted: list[str] = []

    def delete_file(path: str) -> dict[str, Any]:
        """Delete a file."""
        deleted.append(path)
        return {"deleted": path}

    def worker(name: str, path: str) -> Agent:
        return Agent(
            name=name,
            model=ScriptedModel(
                [FunctionCall(name="delete_file", args={"path": path}), f"{name}: deleted {path}"]
            ),
            tools=[FunctionTool(delete_file, require_confirmation=True)],
        )

    tasks = [
        {"agent_name": "left", "prompt": "delete a"},
        {"agent_name": "right", "prompt": "delete b"},
    ]
    main = Harness(
        "main",
        ScriptedModel([FunctionCall(name="multitask", args={"tasks": tasks}, id="m1"), "done"]),
        agents=[worker("left", "a"), worker("right", "b")],
    )
    return Runner(agent=main, app_name="app", session_service=service), deleted, main


async def _pending(runner: Runner) -> list[Any]:
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    return session.pending


async def test_h4_parallel_nested_pauses_are_listed_and_answered_one_by_one(
    backend: Backend,
) -> None:
    runner, deleted, main = _harness_with_two_tasks(backend.make())
    first = await runner.run_to_result(user_id="u", session_id="s", new_message="go")
    pending = await _pending(runner)
    assert sorted(p.path for p in pending) == [("main", "left@m1"), ("main", "right@m1")]
    assert first.pending == pending

    by_agent = {p.agent_name: p for p in pending}
    step = await runner.run_to_result(
        user_id="u", session_id="s", new_message=[by_agent["right"].approve()]
    )
    assert deleted == ["b"]
    assert [p.agent_name for p in step.pending] == ["left"]  # still waiting on the other
    assert main.model.calls == 1  # type: ignore[union-attr]
    assert step.run_id == first.run_id

    done = await runner.run_to_result(
        user_id="u", session_id="s", new_message=[by_agent["left"].approve()]
    )
    assert sorted(deleted) == ["a", "b"]
    assert done.text == "done"
    assert done.pending == []
    assert done.run_id == first.run_id
    results = done.events[-2].get_function_responses()[0].response["results"]
    assert [r["result"] for r in results] == ["left: deleted a", "right: deleted b"]


async def test_h4_parallel_nested_pauses_answered_together() -> None:
    from rondo.sessions.memory import InMemorySessionService

    runner, deleted, _ = _harness_with_two_tasks(InMemorySessionService())
    await runner.run_to_result(user_id="u", session_id="s", new_message="go")
    pending = await _pending(runner)
    done = await runner.run_to_result(
        user_id="u", session_id="s", new_message=[p.approve() for p in pending]
    )
    assert sorted(deleted) == ["a", "b"]
    assert done.text == "done"


async def test_h4_a_pause_two_levels_down_lists_the_whole_path_and_continues() -> None:
    deleted: list[str] = []

    def delete_file(path: str) -> dict[str, Any]:
        """Delete a file."""
        deleted.append(path)
        return {"deleted": path}

    leaf = Agent(
        name="leaf",
        model=ScriptedModel([FunctionCall(name="delete_file", args={"path": "z"}), "leaf ok"]),
        tools=[FunctionTool(delete_file, require_confirmation=True)],
    )
    middle = Agent(
        name="middle",
        model=ScriptedModel(
            [FunctionCall(name="leaf", args={"request": "go"}, id="c2"), "middle ok"]
        ),
        tools=[AgentTool(leaf)],
    )
    top_model = ScriptedModel(
        [FunctionCall(name="middle", args={"request": "go"}, id="c1"), "top ok"]
    )
    runner = Runner(agent=Agent(name="top", model=top_model, tools=[AgentTool(middle)]))
    paused = await runner.run_to_result(user_id="u", session_id="s", new_message="go")
    assert [p.where for p in paused.pending] == ["top → middle@c1 → leaf@c2"]
    done = await runner.run_to_result(
        user_id="u", session_id="s", new_message=[paused.pending[0].approve()]
    )
    assert deleted == ["z"]
    assert done.text == "top ok"
    assert done.run_id == paused.run_id
    assert top_model.calls == 2


async def test_h4_a_nested_pause_record_is_one_record_that_lists_the_waiting_calls() -> None:
    from rondo.sessions.memory import InMemorySessionService

    world = World("agent_tool", InMemorySessionService(), _worker_script())
    await world.runner.run_to_result(user_id="u", session_id="s", new_message="go")
    session = await world.session()
    last: Event = session.events[-1]
    waiting = last.nested_pause
    assert waiting is not None
    assert [w["call_id"] for w in waiting] == ["c1"]
    assert last.is_final_response()
    assert [c.name for c in last.get_function_calls()] == ["adk_request_confirmation"]


async def test_h4_a_graph_agent_node_that_asks_pauses_the_graph_and_its_answer_goes_on() -> None:
    from rondo.agents.graph import Graph, Node

    deleted: list[str] = []

    def delete_file(path: str) -> dict[str, Any]:
        """Delete a file."""
        deleted.append(path)
        return {"deleted": path}

    worker = Agent(
        name="worker",
        model=ScriptedModel(
            [FunctionCall(name="delete_file", args={"path": "x"}), "worker: deleted x"]
        ),
        tools=[FunctionTool(delete_file, require_confirmation=True)],
    )
    after: list[Any] = []

    def report(value: Any) -> str:
        after.append(value)
        return f"reported {value}"

    graph = Graph(
        name="flow",
        nodes=[Node("clean", worker), Node("report", report)],
        edges=[("clean", "report")],
    )
    runner = Runner(agent=graph)
    paused = await runner.run_to_result(user_id="u", session_id="s", new_message="go")
    assert after == []  # the node after the asking one did not run
    assert [p.where for p in paused.pending] == ["flow → worker@clean"]
    done = await runner.run_to_result(
        user_id="u", session_id="s", new_message=[paused.pending[0].approve()]
    )
    assert deleted == ["x"]
    assert after == ["worker: deleted x"]  # the node's real answer went on along the route
    assert done.text == "reported worker: deleted x"
    assert done.run_id == paused.run_id
    assert done.pending == []
