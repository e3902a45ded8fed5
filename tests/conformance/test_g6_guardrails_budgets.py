"""SPEC G6 (issue 24.5, 24.6): guardrails block before the side effect; budgets end a run
cleanly with a named error, and no call is left without a response."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import ValidationError

import rondo
from rondo import (
    Agent,
    Budget,
    BudgetExceeded,
    Event,
    FunctionCall,
    GuardrailFunctionOutput,
    GuardrailTripped,
    InvalidCallbackError,
    RunConfig,
    Runner,
    input_guardrail,
    output_guardrail,
    tool_input_guardrail,
    tool_output_guardrail,
)
from rondo.lifecycle import BudgetExhausted, GuardrailTriggered, ReasonDelta, RunEnd
from rondo.models import ModelRequest, ModelResponse
from rondo.testing import ScriptedModel, check_stream
from rondo.types import Content, Part, Usage
from tests._otel import Sdk, sdk

from ._support import APP, SESSION, USER, collect, lifecycle, responses_in, stored

# -- helpers -----------------------------------------------------------------------------------


class SideEffects:
    """A tool that records every run: the proof that it ran, or did not."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

    def tool(self) -> Any:
        def transfer_money(to: str, amount: int) -> dict[str, Any]:
            """Sends money."""
            self.runs.append({"to": to, "amount": amount})
            return {"ok": True, "to": to, "amount": amount}

        return transfer_money


def pay(to: str = "bob", amount: int = 5) -> FunctionCall:
    return FunctionCall(name="transfer_money", args={"to": to, "amount": amount})


def answered_calls(events: Sequence[Event]) -> tuple[set[str], set[str]]:
    """The ids of every stored call and of every stored response."""
    calls = {c.id for e in events for c in e.get_function_calls() if c.id}
    responses = {r.id for e in events for r in e.get_function_responses() if r.id}
    return calls, responses


def with_usage(item: Any, *, tokens: tuple[int, int] = (60, 10), cost: float | None = None) -> Any:
    content = (
        Content.model(item)
        if isinstance(item, str)
        else Content(role="model", parts=[Part(function_call=item)])
    )
    usage = Usage(input_tokens=tokens[0], output_tokens=tokens[1], cost_usd=cost)
    return ModelResponse(content=content, usage=usage)


# -- guardrails: input ---------------------------------------------------------------------------


@input_guardrail
def no_wire_fraud(ctx: Any, agent: Any, message: Content) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(
        tripwire_triggered="offshore" in message.text,
        output_info={"matched": "offshore"},
        message="I can't help with that.",
    )


async def test_g6_a_tripped_input_guardrail_means_no_model_call_and_no_tool_call() -> None:
    effects = SideEffects()
    model = ScriptedModel([pay(), "sent"])
    agent = Agent(
        name="bank", model=model, tools=[effects.tool()], input_guardrails=[no_wire_fraud]
    )
    runner = Runner(agent=agent, app_name=APP)
    result = await runner.run_to_result(
        user_id=USER, session_id=SESSION, new_message="send it all offshore"
    )
    assert model.calls == 0
    assert effects.runs == []
    assert isinstance(result.error, GuardrailTripped)
    assert (result.error.guardrail, result.error.stage) == ("no_wire_fraud", "input")
    assert result.error.output_info == {"matched": "offshore"}
    assert result.is_abnormal
    assert result.text == "I can't help with that."
    session = await stored(runner)
    assert [e.author for e in session.events] == ["user", "bank"]
    record = session.events[-1]
    assert record.error_code == "GUARDRAIL_TRIPPED"
    assert "no_wire_fraud" in (record.error_message or "")
    assert record.custom_metadata is not None
    assert record.custom_metadata["rondo:guardrail"]["stage"] == "input"


async def test_g6_input_guardrails_run_before_the_model_even_when_slow() -> None:
    order: list[str] = []

    @input_guardrail(name="slow_check")
    async def slow_check(ctx: Any, agent: Any, message: Content) -> GuardrailFunctionOutput:
        for _ in range(5):
            await asyncio.sleep(0)  # a model-backed check takes a while
        order.append("guardrail")
        return GuardrailFunctionOutput(tripwire_triggered=False)

    def answer(request: ModelRequest) -> str:
        order.append("model")
        return "fine"

    model = ScriptedModel([answer])
    agent = Agent(name="helper", model=model, input_guardrails=[slow_check])
    result = await agent.run("hello")
    assert order == ["guardrail", "model"]
    assert result.error is None
    assert result.text == "fine"


