"""Message data shared by models, tools, events and stores.

These are frozen pydantic models (SPEC G1): they serialize to JSON losslessly (bytes as base64)
and a changed record is a new record (`model_copy(update=...)`), so a store can share decoded
records and no callback can change history in place. Their lists and maps (`parts`, `args`,
`response`) refuse changes too (`FrozenRecordError`); values nested inside a JSON value are the
caller's to leave alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, TypeAlias

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from rondo._frozen import ReadOnlyDict, ReadOnlyList, empty_list, empty_map

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


# A record's lists and maps refuse changes (G1); empty ones are shared. The values are the
# JSON a caller or a model gave: typed Any so that a record is built from any typed dict
# (dict is invariant: a `dict[str, str]` is no `dict[str, object]`), as pydantic reads them.
FrozenMap = Annotated[dict[str, Any], AfterValidator(ReadOnlyDict)]


class _Data(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        ser_json_bytes="base64",
        val_json_bytes="base64",
        defer_build=True,
    )


class Blob(_Data):
    """Inline binary data (an image, audio...)."""

    mime_type: str
    data: bytes
    display_name: str | None = None


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
    """A model's request to run a tool. `id` pairs it with its `FunctionResponse`."""

    name: str
    args: FrozenMap = Field(default_factory=empty_map)
    id: str | None = None
    # Streaming only: argument fragments and whether more fragments follow.
    partial_args: list[PartialArg] | None = None
    will_continue: bool | None = None


class FunctionResponse(_Data):
    """A tool's result, sent back to the model. `id` is the call's id."""

    name: str
    response: FrozenMap = Field(default_factory=empty_map)
    id: str | None = None


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
    """A message: a role (`"user"` or `"model"`) and its parts."""

    role: str = "user"
    parts: Annotated[list[Part], AfterValidator(ReadOnlyList)] = Field(default_factory=empty_list)

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
    """Token usage reported by a provider, and its price.

    `cached_tokens` are prompt tokens read from the provider's prompt cache and
    `cache_write_tokens` those written to it (both are counted in `input_tokens` too).
    `cost_usd` is the call's price in US dollars from a maintained price source
    (`genai-prices`); None means *unpriced* (an unknown model, or no price source installed),
    never free. `free` marks a call that ran on this machine (a `local:` model): its
    `cost_usd` is 0 because nothing is charged, not because a price list says so.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    thoughts_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    free: bool = False

    def __add__(self, other: Usage) -> Usage:
        both_priced = self.cost_usd is not None and other.cost_usd is not None
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            thoughts_tokens=self.thoughts_tokens + other.thoughts_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            # A sum with an unpriced part is unpriced: a partial figure would read as the cost.
            cost_usd=(self.cost_usd or 0.0) + (other.cost_usd or 0.0) if both_priced else None,
            free=self.free and other.free,
        )


# What a run accepts as the user's message: content, text, one part or several (None: no new
# message, to continue a paused or interrupted run).
Message: TypeAlias = "Content | str | Part | Sequence[Part] | None"
