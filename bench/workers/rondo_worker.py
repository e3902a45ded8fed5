"""rondo's side of the benchmark; runs in the project's own venv (/work/main/.venv).

The fake model implements rondo's `Model` protocol directly, like the google-adk worker's
`BaseLlm` subclass: it answers from the request alone and keeps no log of requests.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from importlib.metadata import version
from itertools import count
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h

from rondo import Agent, Budget, Event, FunctionCall, GuardrailFunctionOutput, RunConfig, Runner
from rondo.models import ModelRequest, ModelResponse
from rondo.types import Content, Part, Usage

APP = "bench"
USER = "user"
_USAGE = Usage(input_tokens=h.USAGE[0], output_tokens=h.USAGE[1], total_tokens=sum(h.USAGE))


class FakeModel:
    """First call of a turn: `calls()`; once the last content holds tool results: `answer`."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]] | None, answer: str) -> None:
        self.name = "fake"
        self._calls = calls
        self._answer = answer
        self.seen = 0

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        self.seen = len(request.contents)
        last = request.contents[-1]
        if self._calls is None or any(p.function_response is not None for p in last.parts):
            yield ModelResponse(content=Content.model(self._answer), usage=_USAGE)
            return
        parts = [Part(function_call=FunctionCall(name=n, args=a)) for n, a in self._calls]
        yield ModelResponse(content=Content(role="model", parts=parts), usage=_USAGE)


# Issue 24.7: guardrails that pass and a budget with every run limit, none of them reached.
_PASS = GuardrailFunctionOutput()
_BUDGET = RunConfig(
    budget=Budget(
        model_calls=50,
        tool_calls=50,
        total_tokens=1_000_000,
        cost_usd=None,  # the fake model's calls are unpriced: a cost budget would stop them
        wall_time=600.0,
        repeated_calls=5,
    )
)


def _passes_input(ctx: Any, agent: Any, message: Any) -> GuardrailFunctionOutput:
    return _PASS


def _passes_output(ctx: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
    return _PASS


def _passes_tool_input(ctx: Any, tool: Any, args: Any) -> GuardrailFunctionOutput:
    return _PASS


def _passes_tool_output(ctx: Any, tool: Any, args: Any, result: Any) -> GuardrailFunctionOutput:
    return _PASS


def _final_text(events: list[Event]) -> str:
    return events[-1].text if events else ""


class RondoWorkloads:
    framework = "rondo"

    def __init__(self) -> None:
        self._ids = count()
        weather = [("get_weather", {"city": h.TOOL_CITY})]
        self._loop = {
            False: self._runner(FakeModel(weather, h.FINAL_TEXT), [h.get_weather]),
            True: self._runner(
                FakeModel([("get_weather_async", {"city": h.TOOL_CITY})], h.FINAL_TEXT),
                [h.get_weather_async],
            ),
        }
        self._history_model = FakeModel(None, h.HISTORY_ANSWER)
        self._history = self._runner(self._history_model, [])
        self._parallel = {
            sync: self._runner(
                FakeModel(
                    [(tool.__name__, {"index": i}) for i in range(h.PARALLEL_CALLS)],
                    h.FINAL_TEXT,
                ),
                [tool],
            )
            for sync, tool in ((False, h.slow_lookup_async), (True, h.slow_lookup_sync))
        }

    @staticmethod
    def _runner(model: FakeModel, tools: list[Any]) -> Runner:
        return Runner(agent=Agent(name="bench_agent", model=model, tools=tools), app_name=APP)

    def versions(self) -> dict[str, str]:
        return {"rondo-agents": version("rondo-agents"), "pydantic": version("pydantic")}

    async def _session(self, runner: Runner) -> str:
        session = await runner.session_service.create_session(
            app_name=APP, user_id=USER, session_id=f"s{next(self._ids)}"
        )
        return session.id

    def _run(
        self, runner: Runner, session_id: str, message: str, config: RunConfig | None = None
    ) -> h.Run:
        async def run() -> str:
            events = [
                e
                async for e in runner.run_async(
                    user_id=USER, session_id=session_id, new_message=message, run_config=config
                )
            ]
            return _final_text(events)

        return run

    def tool_loop_variants(self) -> dict[str, Any]:
        """The sync-tool loop with budgets, with one guardrail of each kind, and with both."""
        weather = [("get_weather", {"city": h.TOOL_CITY})]
        guarded = Runner(
            agent=Agent(
                name="bench_agent",
                model=FakeModel(weather, h.FINAL_TEXT),
                tools=[h.get_weather],
                input_guardrails=[_passes_input],
                output_guardrails=[_passes_output],
                tool_input_guardrails=[_passes_tool_input],
                tool_output_guardrails=[_passes_tool_output],
            ),
            app_name=APP,
        )
        plain = self._loop[False]

        def variant(runner: Runner, config: RunConfig | None) -> Any:
            async def make() -> h.Run:
                return self._run(runner, await self._session(runner), h.USER_MESSAGE, config)

            return make

        return {
            "none": variant(plain, None),
            "budgets": variant(plain, _BUDGET),
            "guardrails": variant(guarded, None),
            "both": variant(guarded, _BUDGET),
        }

    async def tool_loop(self, *, async_tool: bool) -> h.Run:
        runner = self._loop[async_tool]
        return self._run(runner, await self._session(runner), h.USER_MESSAGE)

    async def history(self, size: int) -> h.Run:
        runner = self._history
        service = runner.session_service
        session = await service.create_session(
            app_name=APP, user_id=USER, session_id=f"h{next(self._ids)}"
        )
        for i in range(size):
            text = h.history_text(i)
            content = Content.user(text) if i % 2 == 0 else Content.model(text)
            author = USER if i % 2 == 0 else runner.agent.name
            await service.append_event(session, Event(author=author, content=content))
        return self._run(runner, session.id, "One more thing.")

    def history_seen(self) -> int:
        return self._history_model.seen

    async def parallel(self, *, sync_tools: bool) -> h.Run:
        runner = self._parallel[sync_tools]
        return self._run(runner, await self._session(runner), "Look up records 0 to 7.")


if __name__ == "__main__":
    h.main(RondoWorkloads)
