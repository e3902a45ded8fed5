"""Durable-session benchmark: rondo's `SqlSessionService` against google-adk's
`SqliteSessionService` and `DatabaseSessionService`, on the same workloads, in one run.

    .venv/bin/python bench/sessions.py            # full run (a few minutes; ADK is slow)
    .venv/bin/python bench/sessions.py --quick    # a short run while developing
    .venv/bin/python bench/sessions.py --no-postgres

Each subject runs in a process of its own (rondo in .venv, google-adk in bench/.venvs/adk,
installed by this script on first use) and prints JSON; this script prints the table.

Workloads (identical for every subject; the fake model answers from the request alone):
- tool loop: one invocation on a new session — user message, model calls `get_weather`, tool
  result, final answer (4 stored events). CPU is the whole process's (every thread: aiosqlite
  and rondo's SQLite thread included), median over the runs.
- one step on a long session: a text-only turn on a session already holding 100 / 5,000
  events (alternating user and model texts), in steady state (the process has used the
  session before) and right after a restart (a new service on the same database).
- append throughput: `append_event` of plain text events, one after the other on one session,
  and from 20 sessions at once.
- memory per stored event: traced allocations held by a session read from the store by a new
  service (`get_session`), divided by its number of events.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ADK_VENV = HERE / ".venvs" / "adk"
ADK_PACKAGES = ["google-adk==2.13.0", "sqlalchemy[asyncio]>=2,<3", "aiosqlite", "asyncpg"]
APP, USER = "bench", "user"
CITY, FINAL = "Paris", "It is 18°C and sunny in Paris."
CONCURRENT_SESSIONS = 20


def history_text(i: int) -> str:
    return f"user message number {i}" if i % 2 == 0 else f"model answer number {i}"


def get_weather(city: str) -> dict[str, Any]:
    """Returns the current weather for a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    return {"city": city, "temperature_c": 18, "condition": "sunny"}


# -- subjects: one framework + store each, driven by the same workload code -------------------


class Subject:
    """What a workload needs from a framework: sessions, runs, appends, loads."""

    name = ""
    durable = True  # False: an in-memory reference (no restart, nothing read back)

    async def create(self, sid: str) -> Any: ...
    async def tool_loop(self, sid: str) -> str: ...
    async def step(self, sid: str) -> str: ...
    async def append_text(self, session: Any, i: int) -> None: ...
    async def reader(self) -> Callable[[str], Awaitable[Any]]:
        """A new service on the same database (a restarted process), ready to read."""
        ...

    def events_of(self, session: Any) -> int: ...
    async def close(self) -> None: ...


