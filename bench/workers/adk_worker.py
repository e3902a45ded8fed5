"""google-adk's side of the benchmark; runs in bench/.venvs/adk.

The fake model subclasses `google.adk.models.BaseLlm`, the way ADK's own unit tests fake a
model (tests/unittests/testing_utils.py `MockModel`), but answers from the request alone (no
request log). Everything else is ADK's default: `Runner` + `InMemorySessionService`, `Agent`
with plain function tools, default `RunConfig`.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from importlib.metadata import version
from itertools import count
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h
from google.adk.agents import Agent
from google.adk.agents.run_config import RunConfig, ToolThreadPoolConfig
from google.adk.events import Event
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

APP = "bench"
USER = "user"
_USAGE = types.GenerateContentResponseUsageMetadata(
    prompt_token_count=h.USAGE[0],
    candidates_token_count=h.USAGE[1],
    total_token_count=sum(h.USAGE),
)


class FakeLlm(BaseLlm):
    """First call of a turn: `calls`; once the last content holds tool results: `answer`."""

    calls: list[tuple[str, dict[str, Any]]] | None = None
    answer: str = ""
    seen: int = 0

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.seen = len(llm_request.contents)
        last = llm_request.contents[-1]
        if self.calls is None or any(p.function_response is not None for p in last.parts or ()):
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(text=self.answer)]),
                usage_metadata=_USAGE,
            )
            return
        parts = [
            types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in self.calls
        ]
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=_USAGE)


def _user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


class AdkWorkloads:
    framework = "google-adk"

    def __init__(self) -> None:
        self._ids = count()
        self._loop = {
            False: self._runner(
                FakeLlm(
                    model="fake",
                    calls=[("get_weather", {"city": h.TOOL_CITY})],
                    answer=h.FINAL_TEXT,
                ),
                [h.get_weather],
            ),
            True: self._runner(
                FakeLlm(
                    model="fake",
                    calls=[("get_weather_async", {"city": h.TOOL_CITY})],
                    answer=h.FINAL_TEXT,
                ),
                [h.get_weather_async],
            ),
        }
        self._history_model = FakeLlm(model="fake", answer=h.HISTORY_ANSWER)
        self._history = self._runner(self._history_model, [])
        self._parallel = {
            sync: self._runner(
                FakeLlm(
                    model="fake",
                    calls=[(tool.__name__, {"index": i}) for i in range(h.PARALLEL_CALLS)],
                    answer=h.FINAL_TEXT,
                ),
                [tool],
            )
            for sync, tool in ((False, h.slow_lookup_async), (True, h.slow_lookup_sync))
        }

    @staticmethod
    def _runner(model: FakeLlm, tools: list[Any]) -> Runner:
        agent = Agent(name="bench_agent", model=model, tools=tools)
        return Runner(agent=agent, app_name=APP, session_service=InMemorySessionService())

    def versions(self) -> dict[str, str]:
        return {
            "google-adk": version("google-adk"),
            "google-genai": version("google-genai"),
            "pydantic": version("pydantic"),
        }

    async def _session(self, runner: Runner) -> str:
        session = await runner.session_service.create_session(
            app_name=APP, user_id=USER, session_id=f"s{next(self._ids)}"
        )
        return session.id

    @staticmethod
    def _run(
        runner: Runner, session_id: str, message: str, config: RunConfig | None = None
    ) -> h.Run:
        content = _user(message)

        async def run() -> str:
            text = ""
            async for event in runner.run_async(
                user_id=USER, session_id=session_id, new_message=content, run_config=config
            ):
                if event.content and event.content.parts and event.content.parts[0].text:
                    text = event.content.parts[0].text
            return text

        return run

    async def tool_loop(self, *, async_tool: bool) -> h.Run:
        runner = self._loop[async_tool]
        return self._run(runner, await self._session(runner), h.USER_MESSAGE)

    async def history(self, size: int) -> h.Run:
        runner = self._history
        service = runner.session_service
        session = await service.create_session(
            app_name=APP, user_id=USER, session_id=f"h{next(self._ids)}"
        )
        agent = runner.agent.name
        for i in range(size):
            text = h.history_text(i)
            if i % 2 == 0:
                event = Event(author=USER, content=_user(text))
            else:
                event = Event(
                    author=agent,
                    content=types.Content(role="model", parts=[types.Part(text=text)]),
                )
            await service.append_event(session, event)
        return self._run(runner, session.id, "One more thing.")

    def history_seen(self) -> int:
        return self._history_model.seen

    async def parallel(self, *, sync_tools: bool) -> h.Run:
        runner = self._parallel[sync_tools]
        return self._run(runner, await self._session(runner), "Look up records 0 to 7.")

    async def parallel_sync_opt_in(self) -> h.Run:
        """Sync tools with ADK's opt-in thread pool (`RunConfig.tool_thread_pool_config`)."""
        runner = self._parallel[True]
        config = RunConfig(tool_thread_pool_config=ToolThreadPoolConfig(max_workers=8))
        return self._run(runner, await self._session(runner), "Look up records 0 to 7.", config)


if __name__ == "__main__":
    h.main(AdkWorkloads)
