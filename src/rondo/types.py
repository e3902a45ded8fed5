"""Message data shared by models, tools, events and stores.

These are frozen pydantic models (SPEC G1): they serialize to JSON losslessly (bytes as base64)
and a changed record is a new record (`model_copy(update=...)`), so a store can share decoded
records and no callback can change history in place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Blob",
    "CodeExecutionResult",
    "Content",
    "ExecutableCode",
    "FileData",
    "FunctionCall",
    "FunctionResponse",
    "Part",
    "PartialArg",
    "Usage",
]


class _Data(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        ser_json_bytes="base64",
        val_json_bytes="base64",
        defer_build=True,
    )


# DESIGN §4 writes `Content(role, parts)`, `FunctionCall(name, args, id)`: the leading fields of
# these records may be given by position too. Only what the caller gave is passed on, so the
# record's set fields (and what `exclude_unset` dumps) stay the caller's.
_UNSET: Any = object()


def _given(into: dict[str, Any], /, **fields: Any) -> dict[str, Any]:
    for name, value in fields.items():
        if value is not _UNSET:
            into[name] = value
    return into


class Blob(_Data):
    """Inline binary data (an image, audio...): `Blob(mime_type, data)`."""

    mime_type: str
    data: bytes
    display_name: str | None = None

    def __init__(self, mime_type: str = _UNSET, data: bytes = _UNSET, **fields: Any) -> None:
        super().__init__(**_given(fields, mime_type=mime_type, data=data))


class FileData(_Data):
    """A reference to data stored elsewhere (a URI)."""

    file_uri: str
    mime_type: str | None = None
    display_name: str | None = None


class PartialArg(_Data):
    """One streamed fragment of a function call's arguments, addressed by a JSON path.

    String values at the same path are appended; other values replace.
    """

    json_path: str
    value: Any = None


class FunctionCall(_Data):
    """A model's request to run a tool: `FunctionCall(name, args, id)`. `id` pairs it with its
    `FunctionResponse`."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict[str, Any])
    id: str | None = None
    # Streaming only: argument fragments and whether more fragments follow.
    partial_args: list[PartialArg] | None = None
    will_continue: bool | None = None

    def __init__(
        self,
        name: str = _UNSET,
        args: Mapping[str, Any] = _UNSET,
        id: str | None = _UNSET,
        **fields: Any,
    ) -> None:
        super().__init__(**_given(fields, name=name, args=args, id=id))


class FunctionResponse(_Data):
    """A tool's result, sent back to the model: `FunctionResponse(name, response, id)`. `id`
    is the call's id."""

    name: str
    response: dict[str, Any] = Field(default_factory=dict[str, Any])
    id: str | None = None

    def __init__(
        self,
        name: str = _UNSET,
        response: Mapping[str, Any] = _UNSET,
        id: str | None = _UNSET,
        **fields: Any,
    ) -> None:
        super().__init__(**_given(fields, name=name, response=response, id=id))


class ExecutableCode(_Data):
    language: str = "python"
    code: str


class CodeExecutionResult(_Data):
    outcome: str = "ok"
    output: str = ""


class Part(_Data):
    """One piece of a message: text (or thought), a function call or response, or data."""

    text: str | None = None
    thought: bool = False
    thought_signature: bytes | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    executable_code: ExecutableCode | None = None
    code_execution_result: CodeExecutionResult | None = None

    def is_empty(self) -> bool:
        """True when the part carries nothing a model could read."""
        return (
            not self.text
            and self.function_call is None
            and self.function_response is None
            and self.inline_data is None
            and self.file_data is None
            and self.executable_code is None
            and self.code_execution_result is None
        )


class Content(_Data):
    """A message: a role (`"user"` or `"model"`) and its parts: `Content(role, parts)`."""

    role: str = "user"
    parts: list[Part] = Field(default_factory=list[Part])

    def __init__(self, role: str = _UNSET, parts: Sequence[Part] = _UNSET, **fields: Any) -> None:
        super().__init__(**_given(fields, role=role, parts=parts))

    @classmethod
    def user(cls, text: str) -> Content:
        return cls(role="user", parts=[Part(text=text)])

    @classmethod
    def model(cls, text: str) -> Content:
        return cls(role="model", parts=[Part(text=text)])

    @property
    def text(self) -> str:
        """The concatenated non-thought text of the parts."""
        return "".join(p.text for p in self.parts if p.text and not p.thought)


class Usage(_Data):
    """Token usage reported by a provider."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    thoughts_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            thoughts_tokens=self.thoughts_tokens + other.thoughts_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
        )
