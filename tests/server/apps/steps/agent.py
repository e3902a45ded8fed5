"""An agent of several steps: the model calls `step` three times, then answers (streamed word
by word when asked to). `step` is a sync tool with a side effect: it counts its runs in the
session state (`steps_run`), so a test can tell a kept result from a re-run."""

import time
from collections.abc import AsyncIterator
from typing import Any

from rondo import Agent, ToolContext
from rondo.models.base import ModelRequest, ModelResponse
from rondo.types import Content, FunctionCall, Part

STEPS = 3


class StepsModel:
    name = "steps"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        done = 0
        for content in reversed(request.contents):
            if content.role == "user" and content.text:
                break
            done += sum(1 for p in content.parts if p.function_response)
        if done < STEPS:
            call = FunctionCall(name="step", args={"index": done + 1})
            yield ModelResponse(content=Content(role="model", parts=[Part(function_call=call)]))
            return
        text = f"done after {STEPS} steps"
        if stream:
            for i, word in enumerate(text.split(" ")):
                yield ModelResponse(
                    content=Content.model(word if i == 0 else " " + word), partial=True
                )
        yield ModelResponse(content=Content.model(text))


def step(index: int, tool_context: ToolContext) -> dict[str, Any]:
    """Does one step of the work (a side effect: counted in the state)."""
    time.sleep(0.05)
    tool_context.state["steps_run"] = int(tool_context.state.get("steps_run", 0)) + 1
    return {"step": index}


root_agent = Agent(name="steps", model=StepsModel(), tools=[step])
