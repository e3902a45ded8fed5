"""The peer benchmark: the same fake-model workloads on rondo, google-adk and pydantic-ai.

    python bench/run.py              # everything; writes bench/RESULTS.md and bench/results.json
    python bench/run.py --quick      # fewer repetitions (prints only, unless --write)
    python bench/run.py --only rondo # rondo alone (prints only, unless --write)

Each framework runs in its own process and virtualenv: rondo in the project's .venv, the peers
in bench/.venvs/<name> (created and installed here on first use; git-ignored). The workloads and
the measuring code are shared (bench/workers/_harness.py); each worker only adapts them to its
framework. Workers print JSON; this script adds import times, prints one table with ratios
(peer / rondo) and records it. Nothing here is asserted: the targets are reported, not tested.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENVS = BENCH / ".venvs"
WORKERS = BENCH / "workers"


@dataclass(frozen=True)
class Framework:
    key: str
    label: str
    worker: str
    import_line: str
    # (distribution, pip requirement) for peers; None for rondo (the project's own venv).
    install: tuple[str, str] | None = None

    @property
    def python(self) -> Path:
        if self.install is None:
            own = ROOT / ".venv" / "bin" / "python"
            return own if own.exists() else Path(sys.executable)
        return VENVS / self.key / "bin" / "python"


FRAMEWORKS = (
    Framework("rondo", "rondo", "rondo_worker.py", "from rondo import Agent, Runner"),
    Framework(
        "adk",
        "google-adk",
        "adk_worker.py",
        "from google.adk.agents import Agent; from google.adk.runners import Runner",
        ("google-adk", "google-adk==2.13.0"),
    ),
    Framework(
        "pydantic_ai",
        "pydantic-ai",
        "pydantic_ai_worker.py",
        "from pydantic_ai import Agent",
        # Unpinned on purpose: the version pip resolves is recorded with the results.
        ("pydantic-ai-slim", "pydantic-ai-slim"),
    ),
)


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# -- virtualenvs --------------------------------------------------------------------------------


def installed_version(python: Path, dist: str) -> str | None:
    if not python.exists():
        return None
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def ensure_venv(fw: Framework) -> None:
    """Create bench/.venvs/<key> and install the peer, unless it is already there."""
    if fw.install is None:
        return
    dist, requirement = fw.install
    python = fw.python
    have = installed_version(python, dist)
    pinned = requirement.partition("==")[2]
    if have is not None and (not pinned or have == pinned):
        return
    if not python.exists():
        log(f"creating {python.parent.parent}")
        subprocess.run([sys.executable, "-m", "venv", python.parent.parent], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    log(f"installing {requirement} into {python.parent.parent} (takes a minute)")
    subprocess.run([python, "-m", "pip", "install", "-q", requirement], check=True)


# -- measuring ----------------------------------------------------------------------------------


def run_worker(fw: Framework, quick: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [str(fw.python), str(WORKERS / fw.worker), "--out", str(out)]
        if quick:
            cmd.append("--quick")
        log(f"{fw.label}: running workloads ({fw.python})")
        started = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=ROOT)
        log(f"{fw.label}: done in {time.perf_counter() - started:.1f} s")
        return json.loads(out.read_text(encoding="utf-8"))


def _measured(cmd: Sequence[str]) -> tuple[float, float]:
    """Run `cmd`; return its wall time and its CPU time (user + system, from wait4)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd, stderr=stderr)
    return wall, usage.ru_utime + usage.ru_stime


# What rondo's import cannot go below: its own dependencies, measured the same way.
FLOOR_IMPORTS = ("import asyncio", "import asyncio; from pydantic import BaseModel")


