"""rondo requests ↔ Anthropic Messages API wire types (used by `rondo.models.anthropic`).

Pure translation, no I/O. Thinking blocks become thought parts that keep their signature, so
they can be passed back unchanged as the API requires when tools and thinking mix.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from anthropic import transform_schema
from anthropic.types import (
    ContentBlockParam,
    DocumentBlockParam,
    ImageBlockParam,
    Message,
    MessageDeltaUsage,
    MessageParam,
    OutputConfigParam,
    RawContentBlockDelta,
    RawMessageStreamEvent,
    TextBlockParam,
    ThinkingConfigParam,
    ToolChoiceParam,
    ToolParam,
    ToolResultBlockParam,
)
from anthropic.types import Usage as AnthropicUsage
from anthropic.types.raw_content_block_start_event import ContentBlock as StartedBlock

from rondo.models._shared import (
    MALFORMED_FUNCTION_CALL,
    REFUSAL,
    CallIds,
    dump_json,
    is_error_response,
    malformed_arguments_message,
    parse_arguments,
    unpaired_result_text,
)
from rondo.models.base import FunctionDeclaration, GenerateConfig, ModelResponse
from rondo.types import Content, FunctionCall, Part, Usage

__all__ = [
    "EventReader",
    "build_messages",
    "build_output_config",
    "build_thinking",
    "build_tool_choice",
    "build_tools",
    "parse_message",
]

# A redacted thinking block has no text and an opaque `data` payload instead of a signature.
# It is kept as a thought part whose signature carries this prefix (real signatures are
# base64 and never contain ':'), so it round-trips as the same block type.
REDACTED_THINKING = b"redacted_thinking:"

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "max_tokens",
    "tool_use": "tool_calls",
    "refusal": REFUSAL,
}
_IMAGE_TYPES: dict[str, Literal["image/jpeg", "image/png", "image/gif", "image/webp"]] = {
    "image/jpeg": "image/jpeg",
    "image/jpg": "image/jpeg",
    "image/png": "image/png",
    "image/gif": "image/gif",
    "image/webp": "image/webp",
}


# -- request ------------------------------------------------------------------------------------


def build_messages(contents: Iterable[Content]) -> list[MessageParam]:
    messages: list[MessageParam] = []
    ids = CallIds()
    for content in contents:
        if content.role == "model":
            blocks = _assistant_blocks(content, ids)
            if blocks:
                messages.append({"role": "assistant", "content": blocks})
        else:
            blocks = _user_blocks(content, ids)
            if blocks:
                messages.append({"role": "user", "content": blocks})
    return messages


def _assistant_blocks(content: Content, ids: CallIds) -> list[ContentBlockParam]:
    blocks: list[ContentBlockParam] = []
    for part in content.parts:
        signature = part.thought_signature
        if part.thought:
            if signature is None:
                continue  # a thought from another provider: Claude cannot verify it
            if signature.startswith(REDACTED_THINKING):
                data = signature[len(REDACTED_THINKING) :].decode()
                blocks.append({"type": "redacted_thinking", "data": data})
            else:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": part.text or "",
                        "signature": signature.decode(),
                    }
                )
            continue
        call = part.function_call
        if call is not None:
            blocks.append(
                {"type": "tool_use", "id": ids.call_id(call), "name": call.name, "input": call.args}
            )
        elif part.text:
            blocks.append({"type": "text", "text": part.text})
    return blocks


def _user_blocks(content: Content, ids: CallIds) -> list[ContentBlockParam]:
    # The API wants tool results before anything else in their user message.
    results: list[ContentBlockParam] = []
    others: list[ContentBlockParam] = []
    for part in content.parts:
        response = part.function_response
        if response is not None:
            call_id = ids.response_id(response)
            if call_id is None:
                text = unpaired_result_text(response)
                others.append({"type": "text", "text": text})
                continue
            result: ToolResultBlockParam = {
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": dump_json(response.response),
            }
            if is_error_response(response):
                result["is_error"] = True
            results.append(result)
        elif not part.thought:
            block = _user_block(part)
            if block is not None:
                others.append(block)
    return results + others


def _user_block(part: Part) -> ContentBlockParam | None:
    if part.text:
        return {"type": "text", "text": part.text}
    blob = part.inline_data
    if blob is not None:
        data = base64.b64encode(blob.data).decode("ascii")
        image_type = _IMAGE_TYPES.get(blob.mime_type)
        if image_type is not None:
            image: ImageBlockParam = {
                "type": "image",
                "source": {"type": "base64", "media_type": image_type, "data": data},
            }
            return image
        if blob.mime_type == "application/pdf":
            pdf: DocumentBlockParam = {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": data},
            }
            return pdf
        if blob.mime_type.startswith("text/"):
            text_doc: DocumentBlockParam = {
                "type": "document",
                "source": {
                    "type": "text",
                    "media_type": "text/plain",
                    "data": blob.data.decode("utf-8", "replace"),
                },
            }
            return text_doc
        return {"type": "text", "text": f"[unsupported attachment: {blob.mime_type}]"}
    file = part.file_data
    if file is not None:
        if file.mime_type == "application/pdf":
            return {"type": "document", "source": {"type": "url", "url": file.file_uri}}
        return {"type": "image", "source": {"type": "url", "url": file.file_uri}}
    if part.executable_code is not None:
        return {"type": "text", "text": part.executable_code.code}
    if part.code_execution_result is not None:
        return {"type": "text", "text": part.code_execution_result.output}
    return None


def build_tools(declarations: Iterable[FunctionDeclaration]) -> list[ToolParam]:
    tools: list[ToolParam] = []
    for declaration in declarations:
        tool: ToolParam = {"name": declaration.name, "input_schema": declaration.parameters}
        if declaration.description:
            tool["description"] = declaration.description
        tools.append(tool)
    return tools


# Anthropic allows four cache breakpoints per request.
MAX_BREAKPOINTS = 4
_EPHEMERAL: dict[str, str] = {"type": "ephemeral"}


def build_system(text: str | None, *, cache: bool) -> str | list[TextBlockParam] | None:
    """The system prompt; with `cache`, one text block carrying a cache breakpoint."""
    if not text:
        return None
    if not cache:
        return text
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]


def mark_cache_breakpoints(
    messages: list[MessageParam], tools: list[ToolParam], *, system: bool
) -> None:
    """K3: breakpoints on the stable prefix — the system prompt (already marked by
    `build_system`), the last tool declaration, and the ends of the last two messages. The
    last message's mark is where the next step's request (this one plus the model's answer
    and the tool results) finds its prefix cached; the one before it keeps a hit when the last
    message is replaced (a retry). Marks on the latest blocks move as the conversation grows,
    so the cached prefix stays byte-identical from step to step."""
    left = MAX_BREAKPOINTS - (1 if system else 0)
    if tools and left:
        tools[-1]["cache_control"] = {"type": "ephemeral"}
        left -= 1
    for message in reversed(messages):
        if not left:
            break
        blocks = message["content"]
        if isinstance(blocks, str) or not blocks:
            continue
        last = cast(dict[str, object], list(blocks)[-1])
        if last.get("type") in ("thinking", "redacted_thinking"):
            continue  # thinking blocks cannot carry a breakpoint
        last["cache_control"] = dict(_EPHEMERAL)
        left -= 1


def build_tool_choice(choice: str | None) -> ToolChoiceParam | None:
    if choice is None:
        return None
    if choice == "auto":
        return {"type": "auto"}
    if choice == "none":
        return {"type": "none"}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def build_thinking(config: GenerateConfig) -> ThinkingConfigParam | None:
    """`thinking_budget`: 0 disables, -1 lets the model decide, n > 0 is a token budget.

    `include_thoughts=False` keeps thinking on but omits its text (signatures still come).
    """
    budget = config.thinking_budget
    display: Literal["summarized", "omitted"] | None = None
    if config.include_thoughts is not None:
        display = "summarized" if config.include_thoughts else "omitted"
    if budget == 0:
        return {"type": "disabled"}
    if budget is not None and budget > 0:
        enabled: ThinkingConfigParam = {"type": "enabled", "budget_tokens": budget}
        if display is not None:
            enabled["display"] = display
        return enabled
    if budget is not None or config.include_thoughts:
        adaptive: ThinkingConfigParam = {"type": "adaptive"}
        if display is not None:
            adaptive["display"] = display
        return adaptive
    return None


def build_output_config(config: GenerateConfig) -> OutputConfigParam | None:
    if config.response_schema is None:
        return None
    # The API accepts a strict subset of JSON schema; the SDK's own transform produces it.
    return {"format": {"type": "json_schema", "schema": transform_schema(config.response_schema)}}


# -- response -----------------------------------------------------------------------------------


def convert_usage(usage: AnthropicUsage | MessageDeltaUsage) -> Usage:
    # rondo counts cached prompt tokens as input (as OpenAI and Gemini do); Anthropic reports
    # them apart from `input_tokens`.
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    prompt = (usage.input_tokens or 0) + cache_write + cache_read
    details = usage.output_tokens_details
    return Usage(
        input_tokens=prompt,
        output_tokens=usage.output_tokens,
        total_tokens=prompt + usage.output_tokens,
        thoughts_tokens=details.thinking_tokens if details is not None else 0,
        cached_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


@dataclass(slots=True)
class _Outcome:
    finish_reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None

    def finish(self, reason: str | None, explanation: str | None) -> None:
        if reason is None:
            return
        self.finish_reason = _FINISH.get(reason, reason)
        if reason == "refusal":
            self.error_code = REFUSAL
            self.error_message = explanation or "the model declined to answer"

    def malformed(self, name: str, raw: str | None) -> None:
        if self.error_code is None:
            self.error_code = MALFORMED_FUNCTION_CALL
            self.error_message = malformed_arguments_message(name, raw)


def _thought(thinking: str, signature: str) -> Part:
    return Part(text=thinking or None, thought=True, thought_signature=signature.encode())


def _redacted(data: str) -> Part:
    return Part(thought=True, thought_signature=REDACTED_THINKING + data.encode())


def parse_message(message: Message) -> ModelResponse:
    outcome = _Outcome()
    parts: list[Part] = []
    for block in message.content:
        if block.type == "text":
            if block.text:
                parts.append(Part(text=block.text))
        elif block.type == "thinking":
            parts.append(_thought(block.thinking, block.signature))
        elif block.type == "redacted_thinking":
            parts.append(_redacted(block.data))
        elif block.type == "tool_use":
            args: Any = block.input
            if not isinstance(args, dict):
                outcome.malformed(block.name, dump_json(args))
                continue
            call = FunctionCall(name=block.name, args=cast(dict[str, object], args), id=block.id)
            parts.append(Part(function_call=call))
        # Server-side tool blocks (web search...) are never requested by rondo.
    details = message.stop_details
    outcome.finish(message.stop_reason, details.explanation if details is not None else None)
    return ModelResponse(
        content=Content(role="model", parts=parts) if parts else None,
        usage=convert_usage(message.usage),
        finish_reason=outcome.finish_reason,
        error_code=outcome.error_code,
        error_message=outcome.error_message,
        model_version=message.model or None,
        turn_complete=True,
    )


@dataclass(slots=True)
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    json: list[str] = field(default_factory=list[str])
    has_text: bool = False


class EventReader:
    """Turns streamed message events into partial responses for the `StreamAggregator`.

    Text and thinking deltas pass straight through; a tool call's JSON input is assembled per
    content block and released, complete, when its block stops.
    """

    __slots__ = ("_blocks", "_input_usage", "_model", "_outcome")

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._outcome = _Outcome()
        self._input_usage: AnthropicUsage | None = None
        self._model: str | None = None

    def read(self, event: RawMessageStreamEvent) -> ModelResponse | None:
        if event.type == "message_start":
            self._input_usage = event.message.usage
            self._model = event.message.model or None
            return ModelResponse(
                partial=True, usage=convert_usage(event.message.usage), model_version=self._model
            )
        if event.type == "content_block_start":
            return self._start(event.index, event.content_block)
        if event.type == "content_block_delta":
            return self._delta(event.index, event.delta)
        if event.type == "content_block_stop":
            return self._stop(event.index)
        if event.type == "message_delta":
            details = event.delta.stop_details
            self._outcome.finish(
                event.delta.stop_reason, details.explanation if details is not None else None
            )
            outcome = self._outcome
            return ModelResponse(
                partial=True,
                usage=self._usage(event.usage),
                finish_reason=outcome.finish_reason,
                error_code=outcome.error_code,
                error_message=outcome.error_message,
            )
        return None  # message_stop

    def _start(self, index: int, block: StartedBlock) -> ModelResponse | None:
        if block.type == "tool_use":
            self._blocks[index] = _Block(block.type, id=block.id, name=block.name)
            return None
        self._blocks[index] = _Block(block.type)
        if block.type == "redacted_thinking":
            return _partial(_redacted(block.data))
        if block.type == "text" and block.text:
            return _partial(Part(text=block.text))
        return None

    def _delta(self, index: int, delta: RawContentBlockDelta) -> ModelResponse | None:
        block = self._blocks.get(index)
        if delta.type == "text_delta":
            return _partial(Part(text=delta.text)) if delta.text else None
        if delta.type == "thinking_delta":
            if not delta.thinking:
                return None
            if block is not None:
                block.has_text = True
            return _partial(Part(text=delta.thinking, thought=True))
        if delta.type == "signature_delta":
            signature = delta.signature.encode()
            if block is not None and block.has_text:
                # Joins the thinking text the aggregator is buffering.
                return _partial(Part(text="", thought=True, thought_signature=signature))
            # Thinking shown as "omitted": a signature-only thought part.
            return _partial(Part(thought=True, thought_signature=signature))
        if delta.type == "input_json_delta" and block is not None:
            block.json.append(delta.partial_json)
        return None

    def _stop(self, index: int) -> ModelResponse | None:
        block = self._blocks.pop(index, None)
        if block is None or block.kind != "tool_use":
            return None
        raw = "".join(block.json)
        args = parse_arguments(raw)
        if args is None:
            self._outcome.malformed(block.name, raw)
            return ModelResponse(
                partial=True,
                error_code=self._outcome.error_code,
                error_message=self._outcome.error_message,
            )
        return _partial(Part(function_call=FunctionCall(name=block.name, args=args, id=block.id)))

    def _usage(self, delta: MessageDeltaUsage) -> Usage:
        # message_delta counts output cumulatively; input comes from message_start unless the
        # delta repeats it.
        start = self._input_usage
        merged = MessageDeltaUsage(
            output_tokens=delta.output_tokens,
            output_tokens_details=delta.output_tokens_details,
            input_tokens=_first(delta.input_tokens, start.input_tokens if start else None),
            cache_read_input_tokens=_first(
                delta.cache_read_input_tokens, start.cache_read_input_tokens if start else None
            ),
            cache_creation_input_tokens=_first(
                delta.cache_creation_input_tokens,
                start.cache_creation_input_tokens if start else None,
            ),
        )
        return convert_usage(merged)


def _first(a: int | None, b: int | None) -> int | None:
    return a if a is not None else b


def _partial(part: Part) -> ModelResponse:
    return ModelResponse(content=Content(role="model", parts=[part]), partial=True)