class RondoSubject(Subject):
    def __init__(self, url: str, engine_kwargs: dict[str, Any], synchronous: str) -> None:
        from rondo import Agent, FunctionCall, Runner
        from rondo.models import ModelResponse
        from rondo.sessions.sql import SqlSessionService
        from rondo.types import Content, Part

        self.name = "rondo"
        self._args = (url, engine_kwargs, synchronous)
        if url == "memory":
            from rondo import InMemorySessionService

            memory = InMemorySessionService()
            self.durable = False
            self._make: Callable[[], Any] = lambda: memory
        else:
            self._make = lambda: SqlSessionService(
                url, sqlite_synchronous=synchronous, **engine_kwargs
            )
        self.service = self._make()
        self._opened = [self.service]

        class FakeModel:
            def __init__(self, calls: bool, answer: str) -> None:
                self.name, self.calls, self.answer = "fake", calls, answer

            async def generate(self, request: Any, *, stream: bool = False) -> Any:
                last = request.contents[-1]
                if not self.calls or any(p.function_response for p in last.parts):
                    yield ModelResponse(content=Content.model(self.answer))
                    return
                call = FunctionCall(name="get_weather", args={"city": CITY})
                yield ModelResponse(content=Content(role="model", parts=[Part(function_call=call)]))

        def runner(model: Any, tools: list[Any]) -> Any:
            agent = Agent(name="bench_agent", model=model, tools=tools)
            return Runner(agent=agent, app_name=APP, session_service=self.service)

        self._loop = runner(FakeModel(True, FINAL), [get_weather])
        self._step = runner(FakeModel(False, "Noted."), [])
        self._content, self._event = Content, __import__("rondo").Event
        # The same agent with summarizing compaction (a threshold the step never reaches: the
        # session's summary is already stored, see `summarize`).
        from rondo.flow.context_strategies import Summarizing

        summarizing = Agent(
            name="bench_agent",
            model=FakeModel(False, "Noted."),
            context_strategies=[Summarizing(token_threshold=100_000, retention_events=20)],
        )
        self._compacted = Runner(agent=summarizing, app_name=APP, session_service=self.service)
        # The same agent with a sliding window alone (issue 25.4: a window reads the tail).
        from rondo.flow.context_strategies import SlidingWindow

        windowed = Agent(
            name="bench_agent",
            model=FakeModel(False, "Noted."),
            context_strategies=[SlidingWindow(max_turns=10)],
        )
        self._windowed = Runner(agent=windowed, app_name=APP, session_service=self.service)

    async def create(self, sid: str) -> Any:
        return await self.service.create_session(app_name=APP, user_id=USER, session_id=sid)

    async def _run(self, runner: Any, sid: str, text: str) -> str:
        out = ""
        async for event in runner.run_async(user_id=USER, session_id=sid, new_message=text):
            out = event.text
        return out

    async def tool_loop(self, sid: str) -> str:
        return await self._run(self._loop, sid, "What's the weather in Paris?")

    async def step(self, sid: str) -> str:
        return await self._run(self._step, sid, "One more thing.")

    async def step_compacted(self, sid: str) -> str:
        return await self._run(self._compacted, sid, "One more thing.")

    async def step_windowed(self, sid: str) -> str:
        return await self._run(self._windowed, sid, "One more thing.")

    async def summarize(self, sid: str, retained: int = 20) -> None:
        """Store the summary compaction would write: everything but the newest `retained`
        records (what a session past its threshold holds)."""
        from rondo.events import EventActions, EventCompaction
        from rondo.flow.compaction import SUMMARY_PREFIX

        session = await self.service.get_session(app_name=APP, user_id=USER, session_id=sid)
        events = list(session.events)
        record = self._event(
            author="bench_agent",
            actions=EventActions(
                compaction=EventCompaction(
                    start_timestamp=events[0].timestamp,
                    end_timestamp=events[-retained - 1].timestamp,
                    compacted_content=self._content.user(SUMMARY_PREFIX + "what was said"),
                )
            ),
        )
        await self.service.append_event(session, record)

    @staticmethod
    def decoded() -> int:
        """Records decoded from stored payloads in this process so far."""
        from rondo.sessions import sql

        return sql.decoded_records() if hasattr(sql, "decoded_records") else -1

    async def append_text(self, session: Any, i: int) -> None:
        text = history_text(i)
        content = self._content.user(text) if i % 2 == 0 else self._content.model(text)
        author = USER if i % 2 == 0 else "bench_agent"
        await self.service.append_event(session, self._event(author=author, content=content))

    async def reader(self) -> Callable[[str], Awaitable[Any]]:
        service = self._make()
        self._opened.append(service)
        await service.list_sessions(app_name=APP, limit=1)  # connect, check the schema
        return lambda sid: service.get_session(app_name=APP, user_id=USER, session_id=sid)

    def events_of(self, session: Any) -> int:
        return len(session.events)

    def replica(self) -> RondoSubject:
        """Another instance on the same database, as another process would open it."""
        return RondoSubject(*self._args)

    async def close(self) -> None:
        for service in self._opened:
            await service.close()