def import_time(fw: Framework, reps: int, line: str | None = None) -> dict[str, float]:
    """Median wall time of fresh `python -c "<import>"` minus that of `python -c pass`.

    Runs are interleaved (import, baseline, import, …) after one warm-up of each, so a busy
    moment on the machine lands on both sides and the bytecode caches are already written.
    The CPU time (user + system) of the same processes is reported beside it: on a shared
    machine it is the steadier of the two.
    """
    python = str(fw.python)
    probe = [python, "-c", line or fw.import_line]
    baseline = [python, "-c", "pass"]
    _measured(probe)
    _measured(baseline)
    probes: list[tuple[float, float]] = []
    bases: list[tuple[float, float]] = []
    for _ in range(reps):
        probes.append(_measured(probe))
        bases.append(_measured(baseline))

    def median_ms(samples: list[tuple[float, float]], i: int) -> float:
        return statistics.median(x[i] for x in samples) * 1000.0

    return {
        "ms": round(median_ms(probes, 0) - median_ms(bases, 0), 1),
        "cpu_ms": round(median_ms(probes, 1) - median_ms(bases, 1), 1),
        "python_startup_ms": round(median_ms(bases, 0), 1),
        "reps": reps,
    }


# -- the table ----------------------------------------------------------------------------------


def _get(result: dict[str, Any], *path: str) -> float | None:
    node: Any = result
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return float(node) if isinstance(node, int | float) else None


def _growth(metric: str) -> Callable[[dict[str, Any]], float | None]:
    def growth(result: dict[str, Any]) -> float | None:
        small = _get(result, "history", "100", metric)
        large = _get(result, "history", "5000", metric)
        if small is None or large is None or small == 0:
            return None
        return large / small

    return growth


def _extra(variant: str) -> Callable[[dict[str, Any]], float | None]:
    """Issue 24.7: a configured tool loop's extra calls (cProfile, all) over the same loop
    with nothing configured, measured in the same run, in percent."""

    def extra(result: dict[str, Any]) -> float | None:
        base = _get(result, "tool_loop_guards", "none", "calls")
        calls = _get(result, "tool_loop_guards", variant, "calls")
        if base is None or calls is None or base == 0:
            return None
        return (calls - base) / base * 100.0

    return extra


@dataclass(frozen=True)
class Row:
    label: str
    value: Callable[[dict[str, Any]], float | None]
    fmt: str
    target: str = ""
    ok: Callable[[float], bool] | None = None
    ratio: bool = True


def _at(*path: str) -> Callable[[dict[str, Any]], float | None]:
    return lambda r: _get(r, *path)


ROWS = (
    Row(
        "Tool loop: CPU per loop, ms (median)",
        _at("tool_loop", "cpu_ms"),
        "{:.2f}",
        "≤ 1 ms",
        lambda v: v <= 1.0,
    ),
    Row(
        "Tool loop: calls per loop (cProfile, all)",
        _at("tool_loop", "calls"),
        "{:,.0f}",
        "≤ 2,500",
        lambda v: v <= 2500,
    ),
    Row(
        "Tool loop: of which Python functions",
        _at("tool_loop", "python_calls"),
        "{:,.0f}",
    ),
    Row("Tool loop: wall per loop, ms (median)", _at("tool_loop", "wall_ms"), "{:.2f}"),
    Row(
        "Tool loop, async tool: CPU per loop, ms",
        _at("tool_loop_async_tool", "cpu_ms"),
        "{:.2f}",
    ),
    Row(
        "Tool loop, async tool: calls per loop",
        _at("tool_loop_async_tool", "calls"),
        "{:,.0f}",
    ),
    Row(
        "Tool loop + budgets (every run limit): extra calls, %",
        _extra("budgets"),
        "{:.1f} %",
        "≤ 2 %",
        lambda v: v <= 2.0,
        ratio=False,
    ),
    Row(
        "Tool loop + 4 guardrails (one per kind): extra calls, %",
        _extra("guardrails"),
        "{:.1f} %",
        "≤ 2 %",
        lambda v: v <= 2.0,
        ratio=False,
    ),
    Row(
        "Tool loop + budgets + 4 guardrails: extra calls, %",
        _extra("both"),
        "{:.1f} %",
        "≤ 2 %",
        lambda v: v <= 2.0,
        ratio=False,
    ),
    Row("Step after 100 events: CPU, ms", _at("history", "100", "cpu_ms"), "{:.2f}"),
    Row("Step after 1,000 events: CPU, ms", _at("history", "1000", "cpu_ms"), "{:.2f}"),
    Row("Step after 5,000 events: CPU, ms", _at("history", "5000", "cpu_ms"), "{:.2f}"),
    Row(
        "Step after 5,000 ÷ after 100 (CPU)",
        _growth("cpu_ms"),
        "{:.2f}×",
        "≤ 1.5×",
        lambda v: v <= 1.5,
        ratio=False,
    ),
    Row("Step after 100 events: calls", _at("history", "100", "calls"), "{:,.0f}"),
    Row("Step after 5,000 events: calls", _at("history", "5000", "calls"), "{:,.0f}"),
    Row(
        "Step after 5,000 ÷ after 100 (calls)",
        _growth("calls"),
        "{:.2f}×",
        "≤ 1.5×",
        lambda v: v <= 1.5,
        ratio=False,
    ),
    Row(
        "First step on a loaded 5,000-event session: CPU, ms",
        _at("history", "5000", "cold_cpu_ms"),
        "{:.1f}",
    ),
    Row(
        "8 parallel 50 ms async tools: wall, ms",
        _at("parallel_async", "wall_ms"),
        "{:.1f}",
        "≈ 50 ms",
    ),
    Row(
        "8 parallel 50 ms sync tools: wall, ms",
        _at("parallel_sync", "wall_ms"),
        "{:.1f}",
        "≈ 50 ms",
    ),
    Row(
        "Import of the canonical names: wall, ms",
        _at("import", "ms"),
        "{:.0f}",
        "≤ 150 ms",
        lambda v: v <= 150.0,
    ),
    Row("Import of the canonical names: CPU, ms", _at("import", "cpu_ms"), "{:.0f}"),
)


