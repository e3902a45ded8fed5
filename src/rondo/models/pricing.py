"""The price of a model call, from a maintained price source (SPEC O6).

Prices come from `genai-prices` (pydantic's price database, updated with every release and
installed with each provider extra); rondo keeps no price table of its own. A model the source
does not know, or an install without it, is *unpriced* (`None`), never free. Models that run on
this machine (`local:`) cost nothing.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import TYPE_CHECKING, Any

from rondo.types import Usage

if TYPE_CHECKING:
    from rondo.models.base import Model

__all__ = ["FREE_PROVIDERS", "price_usage", "priced", "warm_prices"]

logger = logging.getLogger("rondo.models.pricing")

# Providers whose calls run on this machine.
FREE_PROVIDERS = frozenset({"local"})
# rondo's provider names → genai-prices' provider ids.
_PROVIDER_IDS = {"gemini": "google", "openai": "openai", "anthropic": "anthropic"}


@cache
def _calculator() -> Any:
    try:
        import genai_prices  # pyright: ignore[reportMissingTypeStubs]
    except ImportError:
        logger.info("genai-prices is not installed: model calls are unpriced")
        return None
    return genai_prices


def warm_prices() -> None:
    """Load the price table now (~140 ms, once per process) so a server's first priced
    model call does not pay it (issue 25); a no-op without genai-prices."""
    price_usage("openai", "gpt-4o", Usage(input_tokens=1, output_tokens=1))


def price_usage(provider: str | None, model: str, usage: Usage) -> float | None:
    """US dollars for one call's `usage` on `provider`'s `model`, or None when unpriced."""
    if provider in FREE_PROVIDERS:
        return 0.0
    if not provider or not model:
        return None
    prices = _calculator()
    if prices is None:
        return None
    cached = min(usage.cached_tokens, usage.input_tokens)
    written = min(usage.cache_write_tokens, usage.input_tokens - cached)
    tokens = prices.Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=cached or None,
        cache_write_tokens=written or None,
    )
    try:
        result = prices.calc_price(
            tokens, model_ref=model, provider_id=_PROVIDER_IDS.get(provider, provider)
        )
    except LookupError:
        return None
    return float(result.total_price)


def priced(model: Model, usage: Usage | None) -> Usage | None:
    """`usage` with its price, from the model's provider and name (unchanged when it has
    one already, or when there is no usage); a local model's is 0 and marked `free`."""
    if usage is None or usage.cost_usd is not None:
        return usage
    provider = getattr(model, "provider", None)
    if provider in FREE_PROVIDERS:
        return usage.model_copy(update={"cost_usd": 0.0, "free": True})
    cost = price_usage(provider, model.name, usage)
    if cost is None:
        return usage
    return usage.model_copy(update={"cost_usd": cost})
