"""Per-run settings."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rondo.errors import ConfigurationError

if TYPE_CHECKING:
    from rondo.models.base import ModelResponse

__all__ = ["Budget", "CompactionConfig", "DurableSteps", "RunConfig", "SessionResumptionConfig"]

DEFAULT_SUMMARY_INSTRUCTION = (
    "Summarize the conversation below for the assistant that will continue it. Keep every "
    "fact, decision, open question, tool result and user preference that may matter later; "
    "drop pleasantries. Write plain prose, at most a few paragraphs."
)


class CompactionConfig(BaseModel):
    """When and how to compact history (SPEC K): past `token_threshold` estimated tokens,
    everything but the newest `retention_events` is summarized by `summarizer` (the agent's
    own model when None)."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", arbitrary_types_allowed=True, defer_build=True
    )

    token_threshold: int = Field(gt=0)
    retention_events: int = Field(default=6, ge=1)
    summarizer: Any = None
    instruction: str = DEFAULT_SUMMARY_INSTRUCTION


class Budget(BaseModel):
    """Limits that end a run cleanly once used up (SPEC G6); None leaves one unlimited.

    Each limit is what is allowed; the action that would go beyond it does not happen:
    `model_calls` real model calls, `tool_calls` tool calls, `total_tokens` input + output
    tokens (as `RunMetrics.total_tokens` counts them), `cost_usd` US dollars (each call's
    `Usage.cost_usd`, priced by genai-prices), `wall_time` seconds since the run started, and
    `repeated_calls` identical calls (same tool, same arguments) in a row — Solon's StopLoop:
    one more identical call is a loop, and is not run.

    Tokens and cost are known only after a call, so they are checked before each model call:
    the call that crosses the limit completes, the next one does not start. Wall time is checked
    before each model call and each tool call; a call in flight is not interrupted (that is
    `model_timeout`'s and the tools' `timeout`'s job). A cost budget fails closed: a call
    without a price makes the spend unknown, and the run stops before the next model call.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    model_calls: int | None = Field(default=None, ge=0)
    tool_calls: int | None = Field(default=None, ge=0)
    total_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    wall_time: float | None = Field(default=None, gt=0)
    repeated_calls: int | None = Field(default=None, ge=1)


@runtime_checkable
class DurableSteps(Protocol):
    """How a durable-execution engine records each model call and each tool call of a run as
    a step of its own (SPEC D2). The engine sets `RunConfig.durable_steps`; the loop stays the
    same — it hands the engine the model's response stream and the tool's run."""

    def model_call(
        self, agent: str, model: str, responses: AsyncIterator[ModelResponse]
    ) -> AsyncIterator[ModelResponse]:
        """The responses of one model call, passed through while the engine records it."""
        ...

    async def tool_call(self, tool: str, call_id: str, run: Callable[[], Awaitable[Any]]) -> Any:
        """`await run()` (the tool itself, hooks excluded) as one recorded step."""
        ...


class SessionResumptionConfig(BaseModel):
    """Live: ask the provider for session-resumption handles, so a dropped connection
    continues the same provider session (`handle`: one to start from; `transparent`: the
    provider's transparent mode, where it supports one)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    handle: str | None = None
    transparent: bool | None = None


class RunConfig(BaseModel):
    """Settings for one invocation.

    `streaming_mode="sse"` asks the model to stream: partial events (and lifecycle deltas) flow
    to the consumer, and only the final aggregate is stored. `max_llm_calls` bounds real model
    calls per invocation, transfers included; zero or less means unlimited (SPEC F7).
    `budget` bounds this run and `session_budget` the session's stored usage plus this run's
    (SPEC G6; `wall_time` and `repeated_calls` are per run only).
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, defer_build=True, arbitrary_types_allowed=True
    )

    streaming_mode: Literal["none", "sse"] = "none"
    max_llm_calls: int = 500
    # G6: limits that end the run cleanly with `BudgetExceeded` (None: no budget, no checks).
    budget: Budget | None = None
    session_budget: Budget | None = None
    # D3: seconds one model call may take, stream included; past it the call fails with
    # `ModelTimeoutError` (which `on_model_error` hooks may recover). None: no limit here.
    model_timeout: float | None = Field(default=None, gt=0)
    # None (the default) never compacts (SPEC K).
    compaction: CompactionConfig | None = None
    # Tell providers which prefix of each request is stable (Anthropic cache breakpoints,
    # OpenAI's per-session cache key; Gemini caches implicitly). False sends no cache hints.
    prompt_caching: bool = True
    # D2: set by a durable engine (`rondo.durable.dbos`); None runs calls directly.
    durable_steps: DurableSteps | None = None
    # -- live (`Runner.run_live`, SPEC L1-L3); ignored by run_async --------------------------
    # "TEXT" and/or "AUDIO"; None lets the provider choose (audio for native-audio models).
    response_modalities: tuple[str, ...] | None = None
    # The provider's voice settings, passed through (google-genai `SpeechConfig` fields, or
    # OpenAI Realtime's `{"voice": ...}`).
    speech_config: Any = None
    # Transcribe the user's / the model's speech (True or a provider config dict).
    input_audio_transcription: bool | dict[str, object] | None = True
    output_audio_transcription: bool | dict[str, object] | None = True
    # Ask for resumption handles (a reconnect continues the provider session); None: off.
    session_resumption: SessionResumptionConfig | None = None
    # The provider's voice-activity settings, passed through (e.g. disable automatic
    # detection to drive turns with `send_activity_start/end`).
    realtime_input_config: Any = None
    # Store the audio sent and received as artifacts (one per turn and direction).
    save_live_blob: bool = False
    # Reconnects in a row without a message received in between; past it the run ends.
    max_live_reconnects: int = Field(default=5, ge=0)
    # W8: tools added to every LLM agent's own for this run only — a front end's client-side
    # tools (AG-UI `tools`), whose calls pause the run until the client sends their results.
    # `BaseTool`s: Any, because the tools sit in a layer above this config.
    extra_tools: tuple[Any, ...] = ()
    # Seed 000's SaveInputBlobsAsArtifacts: a user message's inline files are saved as
    # artifacts and stored as references to them; the model still sees the files (R5, W8).
    save_input_blobs_as_artifacts: bool = False

    @field_validator("session_budget")
    @classmethod
    def _session_budget(cls, value: Budget | None) -> Budget | None:
        if value is not None and (value.wall_time is not None or value.repeated_calls is not None):
            raise ConfigurationError(
                "session_budget counts stored usage: wall_time and repeated_calls are per run "
                "(set them in budget)"
            )
        return value