async def test_g6_a_guardrail_may_ask_a_model_and_may_be_a_plain_function_or_bool() -> None:
    judge = ScriptedModel(["UNSAFE"])

    async def judged(ctx: Any, agent: Any, message: Content) -> bool:
        request = ModelRequest(model=judge.name, contents=[message])
        verdict = [r async for r in judge.generate(request)][-1]
        assert ctx.invocation_context.agent is agent  # the context reaches the run
        return verdict.content is not None and verdict.content.text == "UNSAFE"

    model = ScriptedModel(["never"])
    result = await Agent(name="helper", model=model, input_guardrails=[judged]).run("hi")
    assert judge.calls == 1
    assert model.calls == 0
    assert isinstance(result.error, GuardrailTripped)
    assert result.error.guardrail == "judged"


async def test_g6_a_guardrail_that_returns_something_else_fails_the_run() -> None:
    agent = Agent(name="helper", model=ScriptedModel(["x"]), input_guardrails=[lambda *a: "ok"])
    with pytest.raises(InvalidCallbackError, match="GuardrailFunctionOutput"):
        await agent.run("hi")
    with pytest.raises(InvalidCallbackError):
        Agent(name="h2", model=ScriptedModel([]), input_guardrails=[42])
    with pytest.raises(InvalidCallbackError, match="InputGuardrail"):
        Agent(name="h3", model=ScriptedModel([]), input_guardrails=[tool_input_guardrail(print)])


async def test_g6_an_answer_to_paused_calls_is_not_checked_as_input() -> None:
    seen: list[str] = []

    def record(ctx: Any, agent: Any, message: Content) -> bool:
        seen.append(message.text)
        return False

    model = ScriptedModel(["hi back"])
    await Agent(name="helper", model=model, input_guardrails=[record]).run("hello")
    assert seen == ["hello"]


# -- guardrails: output ---------------------------------------------------------------------------


@output_guardrail
def no_card_numbers(ctx: Any, agent: Any, output: Content) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(
        tripwire_triggered="4111" in output.text, message="[answer withheld: card number]"
    )


async def test_g6_a_tripped_output_guardrail_replaces_the_answer_and_the_record_says_why() -> None:
    model = ScriptedModel(["your card is 4111 1111 1111 1111"])
    agent = Agent(
        name="helper", model=model, output_guardrails=[no_card_numbers], output_key="answer"
    )
    runner = Runner(agent=agent, app_name=APP)
    result = await runner.run_to_result(user_id=USER, session_id=SESSION, new_message="card?")
    assert result.text == "[answer withheld: card number]"
    assert isinstance(result.error, GuardrailTripped)
    assert result.error.stage == "output"
    session = await stored(runner)
    assert all("4111" not in (e.content.text if e.content else "") for e in session.events)
    assert "4111" not in str(session.state)
    record = session.events[-1]
    assert record.error_code == "GUARDRAIL_TRIPPED"
    assert record.custom_metadata is not None
    assert record.custom_metadata["rondo:guardrail"]["guardrail"] == "no_card_numbers"


async def test_g6_an_output_guardrail_without_message_withholds_and_nothing_streams() -> None:
    @output_guardrail
    def block(ctx: Any, agent: Any, output: Content) -> bool:
        return "secret" in output.text

    chunks = [
        ModelResponse(content=Content.model("the secret "), partial=True),
        ModelResponse(content=Content.model("is 42"), partial=True),
    ]
    runner = Runner(
        agent=Agent(name="helper", model=ScriptedModel([chunks]), output_guardrails=[block]),
        app_name=APP,
    )
    events = await lifecycle(runner, "tell me", run_config=RunConfig(streaming_mode="sse"))
    assert not [e for e in events if isinstance(e, ReasonDelta) and "secret" in e.text]
    tripped = [e for e in events if isinstance(e, GuardrailTriggered)]
    assert [(t.guardrail, t.stage) for t in tripped] == [("block", "output")]
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert end.is_abnormal
    assert end.error_type == "GuardrailTripped"
    assert end.text == ""
    session = await stored(runner)
    assert session.events[-1].content is None  # withheld
    assert all("secret" not in (e.content.text if e.content else "") for e in session.events)


# -- guardrails: tools ---------------------------------------------------------------------------


