"""SPEC C — contents: history is not copied, it is rebuilt (C1, C3, C4, C6, C7, C8)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import rondo
from rondo import (
    Agent,
    Content,
    Event,
    FunctionCall,
    FunctionResponse,
    LongRunningFunctionTool,
    ParallelAgent,
    Part,
    Runner,
)
from rondo.flow.contents import NUDGE_TEXT, is_visible_branch
from rondo.models import ModelRequest
from rondo.testing import ScriptedModel

from ._support import (
    APP,
    agent_call,
    agent_response,
    agent_text,
    collect,
    response_message,
    seed_session,
    stored,
    texts,
    user_text,
)


def lookup(city: str) -> dict[str, Any]:
    return {"city": city}


def _shape(request: ModelRequest) -> list[tuple[str, str]]:
    """(role, what) per content: text, call:<id>, resp:<id>=<response>."""
    out: list[tuple[str, str]] = []
    for content in request.contents:
        for part in content.parts:
            if part.function_call is not None:
                out.append((content.role, f"call:{part.function_call.id}"))
            elif part.function_response is not None:
                r = part.function_response
                out.append((content.role, f"resp:{r.id}={r.response}"))
            elif part.text is not None:
                out.append((content.role, part.text))
    return out


# -- C1 --------------------------------------------------------------------------------------


def test_c1_branch_visibility_rule():
    assert is_visible_branch("agent_1.agent_2", "")
    assert is_visible_branch("agent_1.agent_2", "agent_1")
    assert is_visible_branch("agent_1.agent_2", "agent_1.agent_2")
    assert not is_visible_branch("agent_1.agent_2", "agent_0")
    assert not is_visible_branch("agent_1.agent_2", "agent_1.agent_20")
    assert not is_visible_branch("a.b", "a.bc")
    assert not is_visible_branch("a", "a.b")  # a parent does not see its children's branch
    assert is_visible_branch("", "anything")


async def test_c1_branches_filter_the_history_a_workflow_child_sees():
    model_a = ScriptedModel(["a answers"])
    model_b = ScriptedModel(["b answers"])
    a = Agent(name="a", model=model_a)
    b = Agent(name="b", model=model_b)
    par = ParallelAgent(name="par", sub_agents=[a, b])
    runner = Runner(agent=par, app_name=APP)
    await seed_session(
        runner,
        [
            user_text("u-root"),
            agent_text("a", "a-own", branch="par.a"),
            agent_text("b", "b-own", branch="par.b"),
            agent_text("x", "x-prefix-lookalike", branch="par.ab"),
            agent_text("y", "y-other-tree", branch="other"),
            agent_text("par", "par-said", branch="par"),
        ],
    )
    events = await collect(runner, "go")
    assert {(e.author, e.branch) for e in events} == {("a", "par.a"), ("b", "par.b")}

    def seen(model: ScriptedModel) -> list[list[str]]:
        return [texts(c) for c in model.requests[0].contents]

    context = ["For context:", "[par] said: par-said"]
    assert seen(model_a) == [["u-root"], ["a-own"], context, ["go"]]
    assert seen(model_b) == [["u-root"], ["b-own"], context, ["go"]]


# -- C3 --------------------------------------------------------------------------------------


async def test_c3_other_agents_events_become_user_role_context():
    model = ScriptedModel(["writing"])
    runner = Runner(agent=Agent(name="writer", model=model), app_name=APP)
    await seed_session(
        runner,
        [
            user_text("find and write"),
            agent_text("researcher", "I found three papers"),
            agent_call("researcher", "search", {"query": "rondo loops"}, "s1"),
            agent_response("researcher", "search", {"hits": 3}, "s1"),
        ],
    )
    await collect(runner, "now write")
    contents = model.requests[0].contents
    assert [c.role for c in contents] == ["user", "user", "user", "user", "user"]
    assert texts(contents[1]) == ["For context:", "[researcher] said: I found three papers"]
    head, call_text = texts(contents[2])
    assert head == "For context:"
    assert call_text.startswith("[researcher] called tool `search` with parameters: ")
    assert "query" in call_text
    assert "rondo loops" in call_text
    head, result_text = texts(contents[3])
    assert head == "For context:"
    assert result_text.startswith("[researcher] `search` tool returned result: ")
    assert "hits" in result_text
    assert "3" in result_text
    # No foreign call or response part reaches the model as such.
    for content in contents[1:4]:
        assert all(p.function_call is None and p.function_response is None for p in content.parts)
    assert texts(contents[4]) == ["now write"]


async def test_c3_a_transfer_target_sees_the_callers_turn_as_context_and_its_own_as_model():
    model = ScriptedModel(
        [
            FunctionCall(name="transfer_to_agent", args={"agent_name": "expert"}),
            "expert first",
            "expert second",
        ]
    )
    expert = Agent(name="expert", model=model)
    root = Agent(name="root", model=model, sub_agents=[expert])
    runner = Runner(agent=root, app_name=APP)
    await collect(runner, "help me")
    expert_request = model.requests[1]
    shapes = [(c.role, texts(c)) for c in expert_request.contents]
    assert shapes[0] == ("user", ["help me"])
    assert shapes[1][0] == "user"
    assert shapes[1][1][0] == "For context:"
    assert shapes[1][1][1].startswith("[root] called tool `transfer_to_agent` with parameters: ")
    assert shapes[2][0] == "user"
    assert shapes[2][1][1].startswith("[root] `transfer_to_agent` tool returned result: ")
    # Next message goes back to the expert; its own answer is model-role history.
    await collect(runner, "more")
    last = model.requests[2]
    assert [(c.role, texts(c)) for c in last.contents][-2:] == [
        ("model", ["expert first"]),
        ("user", ["more"]),
    ]


# -- C6 --------------------------------------------------------------------------------------


def _agent(model: ScriptedModel) -> Agent:
    long_tool = LongRunningFunctionTool(lambda job: None, name="long_tool")
    return Agent(name="helper", model=model, tools=[long_tool, lookup])


async def test_c6_orphan_responses_with_ids_are_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
):
    model = ScriptedModel(["ok"])
    runner = Runner(agent=_agent(model), app_name=APP)
    await seed_session(
        runner,
        [
            user_text("start"),
            agent_response("helper", "lookup", {"ghost": True}, "ghost-1"),
            agent_text("helper", "hello"),
        ],
    )
    with caplog.at_level(logging.WARNING, logger="rondo"):
        await collect(runner, "next")
    assert _shape(model.requests[0]) == [
        ("user", "start"),
        ("model", "hello"),
        ("user", "next"),
    ]
    assert any("ghost-1" in r.getMessage() for r in caplog.records)
    # The prompt view changed; the stored history did not.
    session = await stored(runner)
    assert any(r.id == "ghost-1" for e in session.events for r in e.get_function_responses())


async def test_c6_latest_response_pair_moves_to_the_end_keeping_unrelated_tool_exchanges():
    model = ScriptedModel(["job finished"])
    runner = Runner(agent=_agent(model), app_name=APP)
    await seed_session(
        runner,
        [
            user_text("start the job"),
            agent_call("helper", "long_tool", {"job": "x"}, "call-a"),
            agent_response("helper", "long_tool", {"status": "pending"}, "call-a"),
            user_text("meanwhile, weather?"),
            agent_call("helper", "lookup", {"city": "Oslo"}, "call-b"),
            agent_response("helper", "lookup", {"city": "Oslo"}, "call-b"),
            agent_text("helper", "Oslo is fine"),
        ],
    )
    await collect(runner, response_message("long_tool", {"status": "done"}, "call-a"))
    shape = _shape(model.requests[0])
    assert shape[0] == ("user", "start the job")
    # The unrelated exchange is kept, as a pair.
    i = shape.index(("model", "call:call-b"))
    assert shape[i + 1] == ("user", "resp:call-b={'city': 'Oslo'}")
    # The latest response's pair is at the end; the newer response replaced the older one.
    assert shape[-2:] == [("model", "call:call-a"), ("user", "resp:call-a={'status': 'done'}")]
    assert ("user", "resp:call-a={'status': 'pending'}") not in shape
    assert i < len(shape) - 2


async def test_c6_the_whole_history_is_repaired_and_the_latest_response_wins():
    model = ScriptedModel(["ok"])
    runner = Runner(agent=_agent(model), app_name=APP)
    await seed_session(
        runner,
        [
            user_text("go"),
            agent_call("helper", "long_tool", {"job": "x"}, "call-a"),
            agent_response("helper", "long_tool", {"status": "pending"}, "call-a"),
            user_text("are you done?"),
            agent_response("helper", "long_tool", {"status": "done"}, "call-a"),
            agent_text("helper", "it is done"),
        ],
    )
    await collect(runner, "thanks")
    shape = _shape(model.requests[0])
    call_at = shape.index(("model", "call:call-a"))
    assert shape[call_at + 1] == ("user", "resp:call-a={'status': 'done'}")
    assert ("user", "resp:call-a={'status': 'pending'}") not in shape
    assert sum(1 for s in shape if s[1].startswith("resp:call-a")) == 1
    assert shape[0] == ("user", "go")
    assert shape[-1] == ("user", "thanks")
    assert ("user", "are you done?") in shape
    assert ("model", "it is done") in shape


def _two_turn_answer() -> Content:
    return Content(
        role="user",
        parts=[
            *response_message("long_tool", {"status": "done"}, "call-a").parts,
            *response_message("long_tool", {"status": "done"}, "call-b").parts,
        ],
    )


async def test_c6_unrepairable_mixes_are_an_error():
    model = ScriptedModel(["never"])
    runner = Runner(agent=_agent(model), app_name=APP)
    await seed_session(
        runner,
        [
            user_text("go"),
            agent_call("helper", "long_tool", {"job": "x"}, "call-a"),
            user_text("and another"),
            agent_call("helper", "long_tool", {"job": "y"}, "call-b"),
            agent_text("helper", "both jobs started"),
        ],
    )
    # One message answers calls from two different model turns: they cannot be paired.
    with pytest.raises(rondo.ContentsError, match=r"call-a|call-b"):
        await collect(runner, _two_turn_answer())
    assert model.calls == 0


async def test_c6_a_two_turn_answer_right_after_a_call_is_an_error_or_paired_correctly():
    model = ScriptedModel(["ok"])
    runner = Runner(agent=_agent(model), app_name=APP)
    await seed_session(
        runner,
        [
            user_text("go"),
            agent_call("helper", "long_tool", {"job": "x"}, "call-a"),
            user_text("and another"),
            agent_call("helper", "long_tool", {"job": "y"}, "call-b"),
        ],
    )
    try:
        await collect(runner, _two_turn_answer())
    except rondo.ContentsError:
        return
    shape = _shape(model.requests[0])
    done = "={'status': 'done'}"
    for cid in ("call-a", "call-b"):
        assert [s for s in shape if s[1].startswith(f"resp:{cid}")] == [
            ("user", f"resp:{cid}{done}")
        ]
        at = shape.index(("model", f"call:{cid}"))
        assert shape.index(("user", f"resp:{cid}{done}")) > at


# -- C7 --------------------------------------------------------------------------------------


async def test_c7_empty_parts_are_dropped():
    model = ScriptedModel(["ok"])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    await seed_session(
        runner,
        [
            user_text("hi"),
            Event(
                author="helper",
                content=Content(role="model", parts=[Part(text=""), Part(), Part(text="hello")]),
            ),
        ],
    )
    await collect(runner, "again")
    contents = model.requests[0].contents
    assert [[p.text for p in c.parts] for c in contents] == [["hi"], ["hello"], ["again"]]
    assert all(not p.is_empty() for c in contents for p in c.parts)


async def test_c7_framework_call_ids_are_stripped_model_ids_kept():
    model = ScriptedModel(
        [
            [
                FunctionCall(name="lookup", args={"city": "Oslo"}),
                FunctionCall(name="lookup", args={"city": "Rome"}, id="model-given"),
            ],
            "done",
        ]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[lookup]), app_name=APP)
    events = await collect(runner, "go")
    stored_ids = [c.id for c in events[0].get_function_calls()]
    assert stored_ids[0] is not None
    assert stored_ids[0].startswith("rondo-")
    assert stored_ids[1] == "model-given"
    assert [r.id for r in events[1].get_function_responses()] == stored_ids
    second = model.requests[1]
    calls = [p.function_call for c in second.contents for p in c.parts if p.function_call]
    responses = [
        p.function_response for c in second.contents for p in c.parts if p.function_response
    ]
    assert [(c.name, c.args, c.id) for c in calls] == [
        ("lookup", {"city": "Oslo"}, None),
        ("lookup", {"city": "Rome"}, "model-given"),
    ]
    assert [r.id for r in responses] == [None, "model-given"]


async def test_c7_a_user_nudge_is_appended_when_the_last_content_is_not_user():
    assert NUDGE_TEXT == (
        "Continue processing previous requests as instructed. "
        "Exit or provide a summary if no more outputs are needed."
    )
    model = ScriptedModel(["continuing"])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    await seed_session(runner, [user_text("hi"), agent_text("helper", "hello")])
    await collect(runner, None)
    contents = model.requests[0].contents
    assert [(c.role, texts(c)) for c in contents] == [
        ("user", ["hi"]),
        ("model", ["hello"]),
        ("user", [NUDGE_TEXT]),
    ]
    # The nudge is part of the prompt only, never of the stored history.
    session = await stored(runner)
    assert all(e.text != NUDGE_TEXT for e in session.events)


# -- C8 --------------------------------------------------------------------------------------


async def test_c8_include_contents_none_sends_only_the_current_turn():
    model = ScriptedModel(
        ["first answer", FunctionCall(name="lookup", args={"city": "Oslo"}, id="c1"), "Oslo ok"]
    )
    agent = Agent(name="helper", model=model, tools=[lookup], include_contents="none")
    runner = Runner(agent=agent, app_name=APP)
    await collect(runner, "first question")
    await collect(runner, "second question")
    assert _shape(model.requests[0]) == [("user", "first question")]
    assert _shape(model.requests[1]) == [("user", "second question")]
    # Tool calls and responses of the current turn are kept.
    assert _shape(model.requests[2]) == [
        ("user", "second question"),
        ("model", "call:c1"),
        ("user", "resp:c1={'city': 'Oslo'}"),
    ]


async def test_c8_another_agents_event_starts_the_current_turn():
    model = ScriptedModel(["ok"])
    agent = Agent(name="helper", model=model, include_contents="none")
    runner = Runner(agent=agent, app_name=APP)
    await seed_session(
        runner,
        [
            user_text("old question"),
            agent_text("helper", "old answer"),
            agent_text("planner", "the plan is ready"),
        ],
    )
    await collect(runner, None)
    assert [texts(c) for c in model.requests[0].contents] == [
        ["For context:", "[planner] said: the plan is ready"]
    ]


async def test_c8_falls_back_to_the_full_history_when_no_turn_start_is_found():
    model = ScriptedModel(["ok"])
    agent = Agent(name="helper", model=model, include_contents="none")
    runner = Runner(agent=agent, app_name=APP)
    await seed_session(runner, [agent_text("helper", "a1"), agent_text("helper", "a2")])
    await collect(runner, None)
    assert [(c.role, texts(c)) for c in model.requests[0].contents] == [
        ("model", ["a1"]),
        ("model", ["a2"]),
        ("user", [NUDGE_TEXT]),
    ]


async def test_c8_the_turn_start_is_searched_within_branch_and_scope():
    model_a = ScriptedModel(["a ok"])
    model_b = ScriptedModel(["b ok"])
    a = Agent(name="a", model=model_a, include_contents="none")
    b = Agent(name="b", model=model_b, include_contents="none")
    runner = Runner(agent=ParallelAgent(name="par", sub_agents=[a, b]), app_name=APP)
    await seed_session(
        runner,
        [
            user_text("the question"),
            agent_text("z", "z on b's branch", branch="par.b"),
            agent_text("w", "w in another scope", branch="par.a", isolation_scope="task-1"),
        ],
    )
    await collect(runner, None)
    # For a, z's event is on a sibling branch and w's in another scope: the user starts the turn.
    assert [texts(c) for c in model_a.requests[0].contents] == [["the question"]]
    # For b, z's event is visible and starts the turn.
    assert [texts(c) for c in model_b.requests[0].contents] == [
        ["For context:", "[z] said: z on b's branch"]
    ]


# -- C4 --------------------------------------------------------------------------------------


def _confirmation_exchange(author: str) -> list[Event]:
    """A guarded call, its confirmation request and the human's answer, as H1/H2 store them."""
    original = {"id": "orig-1", "name": "pay", "args": {"amount": 99}}
    return [
        agent_call(author, "pay", {"amount": 99}, "orig-1"),
        agent_response(author, "pay", {"error": "confirmation required"}, "orig-1"),
        agent_call(
            author,
            "adk_request_confirmation",
            {"originalFunctionCall": original, "toolConfirmation": {"confirmed": False}},
            "conf-1",
        ),
        Event(
            author="user",
            content=response_message("adk_request_confirmation", {"confirmed": True}, "conf-1"),
        ),
        agent_call(author, "adk_request_credential", {"authConfig": {"secret": "x"}}, "cred-1"),
    ]


