"""The model boundary: what the loop sends a model and what comes back (SPEC M, A)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from rondo.types import Content, Usage

__all__ = [
    "FunctionDeclaration",
    "GenerateConfig",
    "Model",
    "ModelCapabilities",
    "ModelRequest",
    "ModelResponse",
    "SessionCacheHolder",
    "Usage",
    "model_capabilities",
    "session_cache_key",
]

_config = ConfigDict(
    extra="forbid", ser_json_bytes="base64", val_json_bytes="base64", defer_build=True
)


class FunctionDeclaration(BaseModel):
    """What a model is told about a tool: its name, description and JSON-schema parameters."""

    model_config = _config

    name: str
    description: str = ""
    parameters: dict[str, object] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class GenerateConfig(BaseModel):
    """Generation settings sent with a request. Adapters map each field to their provider."""

    model_config = _config

    system_instruction: str | None = None
    tools: list[FunctionDeclaration] = Field(default_factory=list[FunctionDeclaration])
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_output_tokens: int | None = None
    stop_sequences: list[str] | None = None
    seed: int | None = None
    # "auto", "none", "required", or the name of one tool the model must call.
    tool_choice: str | None = None
    response_schema: dict[str, object] | None = None
    response_mime_type: str | None = None
    thinking_budget: int | None = None
    include_thoughts: bool | None = None
    labels: dict[str, str] | None = None
    # K3/O6 prompt caching: set per request from `RunConfig.prompt_caching` (False here turns
    # it off for one agent). Adapters mark what they can: Anthropic `cache_control`
    # breakpoints, OpenAI's `prompt_cache_key` (this key: one per session).
    prompt_cache: bool | None = None
    prompt_cache_key: str | None = None
    # Provider-specific settings passed through untouched.
    extra: dict[str, Any] | None = None


class ModelResponse(BaseModel):
    """One response (or, when `partial`, one streamed delta) from a model.

    `error_code` / `error_message` carry a provider's own error report inside a response; they
    are distinct from exceptions raised by the call (SPEC M5). Frozen like the records it
    becomes: a hook that changes a response returns a new one (`model_copy(update=...)`).
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        ser_json_bytes="base64",
        val_json_bytes="base64",
        defer_build=True,
    )

    content: Content | None = None
    partial: bool = False
    turn_complete: bool | None = None
    usage: Usage | None = None
    error_code: str | None = None
    error_message: str | None = None
    interrupted: bool = False
    finish_reason: str | None = None
    model_version: str | None = None
    input_transcription: str | None = None
    output_transcription: str | None = None
    grounding_metadata: dict[str, object] | None = None
    citation_metadata: dict[str, object] | None = None
    custom_metadata: dict[str, object] | None = None


@dataclass(slots=True)
class ModelRequest:
    """A request, rebuilt from the session for every step (SPEC F6).

    `contents` is fresh for each step but its items are shared, read-only records: replace an
    item, never mutate it. `config.tools` holds the declarations sent to the model; `tools` is
    the local name → tool table used to run the calls that come back (SPEC P2).
    """

    model: str = ""
    contents: list[Content] = field(default_factory=list[Content])
    config: GenerateConfig = field(default_factory=GenerateConfig)
    # The `BaseTool`s that answer calls, by name (Any: the tools sit in a layer above the
    # request; the loop holds them typed).
    tools: dict[str, Any] = field(default_factory=dict[str, Any])

    def append_instruction(self, text: str) -> None:
        """Append `text` to the system instruction, separated by a blank line."""
        if not text:
            return
        current = self.config.system_instruction
        self.config.system_instruction = f"{current}\n\n{text}" if current else text


DEFAULT_INPUT_TYPES = ("image/*", "audio/*", "video/*", "text/*", "application/pdf")


@dataclass(frozen=True, slots=True)
class ModelCapabilities:
    """What a model can do beyond plain generation."""

    # Whether a response schema may be sent together with tool declarations (SPEC S1).
    response_schema_with_tools: bool = True
    response_schema: bool = True
    streaming: bool = True
    # The file types a user message may carry to this model (`type/*` matches a family);
    # front ends refuse others before the model is called (SPEC W8).
    input_types: tuple[str, ...] = DEFAULT_INPUT_TYPES


DEFAULT_CAPABILITIES = ModelCapabilities()


@runtime_checkable
class Model(Protocol):
    """A language model. Implement `name` and `generate`; `capabilities` is optional."""

    name: str

    def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        """Yield responses: with `stream`, partial deltas then one final aggregate."""
        ...


def model_capabilities(model: Model) -> ModelCapabilities:
    caps: Any = getattr(model, "capabilities", None)
    if isinstance(caps, ModelCapabilities):
        return caps
    if isinstance(caps, dict):
        return ModelCapabilities(**cast(dict[str, Any], caps))
    return DEFAULT_CAPABILITIES


def session_cache_key(app_name: str, user_id: str, session_id: str) -> str:
    """K3: a session's prompt-cache key — a digest, so no id reaches the provider, and one per
    session, so requests of different users never share an entry. The loop sends it as
    `GenerateConfig.prompt_cache_key` (the same digest, `flow.processors.basic`)."""
    raw = "\x00".join((app_name, user_id, session_id)).encode()
    return hashlib.sha256(raw).hexdigest()[:32]


@runtime_checkable
class SessionCacheHolder(Protocol):
    """A model that keeps provider-side caches per session (Gemini's explicit cached
    contents): deleting the session deletes them (`Runner.delete_session_async`)."""

    async def release_session(self, cache_key: str) -> int:
        """Delete what was cached for the session with `cache_key`; how many were deleted."""
        ...


ToolChoice = Literal["auto", "none", "required"]
