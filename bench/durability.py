"""Cost of durability (SPEC D1/D4): what resume bookkeeping adds when nothing fails, and how
long a resume takes after a crash on a long session.

    .venv/bin/python bench/durability.py            # ~1 min
    .venv/bin/python bench/durability.py --quick

1. Bookkeeping on the no-failure path. A tool loop (user message, N model calls each calling
   one tool, a final answer) runs on the in-memory store and on SQLite. cProfile counts every
   Python call (deterministic); the calls and the CPU (cProfile's own time) spent in D1/D3
   code — `rondo.durable`, the resume hooks of the loop and the runner, the held-call and
   timeout checks — are reported as a share of the whole loop. Starting a run with no new
   message on a finished session (the only time the log is read for a resume point) is
   counted too.
2. Resume after a crash. A SQLite session holds `H` prior events, then the crash state: a
   model event whose tool call never got a response. A new store (a restarted process)
   resumes it with no new message — the tool runs, the model answers — and that is timed
   against a normal turn (new message, one model answer) on the same session after a restart.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# `--src DIR` runs the loop on another rondo tree (e.g. the one before D1) for a call diff.
_SRC = sys.argv[sys.argv.index("--src") + 1] if "--src" in sys.argv else str(ROOT / "src")
sys.path.insert(0, _SRC)

from rondo import Agent, Event, FunctionCall, Runner, ToolContext  # noqa: E402
from rondo.sessions.base import BaseSessionService  # noqa: E402
from rondo.sessions.memory import InMemorySessionService  # noqa: E402
from rondo.sessions.sql import SqlSessionService  # noqa: E402
from rondo.testing import ScriptedModel  # noqa: E402
from rondo.types import Content  # noqa: E402

# The functions that exist only for D1/D3 on the path of a run that does not fail.
DURABLE_FUNCTIONS = {
    "take_resume_point",
    "set_resume_point",
    "find_interrupted",
    "_invocation_start",
    "_resume",
    "_resume_context",
    "_next_before",
}


def is_durable(filename: str, name: str) -> bool:
    return "rondo/durable/" in filename or ("rondo/" in filename and name in DURABLE_FUNCTIONS)


async def weather(city: str, tool_context: ToolContext) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temp_c": 18, "key": tool_context.function_call_id}


def tool_loop_runner(service: BaseSessionService, steps: int) -> Runner:
    script: list[Any] = [FunctionCall(name="weather", args={"city": f"c{i}"}) for i in range(steps)]
    return Runner(
        agent=Agent(name="agent", model=ScriptedModel([*script, "done"]), tools=[weather]),
        app_name="bench",
        session_service=service,
    )


async def run(runner: Runner, sid: str, message: str | None) -> list[Event]:
    return [e async for e in runner.run_async(user_id="u", session_id=sid, new_message=message)]


def profile(coro_factory: Any) -> tuple[int, int, float, float]:
    """(all calls, durable calls, all CPU s, durable CPU s) of one run under cProfile."""
    profiler = cProfile.Profile()
    loop = asyncio.new_event_loop()
    try:
        profiler.enable()
        loop.run_until_complete(coro_factory())
        profiler.disable()
    finally:
        loop.close()
    stats = pstats.Stats(profiler)
    total_calls = durable_calls = 0
    total_cpu = durable_cpu = 0.0
    for (filename, _line, name), (_cc, calls, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        total_calls += calls
        total_cpu += tottime
        if is_durable(filename, name):
            durable_calls += calls
            durable_cpu += tottime
    return total_calls, durable_calls, total_cpu, durable_cpu


class StatelessLoop:
    """A fake model: a tool call per step until `steps` results are in, then the answer."""

    name = "stateless"

    def __init__(self, steps: int) -> None:
        self.steps = steps

    async def generate(self, request: Any, *, stream: bool = False) -> Any:
        from rondo.models.base import ModelResponse
        from rondo.types import Part

        answered = sum(1 for c in request.contents for p in c.parts if p.function_response)
        if answered < self.steps:
            part = Part(function_call=FunctionCall(name="weather", args={"city": f"c{answered}"}))
        else:
            part = Part(text="done")
        yield ModelResponse(content=Content(role="model", parts=[part]))


def bookkeeping(steps: int, repeats: int, workdir: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for store in ("memory", "sqlite"):
        results = []
        for r in range(repeats):
            if store == "memory":
                service: BaseSessionService = InMemorySessionService()
            else:
                service = SqlSessionService(f"sqlite:///{workdir / f'book-{r}.db'}")
            runner = tool_loop_runner(service, steps)

            async def loop_run(runner: Runner = runner, r: int = r) -> None:
                await run(runner, f"s{r}", "go")

            async def empty_start(runner: Runner = runner, r: int = r) -> None:
                # A finished session, started again with no message: the resume check runs.
                runner.agent.model.extend(["again"])  # type: ignore[attr-defined]
                await run(runner, f"s{r}", None)

            results.append((profile(loop_run), profile(empty_start)))
            if isinstance(service, SqlSessionService):
                asyncio.run(service.close())
        loop_stats = results[-1][0]  # call counts are the same every run
        empty_stats = results[-1][1]
        cpu_share = statistics.median(d / t for (_, _, t, d), _ in results)
        rows.append(
            {
                "store": store,
                "steps": steps,
                "loop_calls": loop_stats[0],
                "loop_durable_calls": loop_stats[1],
                "loop_durable_call_share": loop_stats[1] / loop_stats[0],
                "loop_durable_cpu_share": cpu_share,
                "empty_start_calls": empty_stats[0],
                "empty_start_durable_calls": empty_stats[1],
            }
        )
    return rows


def history_session(path: Path, history: int) -> None:
    """A SQLite session with `history` events, then a model call whose tool never answered."""

    async def build() -> None:
        service = SqlSessionService(f"sqlite:///{path}")
        session = await service.create_session(app_name="bench", user_id="u", session_id="s")
        for i in range(history):
            role_author = ("user", "user") if i % 2 == 0 else ("model", "agent")
            await service.append_event(
                session,
                Event(
                    author=role_author[1],
                    invocation_id=f"old-{i // 2}",
                    content=Content(role=role_author[0], parts=[{"text": f"message {i}"}]),  # type: ignore[list-item]
                ),
            )
        await service.append_event(
            session,
            Event(
                author="user", invocation_id="crashed", run_id="run-c", content=Content.user("go")
            ),
        )
        await service.append_event(
            session,
            Event(
                author="agent",
                invocation_id="crashed",
                run_id="run-c",
                content=Content(
                    role="model",
                    parts=[
                        {"function_call": {"name": "weather", "args": {"city": "x"}, "id": "c-x"}}
                    ],  # type: ignore[list-item]
                ),
            ),
        )
        await service.close()

    asyncio.run(build())


def timed(path: Path, message: str | None) -> tuple[float, float, int]:
    """(wall s, CPU s, events produced) of one run on a new store over `path`."""

    async def go() -> int:
        service = SqlSessionService(f"sqlite:///{path}")
        runner = Runner(
            agent=Agent(name="agent", model=ScriptedModel(["done"]), tools=[weather]),
            app_name="bench",
            session_service=service,
        )
        events = await run(runner, "s", message)
        await service.close()
        return len(events)

    wall, cpu = time.perf_counter(), time.process_time()
    produced = asyncio.run(go())
    return time.perf_counter() - wall, time.process_time() - cpu, produced


def resume_after_crash(history: int, repeats: int, workdir: Path) -> dict[str, Any]:
    base = workdir / f"history-{history}.db"
    history_session(base, history)
    resume_wall, resume_cpu, turn_wall, turn_cpu = [], [], [], []
    for r in range(repeats):
        for kind in ("resume", "turn"):
            copy = workdir / f"{kind}-{r}.db"
            shutil.copy(base, copy)
            for suffix in ("-wal", "-shm"):
                side = Path(str(base) + suffix)
                if side.exists():
                    shutil.copy(side, Path(str(copy) + suffix))
            wall, cpu, produced = timed(copy, None if kind == "resume" else "hello")
            if kind == "resume":
                assert produced == 2, produced  # the re-run tool's event and the answer
                resume_wall.append(wall)
                resume_cpu.append(cpu)
            else:
                turn_wall.append(wall)
                turn_cpu.append(cpu)
    return {
        "history_events": history + 2,
        "resume_wall_ms": statistics.median(resume_wall) * 1000,
        "resume_cpu_ms": statistics.median(resume_cpu) * 1000,
        "new_turn_wall_ms": statistics.median(turn_wall) * 1000,
        "new_turn_cpu_ms": statistics.median(turn_cpu) * 1000,
        "resume_over_new_turn_cpu": statistics.median(resume_cpu) / statistics.median(turn_cpu),
    }


def dbos_overhead(server: str, invocations: int) -> dict[str, Any]:
    """Per-invocation cost of running a 3-step tool loop as a DBOS workflow, against running
    the same `run_invocation` directly, on one PostgreSQL (a scratch database, dropped)."""
    import uuid

    import asyncpg  # pyright: ignore[reportMissingTypeStubs]
    from dbos import DBOS, SetWorkflowID

    from rondo.durable.dbos import DbosEngine
    from rondo.durable.engine import run_invocation
    from rondo.types import Content

    name = f"rondo_bench_dbos_{uuid.uuid4().hex[:8]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(f"{server}/postgres")
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    sessions_url = f"{server.replace('postgresql://', 'postgresql+asyncpg://')}/{name}"
    out: dict[str, Any] = {}

    async def go(record_steps: bool) -> None:
        service = SqlSessionService(sessions_url)

        def make_runner() -> Runner:
            # One runner serves every workflow of this process: a model that answers from
            # the request alone (3 tool steps, then the answer).
            return Runner(
                agent=Agent(name="agent", model=StatelessLoop(3), tools=[weather]),
                app_name="bench",
                session_service=service,
            )

        DBOS(
            config={
                "name": "rondo-bench",
                "system_database_url": f"{server}/{name}",
                "application_version": "bench",
                "executor_id": "bench",
                "log_level": "WARNING",
            }
        )
        # One engine per DBOS launch: the queue runs the workflow registered under its name.
        engine = DbosEngine(make_runner, record_steps=record_steps, polling_interval_sec=0.05)
        DBOS.launch()
        await engine.start()
        message = Content.user("go")
        suffix = "" if record_steps else "_unrecorded"
        timings: dict[str, tuple[list[float], list[float]]] = {
            f"{kind}{suffix}": ([], []) for kind in ("direct", "workflow", "queued")
        }
        for i in range(invocations + 2):  # the first two warm up
            for kind, (walls, cpus) in timings.items():
                sid, key = f"{kind}-{i}", uuid.uuid4().hex
                wall, cpu = time.perf_counter(), time.process_time()
                if kind.startswith("direct"):
                    await run_invocation(
                        engine._runner(),  # pyright: ignore[reportPrivateUsage]
                        user_id="u",
                        session_id=sid,
                        message=message,
                        key=key,
                    )
                elif kind.startswith("workflow"):
                    with SetWorkflowID(key):
                        await engine._workflow("u", sid, message.model_dump(mode="json"))  # pyright: ignore[reportPrivateUsage]
                else:
                    engine.submit(user_id="u", session_id=sid, message=message, key=key)
                    handle = await DBOS.retrieve_workflow_async(key)
                    await handle.get_result(polling_interval_sec=0.01)
                if i >= 2:
                    walls.append(time.perf_counter() - wall)
                    cpus.append(time.process_time() - cpu)
        for kind, (walls, cpus) in timings.items():
            out[f"{kind}_wall_ms"] = statistics.median(walls) * 1000
            out[f"{kind}_cpu_ms"] = statistics.median(cpus) * 1000
        await service.close()

    try:
        for record_steps in (True, False):
            try:
                asyncio.run(go(record_steps))
            finally:
                DBOS.destroy()
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    out["workflow_over_direct_cpu"] = out["workflow_cpu_ms"] / out["direct_cpu_ms"]
    out["unrecorded_over_direct_cpu"] = out["workflow_unrecorded_cpu_ms"] / out["direct_cpu_ms"]
    out["queued_unrecorded_over_direct_cpu"] = (
        out["queued_unrecorded_cpu_ms"] / out["direct_cpu_ms"]
    )
    # 4 model calls + 3 tool calls: 7 DBOS steps per invocation
    out["per_step_cpu_ms"] = (out["workflow_cpu_ms"] - out["workflow_unrecorded_cpu_ms"]) / 7
    out["queued_over_direct_cpu"] = out["queued_cpu_ms"] / out["direct_cpu_ms"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, help="write the results here too")
    parser.add_argument("--src", help="the rondo source tree to run (default: this one)")
    parser.add_argument("--base", help="a rondo source tree before D1: diff the loop's calls")
    parser.add_argument("--calls-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--dbos",
        metavar="SERVER",
        help="also measure DBOS (needs rondo[dbos]), e.g. postgresql://postgres@127.0.0.1:5432",
    )
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    workdir = Path(tempfile.mkdtemp(prefix="rondo-durability-"))
    if args.calls_only:
        rows = bookkeeping(10, 2, workdir)
        print(json.dumps({r["store"]: r["loop_calls"] for r in rows}))
        shutil.rmtree(workdir, ignore_errors=True)
        return
    try:
        results: dict[str, Any] = {"bookkeeping": bookkeeping(10, repeats, workdir)}
        if args.base:
            out = subprocess.run(
                [sys.executable, __file__, "--calls-only", "--src", args.base],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            results["base_loop_calls"] = json.loads(out.strip().splitlines()[-1])
        if args.dbos:
            results["dbos"] = dbos_overhead(args.dbos, 5 if args.quick else 20)
        results["resume"] = [resume_after_crash(h, repeats, workdir) for h in (100, 5_000)]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("## resume bookkeeping on the no-failure path (10-step tool loop)")
    print(
        "| store | calls in the loop | D1/D3 calls | call share | CPU share | "
        "empty-message start: calls / D1 calls |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in results["bookkeeping"]:
        print(
            f"| {row['store']} | {row['loop_calls']:,} | {row['loop_durable_calls']} | "
            f"{row['loop_durable_call_share']:.3%} | {row['loop_durable_cpu_share']:.3%} | "
            f"{row['empty_start_calls']:,} / {row['empty_start_durable_calls']} |"
        )
    if "base_loop_calls" in results:
        print()
        print("| store | loop calls before D1 | after | difference |")
        print("| --- | ---: | ---: | ---: |")
        for row in results["bookkeeping"]:
            before = results["base_loop_calls"][row["store"]]
            after = row["loop_calls"]
            print(
                f"| {row['store']} | {before:,} | {after:,} | {after - before:+,} "
                f"({(after - before) / before:+.3%}) |"
            )
    print()
    print("## resume after a crash (SQLite, new store = restarted process)")
    print(
        "| events in the session | resume: wall / CPU ms | new turn: wall / CPU ms | "
        "resume ÷ new turn (CPU) |"
    )
    print("| ---: | ---: | ---: | ---: |")
    for row in results["resume"]:
        print(
            f"| {row['history_events']:,} | {row['resume_wall_ms']:.1f} / "
            f"{row['resume_cpu_ms']:.1f} | {row['new_turn_wall_ms']:.1f} / "
            f"{row['new_turn_cpu_ms']:.1f} | {row['resume_over_new_turn_cpu']:.2f} |"
        )
    if "dbos" in results:
        d = results["dbos"]
        print()
        print("## DBOS (3-step tool loop on PostgreSQL, per invocation)")
        print("| how | wall ms | CPU ms | CPU ÷ direct |")
        print("| --- | ---: | ---: | ---: |")
        print(
            f"| run_invocation, no DBOS | {d['direct_wall_ms']:.1f} | {d['direct_cpu_ms']:.1f} | 1.00 |"
        )
        print(
            f"| as a DBOS workflow, 7 steps (called) | {d['workflow_wall_ms']:.1f} | "
            f"{d['workflow_cpu_ms']:.1f} | {d['workflow_over_direct_cpu']:.2f} |"
        )
        print(
            f"| as a DBOS workflow, record_steps=False | {d['workflow_unrecorded_wall_ms']:.1f}"
            f" | {d['workflow_unrecorded_cpu_ms']:.1f} | {d['unrecorded_over_direct_cpu']:.2f} |"
        )
        print(
            f"| through the DBOS queue, 7 steps | {d['queued_wall_ms']:.1f} | {d['queued_cpu_ms']:.1f} | "
            f"{d['queued_over_direct_cpu']:.2f} |"
        )
        print(
            f"| through the DBOS queue, record_steps=False | {d['queued_unrecorded_wall_ms']:.1f}"
            f" | {d['queued_unrecorded_cpu_ms']:.1f} | "
            f"{d['queued_unrecorded_over_direct_cpu']:.2f} |"
        )
        print(f"\nDBOS step: {d['per_step_cpu_ms']:.2f} ms CPU each (7 per invocation)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
