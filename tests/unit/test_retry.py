"""`RetryPolicy` and `retry_stream`: bounded backoff with jitter, never after output started."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from tests._require import require_module

httpx2 = require_module("httpx2", what="OPENAI", install="pip install 'rondo-agents[openai]'")

from rondo.models._retry import (  # noqa: E402
    RetryPolicy,
    is_transient_status,
    is_transport_error,
    retry_after_seconds,
    retry_stream,
)


class Transient(Exception):
    pass


class Fatal(Exception):
    pass


def transient(exc: BaseException) -> bool:
    return isinstance(exc, Transient)


class Script:
    """An attempt factory: each attempt yields its items, then raises its error if any."""

    def __init__(self, *attempts: tuple[list[str], Exception | None]) -> None:
        self.attempts = list(attempts)
        self.started = 0

    def __call__(self) -> AsyncGenerator[str, None]:
        items, error = self.attempts[self.started]
        self.started += 1
        return self._run(items, error)

    @staticmethod
    async def _run(items: list[str], error: Exception | None) -> AsyncGenerator[str, None]:
        for item in items:
            yield item
        if error is not None:
            raise error


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def run(policy: RetryPolicy, script: Script, sleeps: Sleeps, **kwargs: object) -> list[str]:
    return [
        item
        async for item in retry_stream(
            policy,
            script,
            is_transient=transient,
            sleep=sleeps,
            **kwargs,
        )
    ]


# -- the policy ---------------------------------------------------------------------------------


def test_delays_grow_exponentially_up_to_the_cap() -> None:
    policy = RetryPolicy(max_attempts=10, initial_delay=0.5, max_delay=4.0, jitter=0.0)
    assert [policy.delay(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 4.0, 4.0]


def test_jitter_only_shortens_the_delay_within_its_fraction() -> None:
    policy = RetryPolicy(initial_delay=2.0, max_delay=2.0, jitter=0.5)
    assert policy.delay(1, rand=lambda: 0.0) == 2.0
    assert policy.delay(1, rand=lambda: 1.0) == 1.0
    waits = {policy.delay(1) for _ in range(50)}
    assert all(1.0 <= w <= 2.0 for w in waits)
    assert len(waits) > 1  # randomized, so clients do not retry in lockstep


def test_retry_after_is_honoured_up_to_the_cap() -> None:
    policy = RetryPolicy(initial_delay=0.1, max_delay=5.0, jitter=0.0)
    assert policy.delay(1, retry_after=3.0) == 3.0
    assert policy.delay(1, retry_after=60.0) == 5.0
    assert policy.delay(1, retry_after=0.0) == 0.1


@pytest.mark.parametrize(
    "kwargs",
    [{"max_attempts": 0}, {"initial_delay": -1}, {"multiplier": 0.5}, {"jitter": 2}],
)
def test_invalid_policies_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="RetryPolicy"):
        RetryPolicy(**kwargs)


@pytest.mark.parametrize(
    ("status", "retry"),
    [
        (408, True),
        (409, True),
        (429, True),
        (500, True),
        (503, True),
        (529, True),
        (400, False),
        (401, False),
        (404, False),
        (422, False),
        (None, False),
    ],
)
def test_transient_statuses(status: int | None, retry: bool) -> None:
    assert is_transient_status(status) is retry


def test_transport_errors_are_transient() -> None:
    assert is_transport_error(ConnectionResetError())
    assert is_transport_error(TimeoutError())
    assert is_transport_error(httpx2.ReadError("reset"))
    assert is_transport_error(httpx2.ConnectTimeout("slow"))
    assert not is_transport_error(ValueError("bug"))


def test_retry_after_header_forms() -> None:
    assert retry_after_seconds(None) is None
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    seconds = retry_after_seconds({"retry-after": later})
    assert seconds is not None
    assert 25 <= seconds <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None


# -- retry_stream -------------------------------------------------------------------------------


async def test_transient_failures_are_retried_with_backoff() -> None:
    script = Script(([], Transient("429")), ([], Transient("503")), (["ok"], None))
    sleeps = Sleeps()
    policy = RetryPolicy(max_attempts=3, initial_delay=1.0, max_delay=10.0, jitter=0.0)
    assert await run(policy, script, sleeps) == ["ok"]
    assert script.started == 3
    assert sleeps.waits == [1.0, 2.0]


async def test_attempts_are_bounded() -> None:
    script = Script(*(([], Transient(f"fail {n}")) for n in range(5)))
    sleeps = Sleeps()
    with pytest.raises(Transient, match="fail 2"):
        await run(RetryPolicy(max_attempts=3, initial_delay=0.0), script, sleeps)
    assert script.started == 3
    assert len(sleeps.waits) == 2


async def test_permanent_failures_are_not_retried() -> None:
    script = Script(([], Fatal("400")), (["never"], None))
    with pytest.raises(Fatal):
        await run(RetryPolicy(), script, Sleeps())
    assert script.started == 1


async def test_no_retry_once_output_was_yielded() -> None:
    # A3: the consumer already saw "Hel"; a retry would show it twice.
    script = Script((["Hel"], Transient("reset")), (["Hello"], None))
    seen: list[str] = []

    async def consume() -> None:
        async for item in retry_stream(
            RetryPolicy(initial_delay=0.0), script, is_transient=transient, sleep=Sleeps()
        ):
            seen.append(item)

    with pytest.raises(Transient):
        await consume()
    assert seen == ["Hel"]
    assert script.started == 1


async def test_server_retry_after_sets_the_wait() -> None:
    script = Script(([], Transient("429")), (["ok"], None))
    sleeps = Sleeps()
    policy = RetryPolicy(initial_delay=0.1, max_delay=30.0, jitter=0.0)
    await run(policy, script, sleeps, retry_after=lambda _exc: 7.0)
    assert sleeps.waits == [7.0]


async def test_closing_the_consumer_closes_the_attempt() -> None:
    closed: list[bool] = []

    async def attempt() -> AsyncGenerator[str, None]:
        try:
            yield "a"
            yield "b"
        finally:
            closed.append(True)

    stream = retry_stream(RetryPolicy(), attempt, is_transient=transient)
    assert await anext(stream) == "a"
    await stream.aclose()
    assert closed == [True]
