"""SPEC X2: a graph workflow — nodes, routes, input mapping, interrupt and resume."""

from __future__ import annotations

from typing import Any

import pytest

from rondo import Agent, ConfigurationError, Runner
from rondo.agents.graph import Edge, Graph, GraphState, Interrupt, Node
from rondo.models import ModelRequest
from rondo.testing import ScriptedModel


async def _run(runner: Runner, message: Any) -> list[Any]:
    return [e async for e in runner.run_async(user_id="u", session_id="s", new_message=message)]


async def test_x2_routes_pick_the_next_node_and_inputs_are_mapped() -> None:
    seen: list[str] = []

    def classify(text: str) -> str:
        return "refund" if "money back" in text else "question"

    def refund(text: str, state: GraphState) -> dict[str, Any]:
        seen.append(f"refund got {text!r} for {state.input!r}")
        return {"refund_id": "R-1"}

    answer_model = ScriptedModel(["Your refund R-1 is on its way."])

    def prompt(state: GraphState) -> str:
        return f"Tell the user about refund {state.outputs['refund']['refund_id']}"

    graph = Graph(
        name="support",
        nodes=[
            Node("classify", classify),
            Node("refund", refund),
            Node("faq", lambda text: "see the FAQ"),
            Node("answer", Agent(name="writer", model=answer_model), input=prompt),
        ],
        edges=[
            Edge("classify", "refund", lambda out, state: out == "refund"),
            Edge("classify", "faq"),
            ("refund", "answer"),
        ],
    )
    runner = Runner(agent=graph, app_name="app")
    events = await _run(runner, "I want my money back")
    assert seen == ["refund got 'refund' for 'I want my money back'"]
    # The agent node received the mapped input, in its own scope.
    request = answer_model.requests[0]
    assert request.contents[0].text == "Tell the user about refund R-1"
    assert len(request.contents) == 1
    assert events[-1].author == "support"
    assert events[-1].text == "Your refund R-1 is on its way."

    faq_events = await _run(Runner(agent=graph, app_name="app2"), "what are your hours?")
    assert faq_events[-1].text == "see the FAQ"


async def test_x2_interrupt_pauses_and_the_answer_resumes_the_same_run() -> None:
    calls: list[str] = []

    def approve(amount: Any) -> Any:
        calls.append("approve")
        return Interrupt("Approve this refund?", payload={"amount": 40})

    def pay(decision: Any) -> str:
        calls.append(f"pay {decision}")
        return "paid" if decision.get("approved") else "declined"

    graph = Graph(
        name="refunds",
        nodes=[Node("approve", approve), Node("pay", pay)],
        edges=[("approve", "pay")],
    )
    runner = Runner(agent=graph, app_name="app")
    first = await _run(runner, "refund 40")
    pause = first[-1]
    call = pause.get_function_calls()[0]
    assert call.name == "graph_interrupt"
    assert call.args["prompt"] == "Approve this refund?"
    assert call.args["payload"] == {"amount": 40}
    assert pause.long_running_tool_ids == {call.id}
    assert pause.is_final_response()
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert [p.tool_name for p in session.pending] == ["graph_interrupt"]

    second = await _run(runner, [session.pending[0].respond({"approved": True})])
    assert calls == ["approve", "pay {'approved': True}"]
    assert second[-1].text == "paid"
    assert second[-1].run_id == first[-1].run_id  # resumed, not restarted
    after = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert after is not None
    assert after.pending == []


async def test_x2_agent_nodes_see_only_their_own_scope() -> None:
    first_model = ScriptedModel(["first output"])

    def second_prompt(request: ModelRequest) -> str:
        texts = [c.text for c in request.contents]
        assert texts == ["first output"]  # the mapped input only, no other node's chatter
        return "second output"

    graph = Graph(
        name="chain",
        nodes=[
            Node("one", Agent(name="one", model=first_model)),
            Node("two", Agent(name="two", model=ScriptedModel([second_prompt]))),
        ],
        edges=[("one", "two")],
    )
    events = await _run(Runner(agent=graph, app_name="app"), "start")
    assert first_model.requests[0].contents[0].text == "start"
    assert events[-1].text == "second output"


async def test_x2_a_graph_that_never_ends_is_stopped() -> None:
    looping = Graph(name="loop", nodes=[Node("a", lambda x: x)], edges=[("a", "a")], max_steps=5)
    with pytest.raises(ConfigurationError, match="5 steps"):
        await _run(Runner(agent=looping, app_name="app"), "go")


def test_x2_bad_graphs_fail_at_construction() -> None:
    with pytest.raises(ConfigurationError, match="unknown node"):
        Graph(name="g", nodes=[Node("a", lambda x: x)], edges=[("a", "b")])
    with pytest.raises(ConfigurationError, match="two nodes"):
        Graph(name="g", nodes=[Node("a", lambda x: x), Node("a", lambda x: x)])