async def test_g6_a_tool_input_guardrail_blocks_the_call_before_the_tool_runs() -> None:
    effects = SideEffects()

    @tool_input_guardrail
    def cap(ctx: Any, tool: Any, args: dict[str, Any]) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(
            tripwire_triggered=args.get("amount", 0) > 100, message="over the limit"
        )

    model = ScriptedModel([pay(amount=5000), "I could not send it."])
    runner = Runner(
        agent=Agent(name="bank", model=model, tools=[effects.tool()], tool_input_guardrails=[cap]),
        app_name=APP,
    )
    events = await lifecycle(runner, "send 5000")
    assert effects.runs == []
    sent = responses_in(model.requests[1])
    assert len(sent) == 1
    assert "cap" in sent[0].response["error"]
    assert "over the limit" in sent[0].response["error"]
    tripped = [e for e in events if isinstance(e, GuardrailTriggered)]
    assert [(t.stage, t.tool_name) for t in tripped] == [("tool_input", "transfer_money")]
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert end.error is None
    assert end.text == "I could not send it."
    calls, responses = answered_calls((await stored(runner)).events)
    assert calls
    assert calls == responses


async def test_g6_a_tool_output_guardrail_withholds_the_result_from_the_model() -> None:
    def lookup_customer(name: str) -> dict[str, Any]:
        """Looks a customer up."""
        return {"name": name, "ssn": "078-05-1120"}

    @tool_output_guardrail
    def no_ssn(ctx: Any, tool: Any, args: dict[str, Any], result: dict[str, Any]) -> bool:
        return "ssn" in str(result)

    model = ScriptedModel([FunctionCall(name="lookup_customer", args={"name": "ann"}), "ok"])
    agent = Agent(name="crm", model=model, tools=[lookup_customer], tool_output_guardrails=[no_ssn])
    result = await agent.run("who is ann?")
    assert result.text == "ok"
    seen = str(model.requests[1].contents)
    assert "078-05-1120" not in seen
    assert "no_ssn" in seen
    assert all("078-05-1120" not in str(e.content) for e in result.events)


async def test_g6_a_tripped_guardrail_is_a_span_event_and_its_agent_span_fails() -> None:
    otel: Sdk = sdk()
    otel.spans.clear()
    agent = Agent(name="bank", model=ScriptedModel(["x"]), input_guardrails=[no_wire_fraud])
    await agent.run("offshore please")
    spans = {s.name: s for s in otel.finished()}
    span = spans["invoke_agent bank"]
    events = [e for e in span.events if e.name == "rondo.guardrail.tripped"]
    assert len(events) == 1
    assert events[0].attributes["rondo.guardrail.name"] == "no_wire_fraud"
    assert span.attributes["error.type"] == "GuardrailTripped"


async def test_g6_the_lifecycle_of_a_tripped_input_guardrail_is_a_well_formed_stream() -> None:
    runner = Runner(
        agent=Agent(name="bank", model=ScriptedModel([]), input_guardrails=[no_wire_fraud]),
        app_name=APP,
    )
    events = await lifecycle(runner, "offshore")  # check_stream: one RunEnd, nothing after
    assert [e.type for e in events] == ["run_start", "guardrail_triggered", "run_end"]
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert end.error_type == "GuardrailTripped"
    assert end.text == "I can't help with that."


async def test_g6_guardrail_tripped_raised_by_a_hook_ends_the_run_on_a_record() -> None:
    def before_model(ctx: Any, request: Any) -> None:
        raise GuardrailTripped("policy says no", guardrail="policy")

    runner = Runner(
        agent=Agent(name="helper", model=ScriptedModel(["x"]), before_model_callback=before_model),
        app_name=APP,
    )
    result = await runner.run_to_result(user_id=USER, session_id=SESSION, new_message="hi")
    assert isinstance(result.error, GuardrailTripped)
    assert (await stored(runner)).events[-1].error_code == "GUARDRAIL_TRIPPED"


# -- budgets ---------------------------------------------------------------------------------------


