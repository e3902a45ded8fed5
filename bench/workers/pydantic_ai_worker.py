"""pydantic-ai's side of the benchmark; runs in bench/.venvs/pydantic_ai.

The fake model is `pydantic_ai.models.function.FunctionModel` with an `async def` function (a
plain `def` would be run in a worker thread) that returns usage itself (otherwise
`FunctionModel` estimates tokens by scanning every message — a cost of the fake, not of the
framework). pydantic-ai has no session store: a "session" is the message list, so prior events
are passed as `message_history` and a fresh session is simply an empty history.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage


def _usage() -> RequestUsage:
    return RequestUsage(input_tokens=h.USAGE[0], output_tokens=h.USAGE[1])


class FakeModel:
    """First call of a turn: `calls`; once the last message holds tool results: `answer`."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]] | None, answer: str) -> None:
        self.calls = calls
        self.answer = answer
        self.seen = 0

    async def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen = len(messages)
        last = messages[-1]
        if self.calls is None or any(isinstance(p, ToolReturnPart) for p in last.parts):
            return ModelResponse(parts=[TextPart(self.answer)], usage=_usage())
        parts = [ToolCallPart(n, a) for n, a in self.calls]
        return ModelResponse(parts=parts, usage=_usage())

    def model(self) -> FunctionModel:
        return FunctionModel(self, model_name="fake")


class PydanticAiWorkloads:
    framework = "pydantic-ai"

    def __init__(self) -> None:
        self._loop = {
            False: Agent(
                FakeModel([("get_weather", {"city": h.TOOL_CITY})], h.FINAL_TEXT).model(),
                tools=[h.get_weather],
            ),
            True: Agent(
                FakeModel([("get_weather_async", {"city": h.TOOL_CITY})], h.FINAL_TEXT).model(),
                tools=[h.get_weather_async],
            ),
        }
        self._history_model = FakeModel(None, h.HISTORY_ANSWER)
        self._history = Agent(self._history_model.model())
        self._parallel = {
            sync: Agent(
                FakeModel(
                    [(tool.__name__, {"index": i}) for i in range(h.PARALLEL_CALLS)],
                    h.FINAL_TEXT,
                ).model(),
                tools=[tool],
            )
            for sync, tool in ((False, h.slow_lookup_async), (True, h.slow_lookup_sync))
        }

    def versions(self) -> dict[str, str]:
        return {
            "pydantic-ai-slim": version("pydantic-ai-slim"),
            "pydantic-graph": version("pydantic-graph"),
            "pydantic": version("pydantic"),
        }

    @staticmethod
    def _run(
        agent: Agent[None, str], message: str, history: list[ModelMessage] | None = None
    ) -> h.Run:
        async def run() -> str:
            result = await agent.run(message, message_history=history)
            return result.output

        return run

    async def tool_loop(self, *, async_tool: bool) -> h.Run:
        return self._run(self._loop[async_tool], h.USER_MESSAGE)

    async def history(self, size: int) -> h.Run:
        history: list[ModelMessage] = []
        for i in range(size):
            text = h.history_text(i)
            if i % 2 == 0:
                history.append(ModelRequest(parts=[UserPromptPart(text)]))
            else:
                history.append(ModelResponse(parts=[TextPart(text)], usage=_usage()))
        return self._run(self._history, "One more thing.", history)

    def history_seen(self) -> int:
        return self._history_model.seen

    async def parallel(self, *, sync_tools: bool) -> h.Run:
        return self._run(self._parallel[sync_tools], "Look up records 0 to 7.")


if __name__ == "__main__":
    h.main(PydanticAiWorkloads)
