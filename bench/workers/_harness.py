"""The measurement harness every worker shares.

Stdlib only: it is imported by the rondo worker (in the project's venv) and by the peer workers
(in bench/.venvs/*), each run as its own process. A worker supplies the framework-specific
parts as a `Workloads` object; this module owns the tools, the expected answers, the timing,
the profiling and the JSON it prints, so every framework is measured by the same code.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

# -- the workload definition, identical for every framework -------------------------------------

USER_MESSAGE = "What's the weather in Paris?"
TOOL_CITY = "Paris"
FINAL_TEXT = "It is 18°C and sunny in Paris."
HISTORY_SIZES = (100, 1000, 5000)
HISTORY_ANSWER = "Noted."
PARALLEL_CALLS = 8
TOOL_SLEEP = 0.05
# Every fake model reports the same usage, so no framework estimates token counts itself.
USAGE = (10, 5)


class Counter:
    """How many times the tools ran: each workload checks it, so a skipped tool shows up."""

    calls = 0


def get_weather(city: str) -> dict[str, Any]:
    """Returns the current weather for a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    Counter.calls += 1
    return {"city": city, "temperature_c": 18, "condition": "sunny"}


async def get_weather_async(city: str) -> dict[str, Any]:
    """Returns the current weather for a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    Counter.calls += 1
    return {"city": city, "temperature_c": 18, "condition": "sunny"}


async def slow_lookup_async(index: int) -> dict[str, Any]:
    """Looks up one record; takes 50 ms.

    Args:
        index: Which record.
    """
    await asyncio.sleep(TOOL_SLEEP)
    Counter.calls += 1
    return {"index": index, "ok": True}


def slow_lookup_sync(index: int) -> dict[str, Any]:
    """Looks up one record; takes 50 ms.

    Args:
        index: Which record.
    """
    time.sleep(TOOL_SLEEP)
    Counter.calls += 1
    return {"index": index, "ok": True}


def history_text(i: int) -> str:
    """The text of prior event `i`: even indexes are user turns, odd ones model turns."""
    return f"user message number {i}" if i % 2 == 0 else f"model answer number {i}"


# -- what a worker implements -------------------------------------------------------------------

Run = Callable[[], Awaitable[str]]
"""One invocation, ready to go (its session already exists); returns the final text."""


class Workloads(Protocol):
    framework: str

    def versions(self) -> dict[str, str]: ...

    async def tool_loop(self, *, async_tool: bool) -> Run:
        """A fresh session (or none) and a run: user message → `get_weather` → text."""
        ...

    async def history(self, size: int) -> Run:
        """A session holding `size` prior events (`history_text`), and a run that makes one
        model call answering `HISTORY_ANSWER`. The run may be called several times."""
        ...

    def history_seen(self) -> int:
        """How many messages the history workload's model received in its last request."""
        ...

    async def parallel(self, *, sync_tools: bool) -> Run:
        """A fresh session and a run whose first model response holds `PARALLEL_CALLS`
        calls of `slow_lookup_*(index=i)`, then text."""
        ...


# -- measurement --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    loops: int
    warmup: int
    profiles: int
    history_reps: int
    history_budget: float
    parallel_reps: int

    @classmethod
    def make(cls, quick: bool) -> Settings:
        if quick:
            return cls(
                loops=60, warmup=10, profiles=1, history_reps=5, history_budget=3.0, parallel_reps=3
            )
        return cls(
            loops=300, warmup=30, profiles=3, history_reps=40, history_budget=15.0, parallel_reps=7
        )


def _check(text: str, expected: str, calls_before: int, calls: int, what: str) -> None:
    if text != expected:
        raise AssertionError(f"{what}: final text {text!r}, expected {expected!r}")
    if Counter.calls - calls_before != calls:
        raise AssertionError(f"{what}: {Counter.calls - calls_before} tool runs, expected {calls}")