async def test_g6_a_tool_calls_budget_answers_the_refused_calls_and_ends_cleanly() -> None:
    effects = SideEffects()
    model = ScriptedModel([pay("a"), [pay("b"), pay("c")], "done"])
    runner = Runner(agent=Agent(name="bank", model=model, tools=[effects.tool()]), app_name=APP)
    config = RunConfig(budget=Budget(tool_calls=2))
    result = await runner.run_to_result(
        user_id=USER, session_id=SESSION, new_message="pay", run_config=config
    )
    assert [r["to"] for r in effects.runs] == ["a", "b"]
    assert model.calls == 2
    error = result.error
    assert isinstance(error, BudgetExceeded)
    assert (error.budget, error.limit, error.used, error.scope) == ("tool_calls", 2, 3, "run")
    session = await stored(runner)
    calls, responses = answered_calls(session.events)
    assert calls == responses  # no call without a response
    refused = [
        r.response["error"]
        for e in session.events
        for r in e.get_function_responses()
        if "error" in r.response
    ]
    assert len(refused) == 1
    assert "tool_calls budget" in refused[0]
    assert session.events[-1].error_code == "BUDGET_EXCEEDED"
    assert session.events[-1].custom_metadata["rondo:budget"]["budget"] == "tool_calls"  # type: ignore[index]


async def test_g6_a_model_calls_budget_ends_cleanly_where_max_llm_calls_raises() -> None:
    model = ScriptedModel([pay()] * 5)
    agent = Agent(name="bank", model=model, tools=[SideEffects().tool()])
    result = await agent.run("loop", run_config=RunConfig(budget=Budget(model_calls=2)))
    assert model.calls == 2
    assert isinstance(result.error, BudgetExceeded)
    assert result.error.budget == "model_calls"
    # F7 is unchanged: max_llm_calls still raises, and its error is a BudgetExceeded too.
    with pytest.raises(rondo.LlmCallsLimitExceeded) as raised:
        await agent.run("loop", run_config=RunConfig(max_llm_calls=1))
    assert isinstance(raised.value, BudgetExceeded)
    assert (raised.value.budget, raised.value.limit) == ("max_llm_calls", 1)


async def test_g6_a_total_tokens_budget_stops_before_the_next_model_call() -> None:
    model = ScriptedModel([with_usage(pay()), with_usage(pay()), with_usage("done")])
    agent = Agent(name="bank", model=model, tools=[SideEffects().tool()])
    result = await agent.run("go", run_config=RunConfig(budget=Budget(total_tokens=100)))
    assert model.calls == 2  # 70 tokens < 100: a second call; 140 ≥ 100: no third
    assert isinstance(result.error, BudgetExceeded)
    assert (result.error.budget, result.error.used) == ("total_tokens", 140)
    assert result.metrics.total_tokens == 140


async def test_g6_a_cost_budget_counts_priced_usage_and_fails_closed_when_unpriced() -> None:
    model = ScriptedModel(
        [with_usage(pay(), cost=0.02), with_usage(pay(), cost=0.02), with_usage("done")]
    )
    agent = Agent(name="bank", model=model, tools=[SideEffects().tool()])
    result = await agent.run("go", run_config=RunConfig(budget=Budget(cost_usd=0.03)))
    assert model.calls == 2
    assert isinstance(result.error, BudgetExceeded)
    assert result.error.budget == "cost_usd"
    assert result.error.used == pytest.approx(0.04)

    unpriced = ScriptedModel([pay(), "done"])  # no usage, no price: the spend is unknown
    agent = Agent(name="bank2", model=unpriced, tools=[SideEffects().tool()])
    result = await agent.run("go", run_config=RunConfig(budget=Budget(cost_usd=10.0)))
    assert unpriced.calls == 1
    assert isinstance(result.error, BudgetExceeded)
    assert result.error.used is None


async def test_g6_a_wall_time_budget_is_checked_before_each_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rondo.flow.guards as guards

    clock = [1000.0]
    monkeypatch.setattr(guards.time, "perf_counter", lambda: clock[0])
    effects = SideEffects()
    inner = effects.tool()

    def transfer_money(to: str, amount: int) -> dict[str, Any]:
        """Sends money, slowly."""
        clock[0] += 30.0
        return inner(to, amount)

    model = ScriptedModel([pay("a"), pay("b"), "done"])
    agent = Agent(name="bank", model=model, tools=[transfer_money])
    result = await agent.run("go", run_config=RunConfig(budget=Budget(wall_time=20.0)))
    assert model.calls == 1
    assert len(effects.runs) == 1
    assert isinstance(result.error, BudgetExceeded)
    assert result.error.budget == "wall_time"