def table(results: dict[str, dict[str, Any]]) -> str:
    """A Markdown table: one row per metric, rondo first, then each peer and its ratio."""
    keys = list(results)
    base = results.get("rondo")
    header = ["Metric"]
    for key in keys:
        header.append(results[key]["label"])
        if key != "rondo" and base is not None:
            header.append("× rondo")
    header.append("rondo target")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in ROWS:
        cells = [row.label]
        mine = row.value(base) if base is not None else None
        for key in keys:
            value = row.value(results[key])
            cells.append("—" if value is None else row.fmt.format(value))
            if key != "rondo" and base is not None:
                if row.ratio and value is not None and mine:
                    cells.append(f"{value / mine:.1f}×")
                else:
                    cells.append("—")
        target = row.target
        if row.ok is not None and mine is not None:
            target += " ✓" if row.ok(mine) else " ✗"
        cells.append(target)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- the record ---------------------------------------------------------------------------------


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    dirty = bool(_git("status", "--porcelain", "--", "src"))
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "cpu": _cpu_model(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "rondo_commit": _git("rev-parse", "--short", "HEAD")
        + (" (src/ modified)" if dirty else ""),
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }


def versions_line(results: dict[str, dict[str, Any]]) -> str:
    parts: list[str] = []
    for result in results.values():
        parts.extend(f"{name} {ver}" for name, ver in result.get("versions", {}).items())
    return ", ".join(dict.fromkeys(parts))


