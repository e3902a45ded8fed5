"""rondo requests ↔ OpenAI Chat Completions wire types (used by `rondo.models.openai`).

Pure translation, no I/O. Works for OpenAI and for OpenAI-compatible servers (llama.cpp,
vLLM, Ollama, LM Studio), which add `reasoning_content` (or `reasoning`) for thoughts.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from openai.types import CompletionUsage
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionContentPartParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionToolChoiceOptionParam,
    ChatCompletionToolMessageParam,
)
from openai.types.chat.completion_create_params import ResponseFormat
from openai.types.shared_params import FunctionDefinition
from pydantic import BaseModel

from rondo._ids import new_client_call_id
from rondo.models._shared import (
    CONTENT_FILTER,
    MALFORMED_FUNCTION_CALL,
    REFUSAL,
    CallIds,
    data_url,
    dump_json,
    malformed_arguments_message,
    parse_arguments,
    unpaired_result_text,
)
from rondo.models.base import FunctionDeclaration, GenerateConfig, ModelResponse
from rondo.types import Content, FunctionCall, Part, Usage

__all__ = [
    "ChunkReader",
    "build_messages",
    "build_response_format",
    "build_tool_choice",
    "build_tools",
    "parse_completion",
]

# OpenAI's finish reasons, in rondo's provider-neutral words.
_FINISH = {
    "stop": "stop",
    "length": "max_tokens",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": CONTENT_FILTER,
}
_AUDIO_FORMATS: dict[str, Literal["wav", "mp3"]] = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


# -- request ------------------------------------------------------------------------------------


def build_messages(
    system_instruction: str | None, contents: Iterable[Content]
) -> list[ChatCompletionMessageParam]:
    """The chat history: system message, then one or more messages per content."""
    messages: list[ChatCompletionMessageParam] = []
    if system_instruction:
        messages.append({"role": "system", "content": system_instruction})
    ids = CallIds()
    for content in contents:
        if content.role == "model":
            assistant = _assistant_message(content, ids)
            if assistant is not None:
                messages.append(assistant)
        else:
            messages.extend(_user_messages(content, ids))
    return messages


def _assistant_message(
    content: Content, ids: CallIds
) -> ChatCompletionAssistantMessageParam | None:
    texts: list[str] = []
    calls: list[ChatCompletionMessageFunctionToolCallParam] = []
    for part in content.parts:
        if part.thought:
            continue  # Chat Completions takes no reasoning back.
        if part.text:
            texts.append(part.text)
        call = part.function_call
        if call is not None:
            calls.append(
                {
                    "id": ids.call_id(call),
                    "type": "function",
                    "function": {"name": call.name, "arguments": dump_json(call.args)},
                }
            )
    if not texts and not calls:
        return None
    # An empty string rather than null when there is no text: compatible servers such as
    # llama-cpp-python reject a null (or missing) assistant content.
    message: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
    return message


def _user_messages(content: Content, ids: CallIds) -> list[ChatCompletionMessageParam]:
    # Tool results first: they must directly follow the assistant message that called them.
    messages: list[ChatCompletionMessageParam] = []
    parts: list[ChatCompletionContentPartParam] = []
    for part in content.parts:
        response = part.function_response
        if response is not None:
            call_id = ids.response_id(response)
            if call_id is None:
                # No call waits for it: tell the model in words rather than break pairing.
                text = unpaired_result_text(response)
                parts.append({"type": "text", "text": text})
                continue
            tool: ChatCompletionToolMessageParam = {
                "role": "tool",
                "tool_call_id": call_id,
                "content": dump_json(response.response),
            }
            messages.append(tool)
        elif not part.thought:
            converted = _user_part(part)
            if converted is not None:
                parts.append(converted)
    if parts:
        if all(p["type"] == "text" for p in parts):
            text = "\n".join(str(p.get("text", "")) for p in parts)
            messages.append({"role": "user", "content": text})
        else:
            messages.append({"role": "user", "content": parts})
    return messages


def _user_part(part: Part) -> ChatCompletionContentPartParam | None:
    if part.text:
        return {"type": "text", "text": part.text}
    blob = part.inline_data
    if blob is not None:
        if blob.mime_type.startswith("image/"):
            return {"type": "image_url", "image_url": {"url": data_url(blob)}}
        audio_format = _AUDIO_FORMATS.get(blob.mime_type)
        if audio_format is not None:
            encoded = base64.b64encode(blob.data).decode("ascii")
            return {"type": "input_audio", "input_audio": {"data": encoded, "format": audio_format}}
        return {
            "type": "file",
            "file": {"file_data": data_url(blob), "filename": blob.display_name or "file"},
        }
    file = part.file_data
    if file is not None:
        if (file.mime_type or "image/").startswith("image/"):
            return {"type": "image_url", "image_url": {"url": file.file_uri}}
        return {"type": "text", "text": f"[file: {file.file_uri}]"}
    if part.executable_code is not None:
        return {"type": "text", "text": part.executable_code.code}
    if part.code_execution_result is not None:
        return {"type": "text", "text": part.code_execution_result.output}
    return None


def build_tools(
    declarations: Iterable[FunctionDeclaration],
) -> list[ChatCompletionFunctionToolParam]:
    tools: list[ChatCompletionFunctionToolParam] = []
    for declaration in declarations:
        function: FunctionDefinition = {
            "name": declaration.name,
            "parameters": declaration.parameters,
        }
        if declaration.description:
            function["description"] = declaration.description
        tools.append({"type": "function", "function": function})
    return tools


def build_tool_choice(choice: str | None) -> ChatCompletionToolChoiceOptionParam | None:
    if choice is None:
        return None
    if choice == "auto":
        return "auto"
    if choice == "none":
        return "none"
    if choice == "required":
        return "required"
    return {"type": "function", "function": {"name": choice}}


def build_response_format(config: GenerateConfig) -> ResponseFormat | None:
    if config.response_schema is not None:
        return {
            "type": "json_schema",
            # Not strict: strict mode demands `additionalProperties: false` and every property
            # required, which ordinary schemas (optional fields) do not satisfy.
            "json_schema": {"name": "response", "schema": config.response_schema, "strict": False},
        }
    if config.response_mime_type == "application/json":
        return {"type": "json_object"}
    return None


# -- response -----------------------------------------------------------------------------------


def convert_usage(usage: CompletionUsage | None) -> Usage | None:
    if usage is None:
        return None
    completion = usage.completion_tokens_details
    prompt = usage.prompt_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        total_tokens=usage.total_tokens or 0,
        thoughts_tokens=(completion.reasoning_tokens or 0) if completion else 0,
        cached_tokens=(prompt.cached_tokens or 0) if prompt else 0,
    )


def _reasoning(message: BaseModel) -> str | None:
    """Reasoning text that OpenAI-compatible servers add as an extra field."""
    extra = message.model_extra
    if not extra:
        return None
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _model_name(response: ChatCompletion | ChatCompletionChunk) -> str | None:
    # The SDK does not validate responses; some compatible servers leave out required fields.
    return getattr(response, "model", None) or None


@dataclass(slots=True)
class _Outcome:
    """Finish reason and in-response errors (SPEC M5) gathered from one choice."""

    finish_reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None

    def finish(self, reason: str | None) -> None:
        if reason is None:
            return
        self.finish_reason = _FINISH.get(reason, reason)
        if self.finish_reason == CONTENT_FILTER and self.error_code is None:
            self.error_code = CONTENT_FILTER
            self.error_message = "the provider's content filter stopped the response"

    def refuse(self, refusal: str) -> None:
        self.error_code = REFUSAL
        self.error_message = refusal

    def malformed(self, name: str, raw: str | None) -> None:
        if self.error_code is None:
            self.error_code = MALFORMED_FUNCTION_CALL
            self.error_message = malformed_arguments_message(name, raw)


def parse_completion(completion: ChatCompletion, *, include_thoughts: bool) -> ModelResponse:
    """A whole (non-streamed) completion as one response."""
    outcome = _Outcome()
    parts: list[Part] = []
    if completion.choices:
        choice = completion.choices[0]
        message = choice.message
        reasoning = _reasoning(message) if include_thoughts else None
        if reasoning:
            parts.append(Part(text=reasoning, thought=True))
        if message.content:
            parts.append(Part(text=message.content))
        for tool_call in message.tool_calls or ():
            if tool_call.type != "function":
                continue  # custom (free-form) tools are never declared by rondo
            function = tool_call.function
            args = parse_arguments(function.arguments)
            if args is None:
                outcome.malformed(function.name, function.arguments)
                continue
            parts.append(
                Part(function_call=FunctionCall(name=function.name, args=args, id=tool_call.id))
            )
        if message.refusal:
            outcome.refuse(message.refusal)
        outcome.finish(getattr(choice, "finish_reason", None))
    return ModelResponse(
        content=Content(role="model", parts=parts) if parts else None,
        usage=convert_usage(completion.usage),
        finish_reason=outcome.finish_reason,
        error_code=outcome.error_code,
        error_message=outcome.error_message,
        model_version=_model_name(completion),
        turn_complete=True,
    )


@dataclass(slots=True)
class _CallBuffer:
    id: str
    name: str = ""
    arguments: list[str] = field(default_factory=list[str])


class ChunkReader:
    """Turns streamed chunks into partial responses for the shared `StreamAggregator`.

    Tool-call arguments arrive as raw JSON fragments keyed by the call's index; they are
    assembled per index and a call is released, complete, when the choice finishes (or the
    stream ends) — a half-received call must never look callable.
    """

    __slots__ = ("_calls", "_include_thoughts", "_outcome", "_refusal")

    def __init__(self, *, include_thoughts: bool) -> None:
        self._include_thoughts = include_thoughts
        self._calls: dict[int, _CallBuffer] = {}
        self._outcome = _Outcome()
        self._refusal: list[str] = []

    def read(self, chunk: ChatCompletionChunk) -> ModelResponse:
        parts: list[Part] = []
        finished = False
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            reasoning = _reasoning(delta) if self._include_thoughts else None
            if reasoning:
                parts.append(Part(text=reasoning, thought=True))
            if delta.content:
                parts.append(Part(text=delta.content))
            if delta.refusal:
                self._refusal.append(delta.refusal)
            for tool_call in delta.tool_calls or ():
                buffer = self._calls.get(tool_call.index)
                if buffer is None:
                    # A server that sends no id still needs one to pair the result with.
                    buffer = _CallBuffer(id=tool_call.id or new_client_call_id())
                    self._calls[tool_call.index] = buffer
                function = tool_call.function
                if function is not None:
                    if function.name and not buffer.name:
                        buffer.name = function.name
                    if function.arguments:
                        buffer.arguments.append(function.arguments)
            if choice.finish_reason is not None:
                parts.extend(self._release_calls())
                self._outcome.finish(choice.finish_reason)
                finished = True
        return self._response(parts, chunk, finished)

    def close(self) -> ModelResponse | None:
        """What is still held when the stream ends without a finish reason."""
        parts = self._release_calls()
        if not parts and not self._refusal:
            return None
        return self._response(parts, None, True)

    def _release_calls(self) -> list[Part]:
        parts: list[Part] = []
        for index in sorted(self._calls):
            buffer = self._calls[index]
            raw = "".join(buffer.arguments)
            args = parse_arguments(raw)
            if args is None:
                self._outcome.malformed(buffer.name, raw)
                continue
            parts.append(
                Part(function_call=FunctionCall(name=buffer.name, args=args, id=buffer.id))
            )
        self._calls.clear()
        return parts

    def _response(
        self, parts: list[Part], chunk: ChatCompletionChunk | None, finished: bool
    ) -> ModelResponse:
        outcome = self._outcome
        if finished and self._refusal:
            outcome.refuse("".join(self._refusal))
            self._refusal.clear()
        return ModelResponse(
            content=Content(role="model", parts=parts) if parts else None,
            partial=True,
            usage=convert_usage(chunk.usage) if chunk is not None else None,
            finish_reason=outcome.finish_reason if finished else None,
            error_code=outcome.error_code if finished else None,
            error_message=outcome.error_message if finished else None,
            model_version=_model_name(chunk) if chunk is not None else None,
        )
