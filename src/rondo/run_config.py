"""Per-run settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["RunConfig"]


class RunConfig(BaseModel):
    """Settings for one invocation.

    `streaming_mode="sse"` asks the model to stream: partial events (and lifecycle deltas) flow
    to the consumer, and only the final aggregate is stored. `max_llm_calls` bounds real model
    calls per invocation, transfers included; zero or less means unlimited (SPEC F7).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    streaming_mode: Literal["none", "sse"] = "none"
    max_llm_calls: int = 500
