"""Where rondo's tool loop spends its calls and time: cProfile of warmed-up loops.

    .venv/bin/python bench/profile_rondo.py                 # sync tool, top 25 / 15
    .venv/bin/python bench/profile_rondo.py --async-tool --loops 50 --top 40
    .venv/bin/python bench/profile_rondo.py --history 5000  # one warm step after 5,000 events

Runs the same workload as `bench/workers/rondo_worker.py` and prints the functions with the
most calls and the most own time (file:line:function, paths relative to the repo or
site-packages). Counts are per loop (totals divided by --loops). Own time is the event-loop
thread's CPU time by default (`--timer cpu`), which a busy machine barely disturbs; with
`--timer wall` a hand-off to a worker thread shows up as the time the loop thread waited.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH / "workers"))

import rondo_worker  # noqa: E402  (needs the path above)


def _where(filename: str, line: int, name: str) -> str:
    if filename == "~":
        return name  # a builtin, e.g. "<method 'append' of 'list' objects>"
    path = filename
    for marker in ("/site-packages/", "/src/", "/lib/python3."):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker == "/lib/python3.":
                path = "stdlib/" + path.split("/", 1)[1]
            break
    return f"{path}:{line}:{name}"


def report(stats: Any, loops: int, top_calls: int, top_time: int) -> None:
    rows = [
        (_where(*key), nc, tt, ct)
        for key, (_cc, nc, tt, ct, _callers) in stats.stats.items()  # pyright: ignore
    ]
    total_calls = sum(r[1] for r in rows)
    total_time = sum(r[2] for r in rows)
    print(
        f"per loop: {total_calls / loops:,.0f} calls, {total_time / loops * 1000:.3f} ms profiled"
    )
    print(f"\nTop {top_calls} by ncalls (per loop)")
    print(f"{'ncalls':>8} {'tottime µs':>11}  function")
    for where, nc, tt, _ct in sorted(rows, key=lambda r: (-r[1], r[0]))[:top_calls]:
        print(f"{nc / loops:8.1f} {tt / loops * 1e6:11.1f}  {where}")
    print(f"\nTop {top_time} by tottime (per loop)")
    print(f"{'tottime µs':>11} {'cumtime µs':>11} {'ncalls':>8}  function")
    for where, nc, tt, ct in sorted(rows, key=lambda r: -r[2])[:top_time]:
        print(f"{tt / loops * 1e6:11.1f} {ct / loops * 1e6:11.1f} {nc / loops:8.1f}  {where}")


async def profile(args: argparse.Namespace) -> Any:
    w = rondo_worker.RondoWorkloads()
    timer = time.thread_time if args.timer == "cpu" else time.perf_counter
    profiler = cProfile.Profile(timer)
    if args.history:
        run = await w.history(args.history)
        for _ in range(5):
            await run()
        for _ in range(args.loops):
            profiler.enable()
            await run()
            profiler.disable()
        return pstats.Stats(profiler)
    for _ in range(30):
        await (await w.tool_loop(async_tool=args.async_tool))()
    for _ in range(args.loops):
        run = await w.tool_loop(async_tool=args.async_tool)
        profiler.enable()
        await run()
        profiler.disable()
    return pstats.Stats(profiler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--async-tool", action="store_true", help="async def tool")
    parser.add_argument("--history", type=int, default=0, help="profile a step after N events")
    parser.add_argument("--timer", choices=("cpu", "wall"), default="cpu", help="own-time clock")
    parser.add_argument("--loops", type=int, default=20, help="loops profiled (averaged)")
    parser.add_argument("--top", type=int, default=25, help="rows by ncalls")
    parser.add_argument("--top-time", type=int, default=15, help="rows by tottime")
    args = parser.parse_args()
    stats = asyncio.run(profile(args))
    report(stats, args.loops, args.top, args.top_time)


if __name__ == "__main__":
    main()
