"""SPEC K3: context strategies beside compaction — a sliding window, trimming of large tool
results in the model's view, and summarizing compaction as a strategy of one agent — each
keeping the C rules, composable, with the stored records left whole."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from rondo import (
    Agent,
    ConfigurationError,
    Content,
    ContextStrategy,
    FunctionCall,
    FunctionResponse,
    Part,
    RunConfig,
    Runner,
    SlidingWindow,
    Summarizing,
    ToolResultTrimming,
)
from rondo.flow.compaction import SUMMARY_PREFIX, CompactionConfig
from rondo.flow.contents import NUDGE_TEXT
from rondo.models import ModelRequest
from rondo.testing import ScriptedModel


def _texts(request: ModelRequest) -> list[str]:
    return [p.text for c in request.contents for p in c.parts if p.text]


async def _say(runner: Runner, text: str, config: RunConfig | None = None) -> None:
    async for _ in runner.run_async(
        user_id="u", session_id="s", new_message=text, run_config=config
    ):
        pass


async def _stored(runner: Runner) -> Any:
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    return session


def _fake_ctx() -> Any:
    """What a strategy's `view` reads of a context: the session log's cache of derived views."""
    return SimpleNamespace(
        session=SimpleNamespace(events=SimpleNamespace(log=SimpleNamespace(derived={})))
    )


async def test_k3_sliding_window_sends_the_newest_turns_and_stores_everything() -> None:
    model = ScriptedModel([f"answer {i}" for i in range(5)])
    agent = Agent(name="a", model=model, context_strategies=[SlidingWindow(max_turns=2)])
    runner = Runner(agent=agent, app_name="app")
    for i in range(5):
        await _say(runner, f"message {i}")
    assert _texts(model.requests[-1]) == ["message 3", "answer 3", "message 4"]
    assert _texts(model.requests[1]) == ["message 0", "answer 0", "message 1"]
    session = await _stored(runner)
    assert len(session.events) == 10  # the window shapes the request, never the log


async def test_k3_sliding_window_never_splits_a_call_from_its_response() -> None:
    # A user message that carries a tool result *and* text starts a turn, but its call sits
    # in the model message before it: cutting there would orphan the response.
    call = FunctionCall(name="lookup", args={"q": 1}, id="c1")
    contents = [
        Content.user("earlier"),
        Content.model("earlier answer"),
        Content.user("message 0"),
        Content(role="model", parts=[Part(function_call=call)]),
        Content(
            role="user",
            parts=[
                Part(function_response=FunctionResponse(name="lookup", id="c1", response={"r": 1})),
                Part(text="and also this"),
            ],
        ),
        Content.model("answer 1"),
        Content.user("message 2"),
    ]
    view = SlidingWindow(max_turns=2).view(list(contents), _fake_ctx())
    assert view == contents[2:]  # moved back one turn, to keep the call with its response
    assert view[1].parts[0].function_call == call
    # A plain text turn is cut where asked.
    assert SlidingWindow(max_turns=1).view(list(contents), _fake_ctx()) == contents[6:]


async def test_k3_sliding_window_with_tools_keeps_each_exchange_whole() -> None:
    def lookup(q: int) -> dict[str, int]:
        """Look something up."""
        return {"value": q * 10}

    script: list[Any] = []
    for i in range(4):
        script += [FunctionCall(name="lookup", args={"q": i}), f"answer {i}"]
    model = ScriptedModel(script)
    agent = Agent(name="a", model=model, tools=[lookup], context_strategies=SlidingWindow(1))
    runner = Runner(agent=agent, app_name="app")
    for i in range(4):
        await _say(runner, f"message {i}")
    # The tool step of the last turn sees the turn's call and its response, nothing older.
    last = model.requests[-1]
    calls = [p.function_call for c in last.contents for p in c.parts if p.function_call]
    responses = [p.function_response for c in last.contents for p in c.parts if p.function_response]
    assert [c.args["q"] for c in calls] == [3]
    assert [r.response["value"] for r in responses] == [30]
    assert last.contents[0].text == "message 3"


async def test_k3_sliding_window_by_tokens_keeps_at_least_the_newest_turn() -> None:
    model = ScriptedModel([f"answer {i}" for i in range(4)])
    # Each turn is ~400 chars (~100 tokens): a 250-token window holds two turns.
    window = SlidingWindow(max_tokens=250)
    runner = Runner(agent=Agent(name="a", model=model, context_strategies=[window]), app_name="app")
    for i in range(4):
        await _say(runner, f"message {i} " + "x" * 380)
    texts = _texts(model.requests[-1])
    assert [t.split(" ")[1] for t in texts if t.startswith("message")] == ["2", "3"]
    tiny = Runner(
        agent=Agent(
            name="a",
            model=ScriptedModel(["one", "two"]),
            context_strategies=[SlidingWindow(max_tokens=1)],
        ),
        app_name="app",
    )
    await _say(tiny, "first " + "y" * 100)
    await _say(tiny, "second " + "y" * 100)
    model_seen = tiny.agent.model
    assert isinstance(model_seen, ScriptedModel)
    assert _texts(model_seen.requests[-1])[0].startswith("second")  # never an empty request


async def test_k3_sliding_window_step_keeps_the_prefix_byte_identical_between_moves() -> None:
    model = ScriptedModel([f"answer {i}" for i in range(9)])
    agent = Agent(name="a", model=model, context_strategies=[SlidingWindow(4, step=3)])
    runner = Runner(agent=agent, app_name="app")
    for i in range(9):
        await _say(runner, f"message {i}")
    firsts = [r.contents[0].text for r in model.requests]
    # Full until turn 5; then the start moves only every third turn.
    assert firsts == [f"message {n}" for n in (0, 0, 0, 0, 3, 3, 3, 6, 6)]
    kept = [sum(t.startswith("message") for t in _texts(r)) for r in model.requests[4:]]
    assert all(2 <= k <= 4 for k in kept)  # between max_turns - step + 1 and max_turns


async def test_k3_tool_result_trimming_in_the_view_only() -> None:
    big = {"rows": [f"row {i} {'z' * 50}" for i in range(100)]}

    def dump() -> dict[str, list[str]]:
        """Return a large table."""
        return big

    model = ScriptedModel([FunctionCall(name="dump", args={}), "got it", "next answer", "third"])
    agent = Agent(
        name="a", model=model, tools=[dump], context_strategies=[ToolResultTrimming(1_000)]
    )
    runner = Runner(agent=agent, app_name="app")
    await _say(runner, "dump it")
    await _say(runner, "what now?")
    await _say(runner, "and now?")

    def results(request: ModelRequest) -> list[dict[str, Any]]:
        return [
            dict(p.function_response.response)
            for c in request.contents
            for p in c.parts
            if p.function_response
        ]

    # The step right after the call sees the whole result (its turn is the newest).
    assert results(model.requests[1])[0]["rows"] == big["rows"]
    # Once its turn is older, the model sees a preview that says it was trimmed.
    trimmed = results(model.requests[2])[0]
    assert trimmed["result_trimmed"] is True
    assert trimmed["original_chars"] == len(json.dumps(big))
    assert len(trimmed["preview"]) == 500
    # Trimmed the same way on every later step: the cached prefix stays identical.
    assert results(model.requests[3]) == [trimmed]
    assert model.requests[2].contents[:3] == model.requests[3].contents[:3]
    # The stored record keeps the whole result.
    session = await _stored(runner)
    stored = [r for e in session.events for r in e.get_function_responses()]
    assert stored[0].response["rows"] == big["rows"]


async def test_k3_summarizing_is_compaction_for_one_agent() -> None:
    summarizer = ScriptedModel([f"SUMMARY-{i}" for i in range(5)], name="summarizer")
    model = ScriptedModel([f"answer {i}" for i in range(4)])
    strategy = Summarizing(token_threshold=100, retention_events=2, summarizer=summarizer)
    runner = Runner(
        agent=Agent(name="a", model=model, context_strategies=[strategy]), app_name="app"
    )
    for i in range(3):
        await _say(runner, f"message {i} " + "x" * 200)  # no RunConfig.compaction at all
    assert summarizer.calls >= 1
    texts = _texts(model.requests[-1])
    assert sum(t.startswith(SUMMARY_PREFIX + "SUMMARY-") for t in texts) == 1
    assert not any(t.startswith("message 0") for t in texts)
    session = await _stored(runner)
    assert any(e.actions.compaction is not None for e in session.events)


async def test_k3_an_agents_summarizing_wins_over_the_run_config() -> None:
    own = ScriptedModel([f"OWN-{i}" for i in range(5)], name="own")
    runs = ScriptedModel([f"RUN-{i}" for i in range(5)], name="run")
    model = ScriptedModel([f"answer {i}" for i in range(3)])
    agent = Agent(
        name="a",
        model=model,
        context_strategies=[Summarizing(token_threshold=100, retention_events=2, summarizer=own)],
    )
    runner = Runner(agent=agent, app_name="app")
    config = RunConfig(
        compaction=CompactionConfig(token_threshold=100, retention_events=2, summarizer=runs)
    )
    for i in range(3):
        await _say(runner, f"message {i} " + "x" * 200, config)
    assert own.calls >= 1
    assert runs.calls == 0


async def test_k3_strategies_compose_a_summary_stays_in_front_of_the_window() -> None:
    summarizer = ScriptedModel([f"SUMMARY-{i}" for i in range(10)], name="summarizer")
    model = ScriptedModel([f"answer {i}" for i in range(6)])
    agent = Agent(
        name="a",
        model=model,
        context_strategies=[
            Summarizing(token_threshold=150, retention_events=4, summarizer=summarizer),
            SlidingWindow(max_turns=1),
        ],
    )
    runner = Runner(agent=agent, app_name="app")
    for i in range(6):
        await _say(runner, f"message {i} " + "x" * 200)
    assert summarizer.calls >= 1
    last = model.requests[-1]
    assert last.contents[0].text.startswith(SUMMARY_PREFIX)
    assert [c.text.split(" ")[0] for c in last.contents[1:]] == ["message"]


async def test_k3_the_nudge_stays_last_under_a_window() -> None:
    # C7: a history ending on a model message gets the user nudge; a window keeps the tail.
    contents = [
        Content.user("m0"),
        Content.model("a0"),
        Content.user("m1"),
        Content.model("a1"),
        Content(role="user", parts=[Part(text=NUDGE_TEXT)]),
    ]
    view = SlidingWindow(max_turns=1).view(list(contents), _fake_ctx())
    assert view == contents[2:]  # the nudge is not a turn of its own


async def test_k3_a_custom_strategy_prepares_and_views_and_its_failure_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[str] = []

    class Tagging(ContextStrategy):
        async def prepare(self, ctx: Any, model: Any) -> bool:
            seen.append("prepare")
            if len(seen) > 2:
                raise RuntimeError("strategy broke")
            return False

        def view(self, contents: list[Content], ctx: Any) -> list[Content]:
            seen.append("view")
            return [Content.user("[tagged]"), *contents]

    model = ScriptedModel(["a0", "a1"])
    runner = Runner(
        agent=Agent(name="a", model=model, context_strategies=Tagging()), app_name="app"
    )
    await _say(runner, "m0")
    with caplog.at_level(logging.WARNING, logger="rondo.compaction"):
        await _say(runner, "m1")
    assert seen == ["prepare", "view", "prepare", "view"]
    assert all(r.contents[0].text == "[tagged]" for r in model.requests)
    assert model.calls == 2  # a failing prepare never fails the run
    failures = [r for r in caplog.records if "context strategy" in r.getMessage()]
    assert failures
    assert failures[0].exc_info is not None
    assert "strategy broke" in str(failures[0].exc_info[1])


def test_k3_strategies_are_checked_when_the_agent_is_built() -> None:
    with pytest.raises(ConfigurationError, match="max_turns, max_tokens"):
        SlidingWindow()
    with pytest.raises(ConfigurationError, match="positive"):
        SlidingWindow(0)
    with pytest.raises(ConfigurationError, match="ContextStrategy"):
        Agent(name="a", model=ScriptedModel([]), context_strategies=["window"])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="at most one Summarizing"):
        Agent(
            name="a",
            model=ScriptedModel([]),
            context_strategies=[Summarizing(token_threshold=10), Summarizing(token_threshold=20)],
        )
    assert Agent(name="a", model=ScriptedModel([])).context_strategies == ()