class AdkSubject(Subject):
    def __init__(self, kind: str, url: str, engine_kwargs: dict[str, Any]) -> None:
        from google.adk.agents import Agent
        from google.adk.events import Event
        from google.adk.models import BaseLlm, LlmResponse
        from google.adk.runners import Runner
        from google.adk.sessions import DatabaseSessionService
        from google.adk.sessions.sqlite_session_service import SqliteSessionService
        from google.genai import types

        self.name = kind
        if url == "memory":
            from google.adk.sessions import InMemorySessionService

            memory = InMemorySessionService()
            self.durable = False
            self._make: Callable[[], Any] = lambda: memory
        elif kind == "adk-sqlite":
            path = url.split("///", 1)[1]
            self._make = lambda: SqliteSessionService(path)
        else:
            self._make = lambda: DatabaseSessionService(url, **engine_kwargs)
        self.service = self._make()
        self._opened = [self.service]
        self._types, self._event = types, Event

        class FakeLlm(BaseLlm):
            calls: bool = False
            answer: str = ""

            async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
                last = llm_request.contents[-1]
                if not self.calls or any(p.function_response for p in last.parts or ()):
                    text = types.Part(text=self.answer)
                    yield LlmResponse(content=types.Content(role="model", parts=[text]))
                    return
                call = types.FunctionCall(name="get_weather", args={"city": CITY})
                part = types.Part(function_call=call)
                yield LlmResponse(content=types.Content(role="model", parts=[part]))

        def runner(model: Any, tools: list[Any]) -> Any:
            agent = Agent(name="bench_agent", model=model, tools=tools)
            return Runner(agent=agent, app_name=APP, session_service=self.service)

        self._loop = runner(FakeLlm(model="fake", calls=True, answer=FINAL), [get_weather])
        self._step = runner(FakeLlm(model="fake", answer="Noted."), [])

    async def create(self, sid: str) -> Any:
        return await self.service.create_session(app_name=APP, user_id=USER, session_id=sid)

    async def _run(self, runner: Any, sid: str, text: str) -> str:
        t = self._types
        message = t.Content(role="user", parts=[t.Part(text=text)])
        out = ""
        async for event in runner.run_async(user_id=USER, session_id=sid, new_message=message):
            if event.content and event.content.parts and event.content.parts[0].text:
                out = event.content.parts[0].text
        return out

    async def tool_loop(self, sid: str) -> str:
        return await self._run(self._loop, sid, "What's the weather in Paris?")

    async def step(self, sid: str) -> str:
        return await self._run(self._step, sid, "One more thing.")

    async def step_compacted(self, sid: str) -> str:
        return await self._run(self._compacted, sid, "One more thing.")

    async def summarize(self, sid: str, retained: int = 20) -> None:
        """Store the summary compaction would write: everything but the newest `retained`
        records (what a session past its threshold holds)."""
        from rondo.events import EventActions, EventCompaction
        from rondo.flow.compaction import SUMMARY_PREFIX

        session = await self.service.get_session(app_name=APP, user_id=USER, session_id=sid)
        events = list(session.events)
        record = self._event(
            author="bench_agent",
            actions=EventActions(
                compaction=EventCompaction(
                    start_timestamp=events[0].timestamp,
                    end_timestamp=events[-retained - 1].timestamp,
                    compacted_content=self._content.user(SUMMARY_PREFIX + "what was said"),
                )
            ),
        )
        await self.service.append_event(session, record)

    @staticmethod
    def decoded() -> int:
        """Records decoded from stored payloads in this process so far."""
        from rondo.sessions import sql

        return sql.decoded_records() if hasattr(sql, "decoded_records") else -1

    async def append_text(self, session: Any, i: int) -> None:
        t = self._types
        text = history_text(i)
        role, author = ("user", USER) if i % 2 == 0 else ("model", "bench_agent")
        content = t.Content(role=role, parts=[t.Part(text=text)])
        await self.service.append_event(session, self._event(author=author, content=content))

    async def reader(self) -> Callable[[str], Awaitable[Any]]:
        service = self._make()
        self._opened.append(service)
        await service.list_sessions(app_name=APP, user_id=USER)  # connect, check the schema
        return lambda sid: service.get_session(app_name=APP, user_id=USER, session_id=sid)

    def events_of(self, session: Any) -> int:
        return len(session.events)

    async def close(self) -> None:
        for service in self._opened:
            close = getattr(service, "close", None)
            if close is not None:
                await close()


