"""What an eval run cost: tokens and dollars per case and in total (issue 25 item 2).

Every model call of a case counts — the agent's (from the usage on its records, priced where
the call was made) and the judges' and the user simulator's (priced here, by
`rondo.models.pricing`, from genai-prices). A case with one unpriced call is *unpriced*: a sum
that leaves a call out would read as the price. Calls to a model that runs on this machine
(`local:`) are free, and a case whose calls were all local says so rather than "$0".
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from rondo.models.base import Model
from rondo.models.pricing import FREE_PROVIDERS, priced
from rondo.types import Usage

__all__ = ["Cost", "Meter", "is_local", "metered", "record_call", "record_usage"]


@dataclass(frozen=True, slots=True)
class Cost:
    """Tokens and price of some model calls. `cost_usd` is None when a call was unpriced
    (or when no call reported usage at all)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None
    unpriced_calls: int = 0
    local_calls: int = 0

    @property
    def free(self) -> bool:
        """Every call ran on a local model."""
        return self.calls > 0 and self.local_calls == self.calls

    @property
    def label(self) -> str:
        """The price as the report shows it: `$0.001234`, `free (local)`, `unpriced`."""
        if self.calls == 0:
            return "no usage reported"
        if self.free:
            return "free (local)"
        if self.cost_usd is None:
            return "unpriced"
        return f"${self.cost_usd:.6f}"

    def __add__(self, other: Cost) -> Cost:
        calls = self.calls + other.calls
        unpriced = self.unpriced_calls + other.unpriced_calls
        dollars = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Cost(
            calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
            dollars if calls and not unpriced else None,
            unpriced,
            self.local_calls + other.local_calls,
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": self.cost_usd,
            "cost": self.label,
        }


def _one(usage: Usage, local: bool) -> Cost:
    total = usage.total_tokens or usage.input_tokens + usage.output_tokens
    dollars = 0.0 if local else usage.cost_usd
    return Cost(
        1,
        usage.input_tokens,
        usage.output_tokens,
        total,
        dollars,
        unpriced_calls=int(dollars is None),
        local_calls=int(local),
    )


class Meter:
    """Adds up the calls of one case."""

    def __init__(self) -> None:
        self.cost = Cost()

    def add(self, usage: Usage | None, *, local: bool) -> None:
        if usage is not None:
            self.cost = self.cost + _one(usage, local)


_METER: ContextVar[Meter | None] = ContextVar("rondo_eval_meter", default=None)


@contextmanager
def metered() -> Generator[Meter]:
    """A meter that the judge and simulator calls made inside the block are added to."""
    meter = Meter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def is_local(model: object) -> bool:
    """Whether `model` runs on this machine (its calls cost nothing)."""
    return getattr(model, "provider", None) in FREE_PROVIDERS


def record_usage(usage: Usage | None, *, local: bool) -> None:
    """Count one call's usage (priced already, or unpriced) in the current case."""
    meter = _METER.get()
    if meter is not None:
        meter.add(usage, local=local)


def record_call(model: Model, usage: Usage | None) -> None:
    """Count a judge's or the simulator's call in the current case (a no-op outside one)."""
    if usage is not None:
        record_usage(priced(model, usage), local=is_local(model))