async def test_g6_the_loop_breaker_stops_the_same_call_repeated_in_a_row() -> None:
    effects = SideEffects()
    model = ScriptedModel([pay("a"), pay("b"), pay("b"), pay("b"), "done"])
    agent = Agent(name="bank", model=model, tools=[effects.tool()])
    result = await agent.run("go", run_config=RunConfig(budget=Budget(repeated_calls=2)))
    # a, b, b run (a different call resets the count); the third b in a row is a loop.
    assert [r["to"] for r in effects.runs] == ["a", "b", "b"]
    assert model.calls == 4
    assert isinstance(result.error, BudgetExceeded)
    assert (result.error.budget, result.error.used) == ("repeated_calls", 3)
    calls, responses = answered_calls(result.events)
    assert calls == responses


async def test_g6_a_session_budget_sums_the_sessions_stored_usage() -> None:
    model = ScriptedModel([with_usage("one"), with_usage("two"), with_usage("three")])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    config = RunConfig(session_budget=Budget(total_tokens=100))
    results = [
        await runner.run_to_result(
            user_id=USER, session_id=SESSION, new_message=f"turn {i}", run_config=config
        )
        for i in range(3)
    ]
    assert [r.error is None for r in results] == [True, True, False]
    assert model.calls == 2  # 70, then 140 stored: the third run makes no call
    error = results[2].error
    assert isinstance(error, BudgetExceeded)
    assert error.scope == "session"
    assert error.used == 140
    with pytest.raises(ValidationError, match="per run"):
        RunConfig(session_budget=Budget(wall_time=5))


async def test_g6_a_budget_stop_is_a_lifecycle_event_before_a_well_formed_run_end() -> None:
    effects = SideEffects()
    model = ScriptedModel([[pay("a"), pay("b")], "done"])
    runner = Runner(agent=Agent(name="bank", model=model, tools=[effects.tool()]), app_name=APP)
    events = await lifecycle(runner, "pay", run_config=RunConfig(budget=Budget(tool_calls=1)))
    check_stream(events)
    stops = [e for e in events if isinstance(e, BudgetExhausted)]
    assert [(s.budget, s.limit, s.used) for s in stops] == [("tool_calls", 1, 2)]
    assert [e.type for e in events[-2:]] == ["budget_exhausted", "run_end"]
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert end.is_abnormal
    assert end.error_type == "BudgetExceeded"
    assert "tool_calls" in (end.error or "")
    assert len(effects.runs) == 1
    calls, responses = answered_calls((await stored(runner)).events)
    assert len(calls) == 2
    assert calls == responses


async def test_g6_records_only_runs_end_on_the_stop_record_without_raising() -> None:
    model = ScriptedModel([pay()] * 3)
    runner = Runner(
        agent=Agent(name="bank", model=model, tools=[SideEffects().tool()]), app_name=APP
    )
    events = await collect(runner, "go", run_config=RunConfig(budget=Budget(model_calls=1)))
    assert events[-1].error_code == "BUDGET_EXCEEDED"
    assert events[-1].content is None  # the model's history view is not touched


# -- issue 24.7: nothing configured, nothing runs --------------------------------------------------


def _load_guard_modules() -> None:
    """Import the guard code before a profile counts its calls (a lazy import's module body
    is not a call of the loop)."""
    import importlib

    importlib.import_module("rondo.flow.guards")


async def test_24_7_without_guardrails_or_budgets_no_guard_code_runs_in_the_tool_loop() -> None:
    effects = SideEffects()
    model = ScriptedModel([pay(), "sent", pay(), "sent"])
    runner = Runner(agent=Agent(name="bank", model=model, tools=[effects.tool()]), app_name=APP)
    called: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.endswith(
            ("rondo/guardrails.py", "rondo/flow/guards.py")
        ):
            called.append(frame.f_code.co_name)

    _load_guard_modules()
    sys.setprofile(profile)
    try:
        await collect(runner, "pay bob")
    finally:
        sys.setprofile(None)
    assert effects.runs
    assert called == []
    # The same profile sees the guard code as soon as a budget is configured.
    sys.setprofile(profile)
    try:
        await collect(
            runner, "pay bob", session_id="s2", run_config=RunConfig(budget=Budget(tool_calls=9))
        )
    finally:
        sys.setprofile(None)
    # (the budget's keeper, and its check of the step's calls; the model-side limits are
    # compared in the loop's own code, so `before_model` runs only once one is reached)
    assert "__init__" in called
    assert "admit" in called


