"""One retry policy for every provider adapter: bounded exponential backoff with jitter.

The adapters switch their SDK's own retries off, so a failed call is retried exactly once per
this policy and never twice over. A streamed call is retried only while nothing has been
yielded: once a delta reached the consumer, a retry would show it twice (SPEC A1, A3).
"""

from __future__ import annotations

import asyncio
import logging
import random
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from rondo.errors import ConfigurationError

__all__ = [
    "RetryPolicy",
    "is_transient_status",
    "is_transport_error",
    "retry_after_seconds",
    "retry_stream",
]

logger = logging.getLogger("rondo.models")

T = TypeVar("T")

# Request timeout, conflict (lock contention) and rate limit are worth another try; every
# other 4xx means the request itself is wrong.
_TRANSIENT_4XX = frozenset({408, 409, 429})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a provider adapter retries transient failures (429, 5xx, dropped connections).

    `max_attempts` counts the first call too (1 disables retries). The n-th retry waits
    `min(max_delay, initial_delay * multiplier ** (n - 1))`, of which the fraction `jitter` is
    randomized downwards so that many clients do not retry in lockstep. A server's
    `Retry-After` is honoured up to `max_delay`.
    """

    max_attempts: int = 3
    initial_delay: float = 0.5
    max_delay: float = 8.0
    multiplier: float = 2.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigurationError("RetryPolicy.max_attempts must be at least 1")
        if self.initial_delay < 0 or self.max_delay < 0:
            raise ConfigurationError("RetryPolicy delays must not be negative")
        if self.multiplier < 1:
            raise ConfigurationError("RetryPolicy.multiplier must be at least 1")
        if not 0 <= self.jitter <= 1:
            raise ConfigurationError("RetryPolicy.jitter must be between 0 and 1")

    def delay(
        self,
        retry: int,
        retry_after: float | None = None,
        *,
        rand: Callable[[], float] = random.random,
    ) -> float:
        """Seconds to wait before retry number `retry` (1-based)."""
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (retry - 1))
        wait = base * (1.0 - self.jitter * rand())
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_delay))
        return wait


def is_transient_status(status: int | None) -> bool:
    """Whether an HTTP status is worth retrying."""
    return status is not None and (status in _TRANSIENT_4XX or status >= 500)


def is_transport_error(exc: BaseException) -> bool:
    """A dropped or timed-out connection, raised by the network stack or an httpx client."""
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    # The SDKs use httpx2 (or httpx); an exception of theirs exists only if they are loaded.
    for module_name in ("httpx2", "httpx"):
        module = sys.modules.get(module_name)
        transport_error: Any = getattr(module, "TransportError", None)
        if isinstance(transport_error, type) and isinstance(exc, transport_error):
            return True
    return False


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The delay a `Retry-After` (or `retry-after-ms`) header asks for, if any."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(when.tzinfo)).total_seconds())


async def retry_stream(
    policy: RetryPolicy,
    attempt: Callable[[], AsyncGenerator[T, None]],
    *,
    is_transient: Callable[[BaseException], bool],
    retry_after: Callable[[BaseException], float | None] = lambda _exc: None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    describe: str = "model call",
) -> AsyncGenerator[T, None]:
    """Yield from `attempt()`, starting it again after a transient failure.

    A failure after the first item was yielded is raised as is: the consumer has already seen
    output, so a retry would duplicate it.
    """
    failures = 0
    while True:
        started = False
        try:
            async with aclosing(attempt()) as items:
                async for item in items:
                    started = True
                    yield item
            return
        except Exception as exc:
            failures += 1
            if started or failures >= policy.max_attempts or not is_transient(exc):
                raise
            wait = policy.delay(failures, retry_after(exc))
            logger.warning(
                "%s failed (%s: %s); retry %d of %d in %.2fs",
                describe,
                type(exc).__name__,
                exc,
                failures,
                policy.max_attempts - 1,
                wait,
            )
            await sleep(wait)