def extras(results: dict[str, dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for result in results.values():
        label = result["label"]
        loop = result.get("tool_loop")
        if loop:
            lines.append(
                f"- {label}: tool-loop CPU p10–p90 {loop['cpu_ms_p10']:.2f}–"
                f"{loop['cpu_ms_p90']:.2f} ms over {loop['loops']} loops; call count "
                f"{loop['calls_min']:,}–{loop['calls_max']:,} across profiled loops."
            )
        opt_in = result.get("parallel_sync_opt_in")
        if opt_in:
            lines.append(
                f"- {label}: 8 parallel sync tools with its opt-in thread pool "
                f"(`RunConfig(tool_thread_pool_config=ToolThreadPoolConfig(max_workers=8))`): "
                f"{opt_in['wall_ms']:.1f} ms wall (the table shows the default)."
            )
        floor = result.get("import_floor")
        if floor:
            measured = "; ".join(
                f"`{line}` {v['ms']:.0f} ms wall / {v['cpu_ms']:.0f} ms CPU"
                for line, v in floor.items()
            )
            lines.append(f"- {label}: import floor (its dependencies alone) — {measured}.")
        history = result.get("history")
        if history:
            saw = ", ".join(f"{k}: {v['model_saw']:,}" for k, v in history.items())
            lines.append(f"- {label}: messages the model received in the history step — {saw}.")
    return lines


METHODOLOGY = """\
## Methodology

- **Same workloads, same measuring code.** `bench/workers/_harness.py` defines the tools, the
  expected answers and all timing/profiling; each worker (`bench/workers/*_worker.py`) only
  adapts them to its framework's public API and runs in its own process and virtualenv. Every
  run is checked: the final text must match and the tools must have run the expected number of
  times, and in the history workload the model must have received every prior message.
- **Fake models, in-process, no network.** rondo: a minimal class implementing the `Model`
  protocol; google-adk: a `BaseLlm` subclass (as ADK's own tests fake models); pydantic-ai:
  `FunctionModel` with an `async def` function. Each answers from the request alone: tool
  call(s) first, text once the last message holds tool results, and reports fixed token usage
  (so pydantic-ai's `FunctionModel` does not estimate tokens by scanning the history).
- **Tool loop**: one user message → the model calls `get_weather(city)` (a plain `def`
  returning a dict) → the model answers text: two model calls, one tool call. A new session
  per loop (created outside the timed region; pydantic-ai has no session store, so a new run
  with no history). CPU = `time.process_time()` (all threads of the process), median over the
  loops after a warm-up. Calls = cProfile's total `ncalls` over one warmed-up loop (median of
  3), counting builtins and asyncio's own work on the event-loop thread; worker threads (where
  rondo and pydantic-ai run sync tools) are not traced. "Python functions" excludes builtins.
  The async-tool rows repeat the loop with `async def get_weather_async`.
- **Guard checks (rondo only, issue 24.7)**: the sync tool loop again, with a `Budget`
  setting every run limit (none reached), with one guardrail of each kind (input, output,
  tool input, tool output; each returns a prebuilt passing verdict), and with both; the rows
  give each one's extra cProfile calls (all) over the same loop with nothing configured,
  measured in the same process. The extra calls include the guardrail functions' own (one
  call per check: the user's code, which any guardrail costs). With nothing configured the
  guard code is not called at all (`tests/conformance/test_g6_guardrails_budgets.py::test_24_7_...`
  checks it by profile).
- **Step after K events**: the framework's own session store is filled with K alternating
  user / model text events (pydantic-ai: K messages passed as `message_history`), then one
  invocation with one new user message and one model call that answers text is timed. The
  first step on a freshly filled session is reported apart ("first step", where per-session
  caches such as rondo's incremental contents view are built); the main rows are the median
  CPU of the steps after it on the same session — what every turn of a long conversation
  costs. Up to 40 such steps, fewer (never under 3) for a framework that exceeds a 15 s
  budget; a session serves at most K/25 steps (each adds two events, ≤ 8% growth) before a
  fresh one is filled. Calls = cProfile of one such step. The target is about growth: after
  5,000 events within 1.5× of after 100; the call-count ratio is the noise-free view of it.
- **8 parallel 50 ms tools**: one model response holding 8 calls; each tool sleeps 50 ms
  (`await asyncio.sleep(0.05)` or `time.sleep(0.05)`). Wall time of the invocation, median
  after one warm-up. Each framework runs with its defaults (see the notes for ADK's opt-in).
- **Import**: median wall time of 5 fresh `python -c "<canonical import>"` processes minus
  the median of `python -c pass`, interleaved, after one warm-up (bytecode already compiled);
  the CPU row is the same processes' user + system time (from `wait4`). Canonical imports:
  `from rondo import Agent, Runner`; `from google.adk.agents import Agent; from
  google.adk.runners import Runner`; `from pydantic_ai import Agent`. The floor rows in the
  notes measure rondo's own dependencies the same way, in rondo's venv.
- **Noise.** The machine is shared with other work (the load average above is for 2 CPUs).
  Call counts are exact and repeat to the call; prefer them when comparing. CPU medians are
  steadier than wall times but not immune: on this machine rondo's tool-loop median moved
  between 0.6 and 1.5 ms across full runs at load 6–10, the sync-tool row most (its thread
  hand-off suffers from a busy CPU). Wall times exceed CPU times for the peers because a
  15 ms run is often preempted on an overloaded machine; rondo's sub-ms runs rarely are.
  Import times on this machine are several times those of an idle laptop (`python -c
  "import asyncio"` alone costs the floor shown in the notes): compare the ratio and the
  floor, not the absolute figure.
"""

DIFFERENCES = """\
## Differences between the frameworks' runs

- pydantic-ai has no session store: its tool loop and history step persist nothing, while
  rondo and ADK append every event to their in-memory session service (part of their cost).
- Sync tools: rondo and pydantic-ai run them in worker threads by default; google-adk runs
  them on the event loop unless `RunConfig.tool_thread_pool_config` is set, which is why its
  sync parallel row is ~8 × 50 ms. The opt-in figure is in the notes.
- google-adk's history events are authored by the agent itself (so they are sent as model
  turns, not "For context:" user turns); rondo's likewise.
- rondo's fake model is a minimal `Model` implementation, not `rondo.testing.ScriptedModel`
  (which records every request and deep-copies scripted calls), to match the peers' fakes.
- rondo is measured from the working tree (editable install) at the commit shown, with other
  engineers' uncommitted changes to src/ when marked; the peers are released wheels.
"""


def render(results: dict[str, dict[str, Any]], info: dict[str, Any]) -> str:
    lines = [
        "# Peer benchmark results",
        "",
        "Generated by `bench/run.py` (`./dev bench`); rerun it to refresh this file.",
        "",
        f"- Date: {info['date']}; command: `{info['command']}`",
        f"- Machine: {info['nproc']} CPUs (`nproc`), {info['cpu']}, {info['os']}",
        f"- Python {info['python']}; load average (1, 5, 15 min) before / after: "
        f"{info['load_before']} / {info['load_after']}",
        f"- rondo commit: {info['rondo_commit']}",
        f"- Versions: {versions_line(results)}",
        "",
        table(results),
        "",
        "Ratios are peer ÷ rondo (higher means rondo is cheaper). Targets are rondo's, from",
        "the core-runtime issue; ✓/✗ mark whether this run meets them.",
        "",
        "## Notes from this run",
        "",
        *extras(results),
        "",
        METHODOLOGY,
        DIFFERENCES,
    ]
    return "\n".join(lines)


def write_record(results: dict[str, dict[str, Any]], info: dict[str, Any]) -> None:
    (BENCH / "RESULTS.md").write_text(render(results, info), encoding="utf-8")
    raw = {"machine": info, "results": results}
    (BENCH / "results.json").write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    log("wrote bench/RESULTS.md and bench/results.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument(
        "--only", help="comma-separated frameworks to run: " + ", ".join(f.key for f in FRAMEWORKS)
    )
    parser.add_argument(
        "--write",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="write bench/RESULTS.md (default: only for a full run of every framework)",
    )
    parser.add_argument(
        "--render",
        action="store_true",
        help="measure nothing: rewrite bench/RESULTS.md from the raw bench/results.json",
    )
    args = parser.parse_args()
    if args.render:
        raw = json.loads((BENCH / "results.json").read_text(encoding="utf-8"))
        write_record(raw["results"], raw["machine"])
        return
    chosen = list(FRAMEWORKS)
    if args.only:
        wanted = {k.strip() for k in args.only.split(",")}
        unknown = wanted - {f.key for f in FRAMEWORKS}
        if unknown:
            parser.error(f"unknown framework(s): {', '.join(sorted(unknown))}")
        chosen = [f for f in FRAMEWORKS if f.key in wanted]
    write = args.write if args.write is not None else not (args.quick or args.only)

    info = machine()
    info["command"] = " ".join(["python bench/run.py", *sys.argv[1:]])
    results: dict[str, dict[str, Any]] = {}
    for fw in chosen:
        ensure_venv(fw)
    for fw in chosen:
        result = run_worker(fw, args.quick)
        result["label"] = fw.label
        log(f"{fw.label}: import time")
        result["import"] = import_time(fw, 3 if args.quick else 5)
        if fw.key == "rondo":
            result["import_floor"] = {
                line: import_time(fw, 3 if args.quick else 5, line) for line in FLOOR_IMPORTS
            }
        results[fw.key] = result

    print()
    print(table(results))
    print()
    for line in extras(results):
        print(line)
    if write:
        info["load_after"] = [round(x, 2) for x in os.getloadavg()]
        write_record(results, info)


if __name__ == "__main__":
    main()