# -- the workloads -------------------------------------------------------------------------------


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


async def _cpu(fn: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    # No gc.collect() first: a full collection right before a run makes the next allocations
    # slow (2.5x on an in-memory tool loop here), which no server pays per request.
    cpu, wall = time.process_time(), time.perf_counter()
    await fn()
    return time.process_time() - cpu, time.perf_counter() - wall


async def measure(subject: Subject, settings: dict[str, Any]) -> dict[str, Any]:
    reps, out = settings["reps"], {}
    ids = iter(range(10**9))

    # Tool loop: a new session per run (created outside the timing).
    for _ in range(settings["warmup"]):
        sid = f"w{next(ids)}"
        await subject.create(sid)
        assert await subject.tool_loop(sid) == FINAL
    cpu, wall = [], []
    for _ in range(reps):
        sid = f"t{next(ids)}"
        await subject.create(sid)
        c, w = await _cpu(lambda sid=sid: subject.tool_loop(sid))
        cpu.append(c)
        wall.append(w)
    out["tool_loop_cpu_ms"], out["tool_loop_wall_ms"] = _median_ms(cpu), _median_ms(wall)

    # One step on long sessions, steady state and right after a restart.
    for size in settings["sizes"]:
        sid = f"h{size}"
        session = await subject.create(sid)
        for i in range(size):
            await subject.append_text(session, i)
        await subject.step(sid)  # the process has used this session before
        steps = [(await _cpu(lambda sid=sid: subject.step(sid)))[0] for _ in range(reps)]
        out[f"step_{size}_cpu_ms"] = _median_ms(steps)
    big = max(settings["sizes"])
    if subject.durable:
        out.update(await restart_and_memory(subject, big, reps))
    out.update(await appends(subject, settings["appends"]))
    return out


async def failing_as_value(key: str, fn: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """Run one workload; a failure becomes its table cell instead of ending the worker."""
    try:
        return await fn()
    except Exception as exc:
        return {key: f"error: {type(exc).__name__}", f"{key}_error": repr(exc)[:300]}


async def restart_and_memory(subject: Subject, big: int, reps: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    restarts = []
    for _ in range(max(3, reps // 10)):
        read = await subject.reader()  # a new service: nothing cached
        c, _w = await _cpu(lambda read=read: read(f"h{big}"))
        restarts.append(c)
    out[f"load_{big}_after_restart_cpu_ms"] = _median_ms(restarts)

    # Memory held per stored event by a session read back from the store.
    read = await subject.reader()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    loaded = await read(f"h{big}")
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    out["bytes_per_event"] = round(held / subject.events_of(loaded))
    del loaded
    return out


async def appends(subject: Subject, n: int) -> dict[str, Any]:
    """Append throughput: one session, then many at once."""
    out: dict[str, Any] = {}
    session = await subject.create("a-seq")
    start = time.perf_counter()
    for i in range(n):
        await subject.append_text(session, i)
    out["append_seq_per_s"] = round(n / (time.perf_counter() - start))
    sessions = [await subject.create(f"a-par{k}") for k in range(CONCURRENT_SESSIONS)]
    per = max(1, n // CONCURRENT_SESSIONS)

    async def fill(s: Any) -> None:
        for i in range(per):
            await subject.append_text(s, i)

    async def concurrently() -> dict[str, Any]:
        start = time.perf_counter()
        await asyncio.gather(*(fill(s) for s in sessions))
        rate = round(per * CONCURRENT_SESSIONS / (time.perf_counter() - start))
        return {"append_concurrent_per_s": rate}

    out.update(await failing_as_value("append_concurrent_per_s", concurrently))
    return out


async def concurrent_invocations(subject: Subject, count: int) -> dict[str, Any]:
    """`count` tool loops at once on `count` sessions: wall time and errors."""
    for k in range(count):
        await subject.create(f"c{k}")
    start = time.perf_counter()
    results = await asyncio.gather(
        *(subject.tool_loop(f"c{k}") for k in range(count)), return_exceptions=True
    )
    errors = [r for r in results if isinstance(r, BaseException)]
    return {
        f"concurrent_{count}_wall_s": round(time.perf_counter() - start, 2),
        f"concurrent_{count}_errors": len(errors),
        f"concurrent_{count}_first_error": repr(errors[0])[:160] if errors else "",
    }


async def fill(subject: Subject, sid: str, size: int) -> None:
    session = await subject.create(sid)
    for i in range(size):
        await subject.append_text(session, i)


async def replicas(subject: RondoSubject, sizes: list[int], reps: int) -> dict[str, Any]:
    """One step on a long session per instance kind: an instance that served the session
    before, right after another instance appended to it (`warm`), and a new instance that
    never saw it (`fresh`, its first request) — as the session is, with a sliding window of
    10 turns alone, and after a summary was stored, with compaction on (issue 25.4: only the
    newest records the window needs, or the summary and what follows it, are decoded).
    `decoded` counts the records the fresh instance decoded (deterministic)."""
    out: dict[str, Any] = {}
    other = subject.replica()
    try:
        for size in sizes:
            sid = f"r{size}"
            await fill(subject, sid, size)
            await subject.step(sid)  # this instance has served the session
            warm = []
            for _ in range(reps):
                await other.step(sid)  # another instance appends a turn (2 events)
                warm.append((await _cpu(lambda sid=sid: subject.step(sid)))[0])
            out[f"warm_{size}_cpu_ms"] = _median_ms(warm)
            for kind in ("plain", "windowed", "compacted"):
                if kind == "compacted":
                    await subject.summarize(sid)
                fresh, decoded = [], []
                for _ in range(max(3, reps // 10)):
                    new = subject.replica()
                    await new.service.list_sessions(app_name=APP, limit=1)  # connect, schema
                    step = {
                        "plain": new.step,
                        "windowed": new.step_windowed,
                        "compacted": new.step_compacted,
                    }[kind]
                    gc.collect()
                    before = new.decoded()
                    fresh.append((await _cpu(lambda step=step, sid=sid: step(sid)))[0])
                    decoded.append(new.decoded() - before)
                    await new.close()
                    del new, step
                suffix = "" if kind == "plain" else f"_{kind}"
                out[f"fresh_{size}{suffix}_cpu_ms"] = _median_ms(fresh)
                out[f"fresh_{size}{suffix}_decoded"] = max(decoded)
    finally:
        await other.close()
    return out


async def throughput(subject: Subject, clients: int, seconds: float) -> dict[str, Any]:
    """`clients` concurrent callers, each running tool loops on new sessions back to back
    (the runner creates each session) for `seconds`: invocations/s, CPU busy %, errors."""
    done = errors = 0
    first_error = ""
    deadline = time.perf_counter() + seconds

    async def caller(k: int) -> None:
        nonlocal done, errors, first_error
        n = 0
        while time.perf_counter() < deadline:
            try:
                assert await subject.tool_loop(f"q{clients}-{k}-{n}") == FINAL
                done += 1
            except Exception as exc:
                errors += 1
                first_error = first_error or repr(exc)[:160]
            n += 1

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(caller(k) for k in range(clients)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {
        f"throughput_{clients}_per_s": round(done / wall, 1),
        f"throughput_{clients}_cpu_busy_pct": round(100 * cpu / wall),
        f"throughput_{clients}_errors": errors,
        f"throughput_{clients}_first_error": first_error,
    }


async def worker(args: argparse.Namespace) -> None:
    settings = json.loads(args.settings)
    engine_kwargs = json.loads(args.engine_kwargs)
    if settings.get("server_gc"):
        # What `rondo api-server` applies before serving (rondo.server.process.tune_gc).
        from rondo.server.process import tune_gc

        tune_gc()
    if args.subject.startswith("rondo"):
        subject: Subject = RondoSubject(args.url, engine_kwargs, settings.get("sync", "NORMAL"))
    else:
        subject = AdkSubject(args.subject, args.url, engine_kwargs)
    try:
        if settings.get("concurrent"):
            result = await concurrent_invocations(subject, settings["concurrent"])
        elif settings.get("replicas"):
            assert isinstance(subject, RondoSubject)
            result = await replicas(subject, settings["replicas"], settings["reps"])
        elif settings.get("throughput"):
            result = {}
            for clients in settings["throughput"]:
                result.update(await throughput(subject, clients, settings["seconds"]))
        else:
            result = await measure(subject, settings)
    finally:
        await subject.close()
    print(json.dumps(result))


# -- the orchestrator ----------------------------------------------------------------------------


def adk_python() -> str:
    """bench/.venvs/adk's python, created and filled on first use (never the project's venv)."""
    python = ADK_VENV / "bin" / "python"
    check = "import google.adk, sqlalchemy, asyncpg, aiosqlite, importlib.metadata as m; "
    check += "assert m.version('google-adk') == '2.13.0'"
    if (
        python.exists()
        and subprocess.run([python, "-c", check], capture_output=True).returncode == 0
    ):
        return str(python)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(ADK_VENV)], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", *ADK_PACKAGES], check=True)
    return str(python)


def run_worker(
    python: str,
    subject: str,
    url: str,
    settings: dict[str, Any],
    engine_kwargs: dict[str, Any],
    src: str | None = None,
) -> dict[str, Any]:
    command = [
        python,
        str(Path(__file__).resolve()),
        "--worker",
        subject,
        "--url",
        url,
        "--settings",
        json.dumps(settings),
        "--engine-kwargs",
        json.dumps(engine_kwargs),
    ]
    env = dict(os.environ)
    if src and subject.startswith("rondo"):
        env["PYTHONPATH"] = src  # another rondo's source tree (e.g. before a change)
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if "Error" in line]
        return {"error": (lines or done.stderr.strip().splitlines() or ["failed"])[-1][:300]}
    return json.loads(done.stdout.strip().splitlines()[-1])


async def _pg(url: str, sql: str) -> None:
    import asyncpg  # pyright: ignore[reportMissingTypeStubs]

    conn = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def _pg_schema(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    schema = f"rondo_bench_{uuid.uuid4().hex[:8]}"
    asyncio.run(_pg(args.postgres, f'CREATE SCHEMA "{schema}"'))
    return schema, {"connect_args": {"server_settings": {"search_path": schema}}}


def _rondo_python() -> str:
    """The project's venv, or (a worktree without one) the interpreter running this script."""
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def orchestrate_long(args: argparse.Namespace) -> None:
    """Long sessions on two instances (warm / fresh) and PostgreSQL throughput: rondo only."""
    quick = args.quick
    sizes = [100, 1000, 5000] if quick else [100, 5000, 20000]
    settings = {"reps": 10 if quick else 20, "replicas": sizes}
    rondo = _rondo_python()
    tmp = Path(tempfile.mkdtemp(prefix="rondo-bench-"))
    results: dict[str, dict[str, Any]] = {}
    try:
        print("… rondo SQLite, two instances", file=sys.stderr, flush=True)
        url = f"sqlite:///{tmp / 'long.db'}"
        results["rondo SQLite"] = run_worker(rondo, "rondo", url, settings, {}, args.src)
        print("… rondo SQLite, two instances, the api-server's GC settings", file=sys.stderr)
        served = {**settings, "server_gc": True}
        url = f"sqlite:///{tmp / 'long-served.db'}"
        results["rondo SQLite, api-server"] = run_worker(rondo, "rondo", url, served, {}, args.src)
        if not args.no_postgres:
            schema, kwargs = _pg_schema(args)
            try:
                print("… rondo PostgreSQL, two instances", file=sys.stderr, flush=True)
                results["rondo PG"] = run_worker(
                    rondo, "rondo", args.postgres, settings, kwargs, args.src
                )
                print("… rondo PostgreSQL, the api-server's GC settings", file=sys.stderr)
                served_schema, served_kwargs = _pg_schema(args)
                try:
                    results["rondo PG, api-server"] = run_worker(
                        rondo, "rondo", args.postgres, served, served_kwargs, args.src
                    )
                finally:
                    asyncio.run(_pg(args.postgres, f'DROP SCHEMA "{served_schema}" CASCADE'))
                print("… rondo PostgreSQL throughput", file=sys.stderr, flush=True)
                load = {"throughput": [16, 64], "seconds": 4 if quick else 8}
                results["rondo PG"].update(
                    run_worker(rondo, "rondo", args.postgres, load, kwargs, args.src)
                )
            finally:
                asyncio.run(_pg(args.postgres, f'DROP SCHEMA "{schema}" CASCADE'))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = []
    for size in sizes:
        rows.append(
            (
                f"step on {size} events, warm instance after another appended, CPU ms",
                f"warm_{size}_cpu_ms",
            )
        )
        rows.append((f"step on {size} events, fresh instance, CPU ms", f"fresh_{size}_cpu_ms"))
        rows.append(("  records it decoded", f"fresh_{size}_decoded"))
        rows.append(
            (
                f"step on {size} events, a 10-turn window alone, fresh instance, CPU ms",
                f"fresh_{size}_windowed_cpu_ms",
            )
        )
        rows.append(("  records it decoded", f"fresh_{size}_windowed_decoded"))
        rows.append(
            (
                f"step on {size} events + a summary, compaction on, fresh instance, CPU ms",
                f"fresh_{size}_compacted_cpu_ms",
            )
        )
        rows.append(("  records it decoded", f"fresh_{size}_compacted_decoded"))
    for clients in (16, 64):
        rows.append((f"{clients} concurrent callers, invocations/s", f"throughput_{clients}_per_s"))
        rows.append(
            (f"{clients} concurrent callers, CPU busy %", f"throughput_{clients}_cpu_busy_pct")
        )
        rows.append((f"{clients} concurrent callers, errors", f"throughput_{clients}_errors"))
    print(table(results, rows))


def orchestrate(args: argparse.Namespace) -> None:
    quick = args.quick
    settings = {
        "reps": 10 if quick else 30,
        "warmup": 3 if quick else 5,
        "sizes": [100, 1000] if quick else [100, 5000],
        "appends": 200 if quick else 1000,
    }
    adk = None if args.no_adk else adk_python()
    rondo = str(ROOT / ".venv" / "bin" / "python")
    tmp = Path(tempfile.mkdtemp(prefix="rondo-bench-"))
    results: dict[str, dict[str, Any]] = {}
    try:
        sqlite_runs = [
            ("rondo in-memory", rondo, "rondo", {}),
            ("rondo", rondo, "rondo", {"sync": "NORMAL"}),
            ("rondo FULL", rondo, "rondo", {"sync": "FULL"}),
        ]
        if args.aiosqlite:
            sqlite_runs.append(("rondo aiosqlite", rondo, "rondo", {"sync": "NORMAL"}))
        if adk:
            sqlite_runs += [
                ("adk in-memory", adk, "adk-memory", {}),
                ("adk Sqlite", adk, "adk-sqlite", {}),
                ("adk Database", adk, "adk-db", {}),
            ]
        for label, python, subject, extra in sqlite_runs:
            if args.only and args.only not in label:
                continue
            db = tmp / f"{label.replace(' ', '_')}.db"
            # rondo: the URL names the driver (sqlite:/// is the stdlib one); ADK's database
            # service needs an async driver.
            plain = subject == "rondo" and "aiosqlite" not in label
            url = f"sqlite:///{db}" if plain else f"sqlite+aiosqlite:///{db}"
            if "in-memory" in label:
                url = "memory"
            print(f"… {label}", file=sys.stderr, flush=True)
            results[label] = run_worker(python, subject, url, {**settings, **extra}, {}, args.src)
        if not args.no_postgres:
            pg_runs = [("rondo", rondo, "rondo")]
            if adk:
                pg_runs.append(("adk Database", adk, "adk-db"))
            for label, python, subject in pg_runs:
                if args.only and args.only not in f"{label} PG":
                    continue
                schema = f"rondo_bench_{uuid.uuid4().hex[:8]}"
                asyncio.run(_pg(args.postgres, f'CREATE SCHEMA "{schema}"'))
                kwargs = {"connect_args": {"server_settings": {"search_path": schema}}}
                try:
                    print(f"… {label} on PostgreSQL", file=sys.stderr, flush=True)
                    pg = run_worker(python, subject, args.postgres, settings, kwargs, args.src)
                    pg.update(
                        run_worker(
                            python, subject, args.postgres, {"concurrent": 200}, kwargs, args.src
                        )
                    )
                    results[f"{label} PG"] = pg
                finally:
                    asyncio.run(_pg(args.postgres, f'DROP SCHEMA "{schema}" CASCADE'))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(render(results, settings))


def render(results: dict[str, dict[str, Any]], settings: dict[str, Any]) -> str:
    small, big = settings["sizes"]
    rows = [
        ("tool loop, CPU ms", "tool_loop_cpu_ms"),
        ("tool loop, wall ms", "tool_loop_wall_ms"),
        (f"step on {small} events, CPU ms", f"step_{small}_cpu_ms"),
        (f"step on {big} events, CPU ms", f"step_{big}_cpu_ms"),
        (f"step {big} / step {small}", "ratio"),
        (f"load {big} events after restart, CPU ms", f"load_{big}_after_restart_cpu_ms"),
        ("append, events/s (one session)", "append_seq_per_s"),
        (f"append, events/s ({CONCURRENT_SESSIONS} sessions)", "append_concurrent_per_s"),
        ("memory per stored event, bytes", "bytes_per_event"),
        ("200 concurrent tool loops, wall s", "concurrent_200_wall_s"),
        ("200 concurrent tool loops, errors", "concurrent_200_errors"),
    ]
    for r in results.values():
        if f"step_{small}_cpu_ms" in r and r.get(f"step_{small}_cpu_ms"):
            r["ratio"] = round(r[f"step_{big}_cpu_ms"] / r[f"step_{small}_cpu_ms"], 2)
    return table(results, rows)


def table(results: dict[str, dict[str, Any]], rows: list[tuple[str, str]]) -> str:
    labels = list(results)
    lines = [
        "| workload | " + " | ".join(labels) + " |",
        "| --- |" + " ---: |" * len(labels),
    ]
    for title, key in rows:
        cells = [str(results[label].get(key, "—")) for label in labels]
        if any(c != "—" for c in cells):
            lines.append(f"| {title} | " + " | ".join(cells) + " |")
    errors = {label: r["error"] for label, r in results.items() if "error" in r}
    for label, r in results.items():
        for key, value in r.items():
            if key.endswith("_error") and value:
                errors[f"{label} ({key.removesuffix('_error')})"] = value
    for label, error in errors.items():
        lines.append(f"\n{label}: {error}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, 1,000-event history")
    parser.add_argument("--no-adk", action="store_true", help="rondo only")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--only", help="run only the columns whose label contains this")
    parser.add_argument(
        "--long",
        action="store_true",
        help="long sessions on two instances (warm/fresh) and PostgreSQL throughput, rondo only",
    )
    parser.add_argument("--src", help="run rondo from this source tree (PYTHONPATH)")
    parser.add_argument(
        "--aiosqlite", action="store_true", help="add a rondo column on sqlite+aiosqlite://"
    )
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "RONDO_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
        ),
    )
    parser.add_argument("--worker", dest="subject", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--settings", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("--engine-kwargs", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.subject:
        asyncio.run(worker(args))
    elif args.long:
        orchestrate_long(args)
    else:
        orchestrate(args)


if __name__ == "__main__":
    main()