async def test_24_7_configured_guards_cost_their_own_calls_and_nothing_more() -> None:
    """Issue 24 item 7, counted: with every run limit and one sync guardrail of each kind,
    the guard code a tool loop enters is the run's budget keeper and its check of the step's
    calls — the guardrail functions are called by the loop itself, their passing verdicts
    and the model-side limits read in line (bench/run.py measures the same loop)."""
    effects = SideEffects()
    passed = GuardrailFunctionOutput(tripwire_triggered=False)
    agent = Agent(
        name="bank",
        model=ScriptedModel([pay(), "sent"]),
        tools=[effects.tool()],
        input_guardrails=[lambda ctx, agent, message: passed],
        output_guardrails=[lambda ctx, agent, output: passed],
        tool_input_guardrails=[lambda ctx, tool, args: passed],
        tool_output_guardrails=[lambda ctx, tool, args, result: passed],
    )
    runner = Runner(agent=agent, app_name=APP)
    # Every limit but cost: a scripted model's calls have no price, and an unknown spend
    # stops a run with a cost budget.
    budget = Budget(
        model_calls=9, tool_calls=9, total_tokens=10_000, wall_time=60, repeated_calls=3
    )
    called: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.endswith(
            ("rondo/guardrails.py", "rondo/flow/guards.py")
        ):
            called.append(frame.f_code.co_name)

    _load_guard_modules()
    sys.setprofile(profile)
    try:
        await collect(runner, "pay bob", run_config=RunConfig(budget=budget))
    finally:
        sys.setprofile(None)
    assert effects.runs
    assert sorted(called) == [
        "__init__",  # the run's RunGuard
        "admit",  # the step's calls
    ]


def test_24_7_guard_checks_cost_at_most_2_percent() -> None:
    """Issue 24 item 7: budgets (every run limit) and one guardrail of each kind add at most
    2 % to the tool loop's calls, counted as bench/run.py counts them (cProfile, builtins
    included) in a fresh interpreter — with the guardrail functions' own calls (one per
    check, the user's code) and without them."""
    import json
    import subprocess
    from pathlib import Path

    done = subprocess.run(
        [sys.executable, "-m", "tests.conformance._guard_counts"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    print("CALLS", counts)
    base = counts["none"]["calls"]
    for variant in ("budgets", "guardrails", "both"):
        extra = counts[variant]["calls"] - base
        own = counts[variant]["guardrail_functions"]
        assert extra <= 0.02 * base, (variant, extra, base)
        assert extra - own <= 0.01 * base, (variant, extra - own, base)  # the framework's share
    # The guardrail functions ran, once per check: the loop did call them.
    assert counts["guardrails"]["guardrail_functions"] == 4
    assert counts["both"]["guardrail_functions"] == 4


async def test_g6_a_stop_in_one_parallel_branch_lets_the_others_finish_their_calls() -> None:
    ran: list[str] = []

    async def slow(x: str) -> dict[str, Any]:
        """Takes a while."""
        for _ in range(20):
            await asyncio.sleep(0.01)
        ran.append(x)
        return {"ok": x}

    branches = [
        Agent(
            name=name,
            model=ScriptedModel([FunctionCall(name="slow", args={"x": name}), "done"]),
            tools=[slow],
        )
        for name in ("a", "b")
    ]
    runner = Runner(agent=rondo.ParallelAgent(name="both", sub_agents=branches), app_name=APP)
    events = await lifecycle(runner, "go", run_config=RunConfig(budget=Budget(tool_calls=1)))
    check_stream(events)  # every started call ends, every action closes
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert end.error_type == "BudgetExceeded"
    assert len(ran) == 1  # the admitted call finished; the other was never run
    calls, responses = answered_calls((await stored(runner)).events)
    assert len(calls) == 2
    assert calls == responses


async def test_g6_an_agent_answering_as_a_tool_spends_its_callers_budget() -> None:
    helper_model = ScriptedModel(["the helper's answer"])
    helper = Agent(name="helper", model=helper_model, description="Answers questions.")
    model = ScriptedModel([FunctionCall(name="helper", args={"request": "help"}), "done"])
    agent = Agent(name="boss", model=model, tools=[rondo.AgentTool(helper)])
    result = await agent.run("go", run_config=RunConfig(budget=Budget(model_calls=2)))
    # The boss's first call and the helper's call use the budget up: no second boss call.
    assert helper_model.calls == 1
    assert model.calls == 1
    assert isinstance(result.error, BudgetExceeded)
    assert (result.error.budget, result.error.used) == ("model_calls", 2)
