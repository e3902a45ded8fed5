"""Issue 25.5: `rondo api-server`'s HTTP protocol sends the writes of one event-loop turn as
one (`rondo.server.timeouts.BatchedWrites`): a response's head and body leave together."""

from __future__ import annotations

import asyncio
from typing import Any

from rondo.server.timeouts import BatchedWrites


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return 7

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else None


def _batched() -> tuple[BatchedWrites, _Transport]:
    transport = _Transport()
    return BatchedWrites(transport, asyncio.get_running_loop()), transport  # pyright: ignore[reportArgumentType]


async def test_25_5_one_turns_writes_leave_as_one() -> None:
    batched, transport = _batched()
    batched.write(b"HTTP/1.1 200 OK\r\n\r\n")
    batched.write(b"body")
    assert transport.writes == []
    assert batched.get_write_buffer_size() == 19 + 4 + 7
    await asyncio.sleep(0)
    assert transport.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    batched.write(b"next")  # a later turn: a write of its own
    await asyncio.sleep(0)
    assert transport.writes[1:] == [b"next"]


async def test_25_5_closing_sends_what_is_held_first_and_abort_drops_it() -> None:
    batched, transport = _batched()
    batched.write(b"408 answer")
    batched.close()
    assert transport.writes == [b"408 answer"]
    assert transport.closed
    await asyncio.sleep(0)  # the scheduled flush finds nothing more to send
    assert transport.writes == [b"408 answer"]
    batched, transport = _batched()
    batched.write(b"lost")
    batched.abort()
    await asyncio.sleep(0)
    assert transport.writes == []
    assert transport.aborted


async def test_25_5_a_connection_gone_meanwhile_gets_nothing_more() -> None:
    batched, transport = _batched()
    batched.write(b"late")
    transport.closed = True  # the peer left before the loop's next turn
    await asyncio.sleep(0)
    assert transport.writes == []
    assert batched.get_extra_info("peername") == ("127.0.0.1", 1)  # the rest is the transport's