async def _timed(run: Run) -> tuple[str, float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    text = await run()
    return text, time.process_time() - cpu, time.perf_counter() - wall


async def _profiled(run: Run) -> dict[str, int]:
    """cProfile one run: every call on the event-loop thread between enable and disable,
    including asyncio's own work; worker threads (sync tools) are not traced."""
    profile = cProfile.Profile()
    profile.enable()
    await run()
    profile.disable()
    stats: Any = pstats.Stats(profile)
    total = python = 0
    for (filename, _line, _name), (_cc, ncalls, _tt, _ct, _callers) in stats.stats.items():
        total += ncalls
        if filename != "~":
            python += ncalls
    return {"total": total, "python": python}


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 4)


async def measure_tool_loop(w: Workloads, s: Settings, *, async_tool: bool) -> dict[str, Any]:
    what = f"tool loop ({'async' if async_tool else 'sync'} tool)"
    for _ in range(s.warmup):
        run = await w.tool_loop(async_tool=async_tool)
        before = Counter.calls
        _check(await run(), FINAL_TEXT, before, 1, what)
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(s.loops):
        run = await w.tool_loop(async_tool=async_tool)
        before = Counter.calls
        text, c, t = await _timed(run)
        _check(text, FINAL_TEXT, before, 1, what)
        cpu.append(c)
        wall.append(t)
    counts: list[dict[str, int]] = []
    for _ in range(s.profiles):
        run = await w.tool_loop(async_tool=async_tool)
        counts.append(await _profiled(run))
    return {
        "cpu_ms": _ms(statistics.median(cpu)),
        "cpu_ms_p10": _ms(statistics.quantiles(cpu, n=10)[0]),
        "cpu_ms_p90": _ms(statistics.quantiles(cpu, n=10)[-1]),
        "wall_ms": _ms(statistics.median(wall)),
        "calls": int(statistics.median(c["total"] for c in counts)),
        "python_calls": int(statistics.median(c["python"] for c in counts)),
        "calls_min": min(c["total"] for c in counts),
        "calls_max": max(c["total"] for c in counts),
        "loops": s.loops,
    }


async def measure_tool_loop_variants(
    variants: dict[str, Callable[[], Awaitable[Run]]], s: Settings
) -> dict[str, Any]:
    """The tool loop with the framework's checks configured (a rondo-only workload): cProfile
    call counts per variant, warmed up like `measure_tool_loop`; exact, so no CPU median."""
    out: dict[str, Any] = {}
    for name, make in variants.items():
        for _ in range(s.warmup):
            run = await make()
            before = Counter.calls
            _check(await run(), FINAL_TEXT, before, 1, f"tool loop ({name})")
        counts = [await _profiled(await make()) for _ in range(s.profiles)]
        out[name] = {
            "calls": int(statistics.median(c["total"] for c in counts)),
            "python_calls": int(statistics.median(c["python"] for c in counts)),
        }
    return out


