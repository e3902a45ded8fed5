"""A deterministic assistant for the web UI's browser tests and the README screenshot.

`RuleModel` answers by rules instead of a language model, and streams its answers word by word
with a short pause, so a browser sees the text grow. The rules read the latest message:

- "weather in CITY" calls `get_weather`; "delete PATH" calls `delete_file`, which asks for
  confirmation; "save a note: TEXT" calls `save_note` (state and an artifact); "count to N"
  calls the streaming `count_to`; "refund order N" calls the long-running `request_refund`,
  whose result a person delivers later; "fail" makes the model raise;
- a tool result is answered with a sentence built from it; any other text is echoed, and the
  files a message carries are named with their type and size (what the model received), and
  an answer to a tool result names the files the conversation's messages still show it;
- a message about "the launch codes" trips the input guardrail: no model call (SPEC G6).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

from rondo import Agent, GuardrailFunctionOutput
from rondo.context import ToolContext
from rondo.errors import ModelError
from rondo.models.base import ModelRequest, ModelResponse
from rondo.tools import FunctionTool, LongRunningFunctionTool
from rondo.types import Content, FunctionCall, FunctionResponse, Part

WORD_PAUSE_S = 0.04
COUNT_PAUSE_S = 0.25


def get_weather(city: str) -> dict[str, Any]:
    """Returns the current weather for a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    if city.strip().lower() == "atlantis":
        raise LookupError(f"no weather station in {city}")
    return {"city": city, "temperature_c": 18, "condition": "sunny"}


def delete_file(path: str) -> dict[str, Any]:
    """Deletes a file (asks a human first).

    Args:
        path: The file to delete.
    """
    return {"deleted": path}


async def save_note(text: str, tool_context: ToolContext) -> dict[str, Any]:
    """Saves a note to the session's state and as an artifact.

    Args:
        text: The note.
    """
    notes = [*tool_context.state.get("notes", []), text]
    tool_context.state["notes"] = notes
    version = await tool_context.save_artifact("notes.txt", Part(text="\n".join(notes)))
    return {"saved": text, "count": len(notes), "artifact_version": version}


async def count_to(n: int) -> AsyncIterator[int]:
    """Counts from 1 to n, a number at a time (a streaming tool: each is reported as progress).

    Args:
        n: The last number.
    """
    for number in range(1, n + 1):
        await asyncio.sleep(COUNT_PAUSE_S)
        yield number


def request_refund(order: str) -> None:
    """Asks the shop for a refund; the shop answers later (a long-running tool).

    Args:
        order: The order number.
    """
    return None  # no answer yet: the run waits for the shop's result


_CALLS = (
    (re.compile(r"weather in (?P<arg>.+?)[?.!]*$", re.I), "get_weather", "city", str),
    (re.compile(r"delete (?P<arg>\S+)", re.I), "delete_file", "path", str),
    (re.compile(r"save a note: (?P<arg>.+)$", re.I), "save_note", "text", str),
    (re.compile(r"count to (?P<arg>\d+)", re.I), "count_to", "n", int),
    (re.compile(r"refund order (?P<arg>\S+)", re.I), "request_refund", "order", str),
)


def _answer_to_result(response: FunctionResponse) -> str:
    result = response.response
    if response.name == "get_weather":
        if "error" in result:
            return f"I could not get the weather: {result['error']}"
        return f"It is {result['temperature_c']}°C and {result['condition']} in {result['city']}."
    if response.name == "delete_file":
        if "deleted" in result:
            return f"Done: {result['deleted']} is deleted."
        if "error" in result:
            return f"I did not delete the file: {result['error']}"
        return "Skipped: the file was not touched."
    if response.name == "request_refund":
        return f"The shop answered: {result.get('status', result)}."
    if response.name == "count_to":
        return "Counted. That took a while."
    if response.name == "save_note":
        return f"Saved. You have {result['count']} note(s)."
    return f"The tool said: {result}"


class RuleModel:
    """A model that follows the rules in this module's docstring."""

    name = "rule-model"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        last = request.contents[-1]
        responses = [p.function_response for p in last.parts if p.function_response]
        if responses:
            text = " ".join(_answer_to_result(r) for r in responses)
            files = [p.inline_data for c in request.contents for p in c.parts if p.inline_data]
            if files:  # the files of the conversation still reach the model
                text += f" I still see {', '.join(f.display_name or 'a file' for f in files)}."
        else:
            said = last.text.strip()
            if said.lower() == "fail":
                raise ModelError("the rule model was asked to fail")
            for pattern, tool, param, kind in _CALLS:
                match = pattern.search(said)
                if match:
                    call = FunctionCall(name=tool, args={param: kind(match.group("arg"))})
                    yield ModelResponse(
                        content=Content(role="model", parts=[Part(function_call=call)])
                    )
                    return
            text = f"You said: {said}"
            files = [p.inline_data for p in last.parts if p.inline_data is not None]
            if files:
                sent = ", ".join(
                    f"{f.display_name} ({f.mime_type}, {len(f.data)} bytes)" for f in files
                )
                text = f"{text} and sent {sent}" if said else f"You sent {sent}"
        if stream:
            words = text.split(" ")
            for index, word in enumerate(words):
                await asyncio.sleep(WORD_PAUSE_S)
                piece = word if index == len(words) - 1 else word + " "
                yield ModelResponse(content=Content.model(piece), partial=True)
        yield ModelResponse(content=Content.model(text))


def no_launch_codes(ctx: Any, agent: Any, message: Content) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(
        tripwire_triggered="launch codes" in message.text.lower(),
        message="I can't discuss that.",
    )


root_agent = Agent(
    name="assistant",
    model=RuleModel(),
    instruction="You are a helpful assistant.",
    tools=[
        get_weather,
        FunctionTool(delete_file, require_confirmation=True),
        save_note,
        count_to,
        LongRunningFunctionTool(request_refund),
    ],
    input_guardrails=[no_launch_codes],
)
