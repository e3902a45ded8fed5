"""Turns a stream of partial model responses into one final aggregate (SPEC A1–A3).

Adapters feed every provider chunk through `StreamAggregator.add` and yield what it returns
(the partial delta) immediately; when the provider stream ends normally they yield `close()`,
the single non-partial aggregate. A stream that raises never reaches `close()` (SPEC A3).
"""

from __future__ import annotations

import itertools
import re
from typing import Any, cast

from rondo.models.base import ModelResponse
from rondo.types import Content, FunctionCall, Part, PartialArg, Usage

__all__ = ["StreamAggregator", "apply_partial_args"]

_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def _path_keys(json_path: str) -> list[str | int]:
    path = json_path[1:] if json_path.startswith("$") else "." + json_path.lstrip(".")
    keys: list[str | int] = []
    for match in _PATH_TOKEN.finditer(path):
        name, index = match.groups()
        keys.append(int(index) if index is not None else name)
    return keys


def _child(node: Any, key: str | int, default: Any) -> Any:
    """node[key], created as `default` when missing (lists grow with None)."""
    if isinstance(node, list):
        items = cast(list[object], node)
        index = int(key)
        while len(items) <= index:
            items.append(None)
        if items[index] is None:
            items[index] = default
        return items[index]
    mapping = cast(dict[Any, Any], node)
    return mapping.setdefault(key, default)


def _set(node: Any, key: str | int, value: Any) -> None:
    if isinstance(node, list):
        items = cast(list[object], node)
        _child(items, key, None)
        previous: Any = items[int(key)]
        items[int(key)] = previous + value if _both_str(previous, value) else value
    else:
        mapping = cast(dict[Any, Any], node)
        previous = mapping.get(key)
        mapping[key] = previous + value if _both_str(previous, value) else value


def _both_str(a: Any, b: Any) -> bool:
    return isinstance(a, str) and isinstance(b, str)


def apply_partial_args(args: dict[str, object], fragments: list[PartialArg]) -> None:
    """Write JSON-path fragments into `args`; strings at the same path are appended."""
    for fragment in fragments:
        keys = _path_keys(fragment.json_path)
        if not keys:
            continue
        node: Any = args
        for key, nxt in itertools.pairwise(keys):
            node = _child(node, key, [] if isinstance(nxt, int) else {})
        _set(node, keys[-1], fragment.value)


class _PendingCall:
    __slots__ = ("args", "id", "name", "signature")

    def __init__(self, name: str, call_id: str | None, args: dict[str, object]) -> None:
        self.name = name
        self.id = call_id
        self.args = args
        # The thought signature any fragment carried (Gemini sends it on one of them).
        self.signature: bytes | None = None

    def part(self) -> Part:
        return Part(
            function_call=FunctionCall(name=self.name, args=self.args, id=self.id),
            thought_signature=self.signature,
        )


class StreamAggregator:
    """Accumulates partial responses; text and thought never share a part."""

    def __init__(self) -> None:
        self._parts: list[Part] = []
        self._text: list[str] = []
        self._text_is_thought = False
        self._thought_signature: bytes | None = None
        self._calls: dict[str, _PendingCall] = {}
        self._usage: Usage | None = None
        self._finish_reason: str | None = None
        self._grounding: dict[str, object] | None = None
        self._citation: dict[str, object] | None = None
        self._error_code: str | None = None
        self._error_message: str | None = None
        self._model_version: str | None = None
        self._seen = False

    @property
    def has_data(self) -> bool:
        return self._seen

    def add(self, response: ModelResponse) -> ModelResponse:
        """Record one chunk and return it as a partial response to yield now."""
        self._seen = True
        content = response.content
        if content is not None:
            for part in content.parts:
                self._add_part(part)
        if response.usage is not None:
            self._usage = response.usage
        if response.finish_reason is not None:
            self._finish_reason = response.finish_reason
        if response.grounding_metadata is not None:
            self._grounding = response.grounding_metadata
        if response.citation_metadata is not None:
            self._citation = response.citation_metadata
        if response.error_code is not None:
            self._error_code = response.error_code
            self._error_message = response.error_message
        if response.model_version is not None:
            self._model_version = response.model_version
        if response.partial:
            return response
        return response.model_copy(update={"partial": True})

    def _add_part(self, part: Part) -> None:
        if part.text is not None and part.function_call is None:
            if self._text and part.thought != self._text_is_thought:
                self._flush_text()
            if part.text:
                self._text.append(part.text)
            self._text_is_thought = part.thought
            if part.thought_signature is not None:
                self._thought_signature = part.thought_signature
            return
        self._flush_text()
        call = part.function_call
        if call is None:
            if not part.is_empty() or part.thought_signature is not None:
                self._parts.append(part)
            return
        if call.partial_args is None and not call.will_continue and not self._calls:
            self._parts.append(Part(function_call=call, thought_signature=part.thought_signature))
            return
        self._add_call_fragment(call, part.thought_signature)

    def _add_call_fragment(self, call: FunctionCall, signature: bytes | None) -> None:
        key = call.id or "__current__"
        pending = self._calls.get(key)
        if pending is None:
            if key == "__current__" and self._calls and not call.name:
                # A nameless continuation of the only call in flight.
                key, pending = next(iter(self._calls.items()))
            else:
                pending = _PendingCall(call.name, call.id, dict(call.args))
                self._calls[key] = pending
        elif call.args:
            pending.args.update(call.args)
        if call.name and not pending.name:
            pending.name = call.name
        if signature is not None:
            pending.signature = signature
        if call.partial_args:
            apply_partial_args(pending.args, call.partial_args)
        if not call.will_continue:
            del self._calls[key]
            self._parts.append(pending.part())

    def _flush_text(self) -> None:
        if not self._text:
            return
        self._parts.append(
            Part(
                text="".join(self._text),
                thought=self._text_is_thought,
                thought_signature=self._thought_signature,
            )
        )
        self._text = []
        self._thought_signature = None

    def close(self) -> ModelResponse | None:
        """The final non-partial aggregate, or None when nothing was streamed."""
        if not self._seen:
            return None
        self._flush_text()
        self._parts.extend(pending.part() for pending in self._calls.values())
        self._calls.clear()
        content = Content(role="model", parts=self._parts) if self._parts else None
        return ModelResponse(
            content=content,
            partial=False,
            turn_complete=True,
            usage=self._usage,
            finish_reason=self._finish_reason,
            grounding_metadata=self._grounding,
            citation_metadata=self._citation,
            error_code=self._error_code,
            error_message=self._error_message,
            model_version=self._model_version,
        )