async def measure_history(w: Workloads, s: Settings, size: int) -> dict[str, Any]:
    """Time one step on a session that already holds `size` events.

    The first step on a freshly filled session ("cold") may build per-session caches, such as
    rondo's incremental contents view; the steps after it ("warm") are what a long
    conversation pays on every turn. Both are reported; the table's main rows are warm. Each
    step adds two events, so a session serves at most `size // 25` warm steps (≤ 8% growth)
    before a fresh one is filled.
    """
    what = f"step after {size} events"
    per_session = min(s.history_reps, max(1, size // 25))
    cold: list[float] = []
    warm: list[float] = []
    wall: list[float] = []
    started = time.perf_counter()
    run: Run | None = None

    def enough() -> bool:
        # A slow framework gets fewer repetitions within the budget, never fewer than three.
        if len(warm) >= s.history_reps:
            return True
        return time.perf_counter() - started > s.history_budget and len(warm) >= 3

    while not enough():
        run = await w.history(size)
        for j in range(per_session + 1):
            before = Counter.calls
            text, c, t = await _timed(run)
            _check(text, HISTORY_ANSWER, before, 0, what)
            if j == 0:
                cold.append(c)
                continue
            warm.append(c)
            wall.append(t)
            if enough():
                break
    assert run is not None
    counts = await _profiled(run)
    seen = w.history_seen()
    # Every step sends the whole history plus its own message: never fewer than size + 1.
    if seen < size + 1:
        raise AssertionError(f"{what}: the model saw only {seen} messages")
    return {
        "cpu_ms": _ms(statistics.median(warm)),
        "wall_ms": _ms(statistics.median(wall)),
        "cold_cpu_ms": _ms(statistics.median(cold)),
        "calls": counts["total"],
        "model_saw": seen,
        "reps": len(warm),
        "sessions": len(cold),
    }


async def measure_parallel(
    make: Callable[[], Awaitable[Run]], s: Settings, what: str
) -> dict[str, Any]:
    walls: list[float] = []
    cpus: list[float] = []
    for i in range(s.parallel_reps + 1):
        run = await make()
        before = Counter.calls
        text, c, t = await _timed(run)
        _check(text, FINAL_TEXT, before, PARALLEL_CALLS, what)
        if i:  # the first run warms up
            walls.append(t)
            cpus.append(c)
    return {
        "wall_ms": _ms(statistics.median(walls)),
        "wall_ms_min": _ms(min(walls)),
        "cpu_ms": _ms(statistics.median(cpus)),
        "reps": s.parallel_reps,
    }


async def measure(w: Workloads, s: Settings, parts: set[str]) -> dict[str, Any]:
    results: dict[str, Any] = {
        "framework": w.framework,
        "versions": w.versions(),
        "python": platform.python_version(),
    }
    if "loop" in parts:
        results["tool_loop"] = await measure_tool_loop(w, s, async_tool=False)
        results["tool_loop_async_tool"] = await measure_tool_loop(w, s, async_tool=True)
        # Optional: the same loop with guard checks configured (rondo's guardrails and
        # budgets, issue 24.7), next to the plain loop's counts.
        variants: Callable[[], dict[str, Callable[[], Awaitable[Run]]]] | None = getattr(
            w, "tool_loop_variants", None
        )
        if variants is not None:
            results["tool_loop_guards"] = await measure_tool_loop_variants(variants(), s)
    if "history" in parts:
        warmup = await w.history(10)  # first-use costs (schemas, caches) land here
        for _ in range(3):
            await warmup()
        results["history"] = {str(k): await measure_history(w, s, k) for k in HISTORY_SIZES}
    if "parallel" in parts:
        what = f"{PARALLEL_CALLS} parallel %s tools"
        results["parallel_async"] = await measure_parallel(
            lambda: w.parallel(sync_tools=False), s, what % "async"
        )
        results["parallel_sync"] = await measure_parallel(
            lambda: w.parallel(sync_tools=True), s, what % "sync"
        )
        # A framework whose default runs sync tools one by one may offer a switch: measure it
        # too (reported beside the default, never instead of it).
        opt_in: Callable[[], Awaitable[Run]] | None = getattr(w, "parallel_sync_opt_in", None)
        if opt_in is not None:
            results["parallel_sync_opt_in"] = await measure_parallel(
                opt_in, s, what % "sync (opt-in)"
            )
    return results


def main(make: Callable[[], Workloads]) -> None:
    """The worker entry point: measure, then print one JSON object (or write it to --out)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--out", help="write the JSON here instead of stdout")
    parser.add_argument(
        "--parts", default="loop,history,parallel", help="comma-separated subset to run"
    )
    args = parser.parse_args()
    gc.collect()
    results = asyncio.run(measure(make(), Settings.make(args.quick), set(args.parts.split(","))))
    text = json.dumps(results, indent=2, ensure_ascii=False)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")
