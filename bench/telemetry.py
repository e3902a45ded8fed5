"""What OpenTelemetry costs rondo's tool loop: Python calls per loop (cProfile), per setup.

    .venv/bin/python bench/telemetry.py                       # this checkout, every mode
    .venv/bin/python bench/telemetry.py --baseline ../old     # and a checkout without spans
    .venv/bin/python bench/telemetry.py --write               # record it in bench/TELEMETRY.md

The workload: one `Runner.run_async` of a `ScriptedModel` agent that calls one sync tool and
then answers (two model calls, one tool call, three events), on an in-memory session. Each
mode runs in a fresh interpreter (the global providers can be set once per process), warms
up, then counts every call (Python and builtin) cProfile sees during the profiled loops:

- `none`     nothing loaded opentelemetry (the default: rondo imports none of it then)
- `api`      `opentelemetry.trace` / `.metrics` imported, no SDK: the API's no-op providers
- `sdk`      an SDK tracer provider (an in-memory exporter) and meter provider: what
             recording costs, for reference

`--baseline DIR` runs `none` against `DIR/src` too (a checkout before spans existed), the
"before" figure. Call counts are deterministic; CPU time is shown beside them, for
orientation only. The bound (issue 11): `none` and `api` within 5 % of the baseline.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
MODES = ("none", "api", "sdk")

_WORKER = r"""
import asyncio, cProfile, json, pstats, sys, time

MODE, LOOPS = sys.argv[1], int(sys.argv[2])
if MODE == "api":
    import opentelemetry.metrics, opentelemetry.trace  # the API alone: no-op providers
elif MODE == "sdk":
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))

from rondo import Agent, FunctionCall, Runner
from rondo.testing import ScriptedModel


def get_weather(city: str) -> dict:
    "The weather in a city."
    return {"city": city, "sky": "clear", "temp_c": 21}


async def one_loop(index: int, profiler=None) -> float:
    model = ScriptedModel([FunctionCall(name="get_weather", args={"city": "Oslo"}), "Clear."])
    runner = Runner(agent=Agent(name="weather", model=model, tools=[get_weather]), app_name="b")
    session = await runner.session_service.create_session(app_name="b", user_id="u")
    started = time.thread_time()
    if profiler is not None:
        profiler.enable()
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message="Oslo?"):
        pass
    if profiler is not None:
        profiler.disable()
    return time.thread_time() - started


async def main() -> None:
    for i in range(30):
        await one_loop(i)
    profiler = cProfile.Profile()
    for i in range(LOOPS):
        await one_loop(i, profiler)
    cpu = [await one_loop(i) for i in range(LOOPS)]
    stats = pstats.Stats(profiler)
    calls = sum(nc for (_cc, nc, _tt, _ct, _callers) in stats.stats.values())
    loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
    cpu.sort()
    print(json.dumps({"calls": calls / LOOPS, "cpu_ms": cpu[len(cpu) // 2] * 1000,
                      "otel_modules": len(loaded)}))

asyncio.run(main())
"""


def measure(mode: str, src: Path, loops: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    for name in ("OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", _WORKER, mode, str(loops)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(results: dict[str, dict[str, float]], reference: str) -> str:
    base = results[reference]["calls"]
    lines = [
        "| setup | calls / loop | vs " + reference + " | CPU ms / loop (median) | otel modules |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, row in results.items():
        lines.append(
            f"| {name} | {row['calls']:,.0f} | {row['calls'] / base:.3f}× "
            f"| {row['cpu_ms']:.3f} | {row['otel_modules']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--loops", type=int, default=20, help="profiled loops per mode")
    parser.add_argument("--baseline", type=Path, help="a checkout to count `none` against")
    parser.add_argument("--write", action="store_true", help="update bench/TELEMETRY.md")
    args = parser.parse_args()
    results: dict[str, dict[str, float]] = {}
    if args.baseline is not None:
        results["baseline (no spans), none"] = measure("none", args.baseline / "src", args.loops)
    for mode in MODES:
        results[mode] = measure(mode, REPO / "src", args.loops)
    reference = next(iter(results))
    text = table(results, reference)
    print(text)
    if args.write:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        block = (
            f"<!-- measured {stamp}, Python {platform.python_version()}, "
            f"{args.loops} loops -->\n{text}\n"
        )
        path = BENCH / "TELEMETRY.md"
        marker = "<!-- table -->"
        current = path.read_text() if path.exists() else marker + "\n"
        head, _, _rest = current.partition(marker)
        path.write_text(f"{head}{marker}\n{block}")


if __name__ == "__main__":
    main()
