"""How steady this machine is for a fresh replica's decode (issue 10.2).

Decodes the same 20,000 stored text events (what `SqlSessionService` does on a replica that
never saw the session: pydantic validation + record compaction, no database) again and
again in one process, with the api-server's GC settings, and prints each pass's wall time,
next to a pure-Python arithmetic loop as the control. Same input, same code: any spread is
the machine's, and it bounds what a wall-clock or CPU-time target can promise here.

    .venv/bin/python bench/decode_variance.py            # ~30 s
    .venv/bin/python bench/decode_variance.py --passes 60
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time


def _payloads(count: int) -> list[str]:
    """The stored history `sessions.py --long` fills (its texts, authors, alternation)."""
    from sessions import USER, history_text

    from rondo.events import Event
    from rondo.sessions.sql import (
        _encode_event,  # pyright: ignore[reportPrivateUsage]
    )
    from rondo.types import Content

    return [
        _encode_event(
            Event(author=USER, content=Content.user(history_text(i)))
            if i % 2 == 0
            else Event(author="bench_agent", content=Content.model(history_text(i)))
        )
        for i in range(count)
    ]


def _arithmetic() -> int:
    total = 0
    for i in range(600_000):
        total += i * i
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=30)
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args()
    from rondo.server.process import tune_gc
    from rondo.sessions.sql import (
        _decode_events,  # pyright: ignore[reportPrivateUsage]
    )

    payloads = _payloads(args.events)
    tune_gc()
    decode: list[float] = []
    control: list[float] = []
    for _ in range(args.passes):
        gc.collect()
        start = time.perf_counter()
        events = _decode_events(payloads)
        decode.append((time.perf_counter() - start) * 1000)
        del events
        start = time.perf_counter()
        _arithmetic()
        control.append((time.perf_counter() - start) * 1000)
    for name, values in (("decode", decode), ("control", control)):
        print(
            f"{name:8} ms: min {min(values):6.1f}  median {statistics.median(values):6.1f}  "
            f"max {max(values):6.1f}  max/min {max(values) / min(values):.2f}"
        )
    print("decode passes, in order:", " ".join(f"{v:.0f}" for v in decode))


if __name__ == "__main__":
    main()
