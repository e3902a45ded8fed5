"""Per-run settings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CompactionConfig", "RunConfig"]

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


class RunConfig(BaseModel):
    """Settings for one invocation.

    `streaming_mode="sse"` asks the model to stream: partial events (and lifecycle deltas) flow
    to the consumer, and only the final aggregate is stored. `max_llm_calls` bounds real model
    calls per invocation, transfers included; zero or less means unlimited (SPEC F7).
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, defer_build=True, arbitrary_types_allowed=True
    )

    streaming_mode: Literal["none", "sse"] = "none"
    max_llm_calls: int = 500
    # D3: seconds one model call may take, stream included; past it the call fails with
    # `ModelTimeoutError` (which `on_model_error` hooks may recover). None: no limit here.
    model_timeout: float | None = Field(default=None, gt=0)
    # None (the default) never compacts (SPEC K).
    compaction: CompactionConfig | None = None
