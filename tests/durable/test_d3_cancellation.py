"""SPEC D3: cancellation at every await point of the loop (property-based).

A run of two tool steps (two parallel calls, then one) and a final answer, with await points
in the model, the tools and the store, is cancelled after `n` event-loop turns, for any `n`
up to the length of the whole run. Wherever it stops, the stored session is consistent and a
resume with no new message completes it: every call answered once, in call order, each tool
effect (keyed by its call id) applied once, and no completed model call made again.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import Any

from rondo import Agent, Event, FunctionCall, FunctionTool, RunConfig, Runner, ToolContext
from rondo.durable import find_interrupted
from rondo.models.base import ModelRequest
from rondo.sessions.base import Session
from rondo.sessions.memory import InMemorySessionService
from rondo.testing import ScriptedModel
from tests._require import require_module

# Property tests need hypothesis (the dev extra); without it this module skips, naming it.
_hypothesis = require_module("hypothesis", what="HYPOTHESIS", install="pip install hypothesis")
st = require_module("hypothesis.strategies", what="HYPOTHESIS", install="pip install hypothesis")
HealthCheck, given, settings = _hypothesis.HealthCheck, _hypothesis.given, _hypothesis.settings


class SlowStore(InMemorySessionService):
    """The in-memory store with await points around every read and append."""

    async def get_session(self, **kwargs: Any) -> Session | None:
        await asyncio.sleep(0)
        session = await super().get_session(**kwargs)
        await asyncio.sleep(0)
        return session

    async def append_event(self, session: Session, event: Event) -> Event:
        await asyncio.sleep(0)
        stored = await super().append_event(session, event)
        await asyncio.sleep(0)  # stored, not yet acknowledged
        return stored


async def next_move(request: ModelRequest) -> Any:
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    answered = sum(1 for c in request.contents for p in c.parts if p.function_response)
    if answered == 0:
        return [
            FunctionCall(name="work", args={"n": 0}),
            FunctionCall(name="work", args={"n": 1}),
        ]
    if answered == 2:
        return FunctionCall(name="work", args={"n": 2})
    return "done"


class World:
    """Tool effects, keyed by the call id the tool sees (its idempotency key)."""

    def __init__(self) -> None:
        self.effects: dict[str, int] = {}

    def runner(self, store: SlowStore, model: ScriptedModel) -> Runner:
        async def work(n: int, tool_context: ToolContext) -> dict[str, int]:
            """Do some work."""
            await asyncio.sleep(0)
            self.effects.setdefault(tool_context.function_call_id or "", n)
            await asyncio.sleep(0)
            return {"n": n}

        return Runner(
            agent=Agent(name="agent", model=model, tools=[FunctionTool(work)]),
            app_name="app",
            session_service=store,
        )


async def consume(runner: Runner, message: str | None, lifecycle: bool) -> None:
    if lifecycle:
        config = RunConfig(streaming_mode="none")
        async for _ in runner.stream_async(
            user_id="u", session_id="s", new_message=message, run_config=config
        ):
            await asyncio.sleep(0)
    else:
        async for _ in runner.run_async(user_id="u", session_id="s", new_message=message):
            await asyncio.sleep(0)


async def cancel_after(turns: int, lifecycle: bool) -> tuple[SlowStore, World, int]:
    """Run, cancel after `turns` loop turns; returns how many turns the run had when it
    finished first (or `turns`)."""
    store, world = SlowStore(), World()
    task = asyncio.ensure_future(
        consume(world.runner(store, ScriptedModel([next_move] * 5)), "go", lifecycle)
    )
    ran = 0
    while ran < turns and not task.done():
        await asyncio.sleep(0)
        ran += 1
    task.cancel()
    with suppress(asyncio.CancelledError):
        await task
    return store, world, ran


def check_consistent(events: list[Event]) -> None:
    """The log of one invocation: one user message first, answers after their calls, each
    call answered at most once, nothing partial."""
    assert events[0].author == "user"
    assert all(e.author == "agent" for e in events[1:])
    assert len({e.invocation_id for e in events}) == 1
    assert len({e.run_id for e in events}) == 1
    assert not any(e.partial for e in events)
    called: list[str] = []
    answered: list[str] = []
    for event in events:
        for response in event.get_function_responses():
            assert response.id in called
            assert response.id not in answered
            answered.append(response.id or "")
        called.extend(c.id or "" for c in event.get_function_calls())


async def interrupted_then_resumed(turns: int, lifecycle: bool) -> None:
    store, world, _ = await cancel_after(turns, lifecycle)
    session = await store.get_session(app_name="app", user_id="u", session_id="s")
    before = list(session.events) if session is not None else []
    if before:
        check_consistent(before)
    if before and before[-1].text == "done":
        # Cancelled after the last record was stored: the run is complete, nothing resumes.
        assert find_interrupted(before) is None
        return
    made = sum(1 for e in before if e.author == "agent" and e.content and e.content.role == "model")
    model = ScriptedModel([next_move] * 5)
    # Cancelled before the user's message was stored: there is nothing to resume.
    await consume(world.runner(store, model), None if before else "go", lifecycle)
    session = await store.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    events = list(session.events)
    check_consistent(events)
    assert events[-1].text == "done"
    calls = [c.id for e in events for c in e.get_function_calls()]
    answers = [r.id for e in events for r in e.get_function_responses()]
    assert answers == calls
    assert len(calls) == 3
    assert sorted(world.effects) == sorted(c or "" for c in calls)
    model_events = sum(1 for e in events if e.content and e.content.role == "model")
    assert model_events == 3
    assert model.calls == 3 - made  # only the model calls that never completed


def _whole_run_turns(lifecycle: bool) -> int:
    _, _, turns = asyncio.run(cancel_after(10_000, lifecycle))
    return turns


TURNS = max(_whole_run_turns(False), _whole_run_turns(True))


def test_d3_cancellation_at_every_await_point_then_resume() -> None:
    """Exhaustive over the record stream: every turn of the loop, one by one."""
    assert TURNS > 20  # the run really has await points to cancel at

    async def sweep() -> None:
        for turns in range(TURNS + 1):
            await interrupted_then_resumed(turns, lifecycle=False)

    asyncio.run(sweep())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.integers(0, TURNS), lifecycle=st.booleans())
def test_d3_cancellation_anywhere_property(turns: int, lifecycle: bool) -> None:
    asyncio.run(interrupted_then_resumed(turns, lifecycle))