@pytest.mark.parametrize("author", ["a", "other"])
async def test_c4_confirmation_and_credential_requests_never_reach_the_model(author: str) -> None:
    model = ScriptedModel(["ok"])
    runner = Runner(agent=Agent(name="a", model=model, sub_agents=[]), app_name=APP)
    await seed_session(runner, [user_text("pay 99"), *_confirmation_exchange(author)])
    await collect(runner, "done?")
    request = model.requests[0]
    rendered = repr(request.contents)
    assert "adk_request_confirmation" not in rendered
    assert "adk_request_credential" not in rendered
    assert "toolConfirmation" not in rendered
    assert "secret" not in rendered
    # The guarded call itself is ordinary history: it stays visible.
    assert "pay" in rendered


async def test_c4_transcription_events_become_text_parts() -> None:
    model = ScriptedModel(["ok"])
    runner = Runner(agent=Agent(name="a", model=model), app_name=APP)
    await seed_session(
        runner,
        [
            Event(author="user", input_transcription="spoken question"),
            Event(author="a", output_transcription="spoken answer"),
        ],
    )
    await collect(runner, "typed")
    assert _shape(model.requests[0])[:2] == [
        ("user", "spoken question"),
        ("model", "spoken answer"),
    ]


async def test_c6_a_late_answer_keeps_the_other_answers_of_the_record_it_replaces() -> None:
    """Found by the property suite: a record answering two calls, one of them answered again
    later, must keep its answer to the other call."""
    model = ScriptedModel(["ok"])
    runner = Runner(agent=Agent(name="a", model=model, tools=[lookup]), app_name=APP)
    both = Event(
        author="a",
        content=Content(
            role="user",
            parts=[
                Part(function_response=FunctionResponse(name="lookup", response={"v": 1}, id="c1")),
                Part(function_response=FunctionResponse(name="lookup", response={"v": 2}, id="c2")),
            ],
        ),
    )
    await seed_session(
        runner,
        [
            user_text("go"),
            agent_call("a", "lookup", {"city": "x"}, "c1"),
            agent_call("a", "lookup", {"city": "y"}, "c2"),
            both,
            user_text("and now"),
        ],
    )
    await collect(runner, response_message("lookup", {"v": "late"}, "c1"))
    shape = _shape(model.requests[0])
    assert "resp:c2={'v': 2}" in [what for _, what in shape]
    assert shape[-2:] == [("model", "call:c1"), ("user", "resp:c1={'v': 'late'}")]
