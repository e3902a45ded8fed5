"""Replica benchmark: two `rondo api-server` processes on one PostgreSQL against two google-adk
`api_server` processes on the same PostgreSQL server, same load (issue 10, point 3).

    .venv/bin/python bench/replicas.py                  # 16 clients, 10 s, 2 rounds
    .venv/bin/python bench/replicas.py --quick          # 4 s, one round
    RONDO_BENCH_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres .venv/bin/python ...
    .venv/bin/python bench/replicas.py --only rondo --src /tmp/old/src   # another rondo tree

Each subject runs two replicas of its own server, each the command a user runs — `rondo
api-server server_apps/rondo --db postgresql+asyncpg://…` and `adk api_server
--session_service_uri postgresql+asyncpg://… server_apps/adk` (ADK's DatabaseSessionService,
from bench/.venvs/adk, which bench/sessions.py makes) — on a database of its own
(`bench_replicas_rondo`, `bench_replicas_adk`, created when missing, emptied before a run) on
the same PostgreSQL server. The agent is bench/server.py's deterministic one: the model calls
one tool, then answers from its result (three events per run, no real model).

The load is N concurrent loopback clients with a keep-alive connection to each replica and no
sticky routing: client i creates a session on replica i % 2, runs it (`POST /run_sse`, read to
the end) on the other one and reads it back on the first, checking it holds the four events,
over and over. Reported per subject: runs/s, the run request's latency p50/p99, errors (any
non-200 answer, a stream without the three events or a read-back without the four), and lost
events: after the load every session is read again and the events stored are counted against
the events the clients were acknowledged (the three streamed and their message). The subjects
take turns (rondo then ADK, then ADK then rondo, `--rounds` times) and their medians are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from server import (  # noqa: E402
    ADK_APPS,
    RONDO_APPS,
    ROOT,
    Connection,
    _cpu_seconds,
    _free_port,
    _pct,
    adk_python,
)

DATABASES = {"rondo": "bench_replicas_rondo", "adk": "bench_replicas_adk"}
REPLICAS = 2


# -- the database --------------------------------------------------------------------------------


def _admin_dsn() -> str:
    return os.environ.get("RONDO_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")


def _url(database: str) -> str:
    """The SQLAlchemy URL both servers take, for `database` on the admin DSN's server."""
    base = _admin_dsn().rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://", 1)
    return f"{base}/{database}"


async def _fresh_database(name: str) -> None:
    """`name` exists and holds no tables (each server creates its own on start)."""
    import asyncpg  # pyright: ignore[reportMissingTypeStubs]

    admin = await asyncpg.connect(_admin_dsn())
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()


async def _count_rows(name: str, sql: str) -> int:
    import asyncpg  # pyright: ignore[reportMissingTypeStubs]

    base = _admin_dsn().rsplit("/", 1)[0]
    conn = await asyncpg.connect(f"{base}/{name}")
    try:
        return int(await conn.fetchval(sql))
    finally:
        await conn.close()


# -- the servers -------------------------------------------------------------------------------


def command(subject: str, port: int) -> list[str]:
    url = _url(DATABASES[subject])
    if subject == "rondo":
        rondo = str(ROOT / ".venv" / "bin" / "rondo")
        return [rondo, "api-server", str(RONDO_APPS), "--port", str(port), "--db", url]
    flags = ["--port", str(port), "--session_service_uri", url]
    flags += ["--artifact_service_uri", "memory://", str(ADK_APPS)]
    return [adk_python(), "-m", "google.adk.cli", "api_server", *flags]


class Replica:
    def __init__(self, subject: str, workdir: Path, src: Path | None = None) -> None:
        self.port = _free_port()
        env = dict(os.environ)
        if src is not None and subject == "rondo":  # rondo from another source tree
            env["PYTHONPATH"] = str(src)
        self.process = subprocess.Popen(
            command(subject, self.port),
            cwd=workdir,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    async def ready(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"a replica exited with {self.process.returncode}")
            try:
                conn = Connection("127.0.0.1", self.port)
                await conn.open()
                status, _, _ = await conn.request("GET", "/list-apps")
                await conn.close()
                if status == 200:
                    return
            except OSError:
                pass
            await asyncio.sleep(0.2)
        raise RuntimeError("a replica did not start")

    def cpu(self) -> float:
        return _cpu_seconds(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


# -- the load -----------------------------------------------------------------------------------


@dataclass
class Sample:
    run_ms: list[float] = field(default_factory=list[float])
    errors: int = 0
    runs: int = 0  # every run tried, counted or not (for the CPU per run)
    first_error: str = ""
    # (replica index, user, session id, events acknowledged: message + streamed events)
    acknowledged: list[tuple[int, str, str, int]] = field(
        default_factory=list[tuple[int, str, str, int]]
    )


async def _client(
    ports: list[int], index: int, round_: int, stop_at: float, sample: Sample, measure: bool
) -> None:
    conns = [Connection("127.0.0.1", port) for port in ports]
    for conn in conns:
        await conn.open()
    home = index % len(conns)
    here, there = conns[home], conns[(home + 1) % len(conns)]
    user = f"r{round_}-u{index}-{'m' if measure else 'w'}"
    base = f"/apps/chat/users/{user}/sessions"
    n = 0
    try:
        while time.perf_counter() < stop_at:
            n += 1
            sample.runs += 1
            status, body, _ = await here.request("POST", base, b"{}")
            if status != 200:
                sample.errors += 1
                sample.first_error = sample.first_error or f"create {status}: {body[:300]!r}"
                continue
            sid = json.loads(body)["id"]
            run = {
                "appName": "chat",
                "userId": user,
                "sessionId": sid,
                "newMessage": {"role": "user", "parts": [{"text": f"note {n}"}]},
                "streaming": False,
            }
            sent = time.perf_counter()
            status, body, _ = await there.request("POST", "/run_sse", json.dumps(run).encode())
            done = time.perf_counter()
            streamed = body.count(b"data: ")
            ok = status == 200 and streamed == 3 and b"Stub reply: noted" in body
            if status == 200 and measure:
                sample.acknowledged.append((home, user, sid, 1 + streamed - body.count(b'"error')))
            status, body, _ = await here.request("GET", f"{base}/{sid}")
            if not ok:
                sample.first_error = sample.first_error or f"run {status}: {body[-300:]!r}"
            ok = ok and status == 200 and len(json.loads(body)["events"]) == 4
            if not ok:
                sample.errors += 1
                sample.first_error = sample.first_error or f"read {status}: {body[:300]!r}"
                continue
            if measure:
                sample.run_ms.append((done - sent) * 1000)
    finally:
        for conn in conns:
            await conn.close()


async def _lost_events(ports: list[int], sample: Sample) -> int:
    """Events acknowledged to the clients that a fresh read of their session does not hold."""
    lost = 0
    queue = list(sample.acknowledged)

    async def reader() -> None:
        nonlocal lost
        conns = [Connection("127.0.0.1", port) for port in ports]
        for conn in conns:
            await conn.open()
        try:
            while queue:
                home, user, sid, acknowledged = queue.pop()
                # Read on the replica that did not run it either way round: any replica will do.
                conn = conns[(home + 1) % len(conns)]
                status, body, _ = await conn.request(
                    "GET", f"/apps/chat/users/{user}/sessions/{sid}"
                )
                stored = len(json.loads(body)["events"]) if status == 200 else 0
                lost += max(0, acknowledged - stored)
        finally:
            for conn in conns:
                await conn.close()

    await asyncio.gather(*(reader() for _ in range(8)))
    return lost


async def _point(
    subject: str, replicas: list[Replica], round_: int, args: argparse.Namespace
) -> dict[str, Any]:
    ports = [r.port for r in replicas]
    clients = args.clients
    cpu_before = sum(r.cpu() for r in replicas)
    warm = Sample()
    stop = time.perf_counter() + args.warmup
    await asyncio.gather(*(_client(ports, i, round_, stop, warm, False) for i in range(clients)))
    sample = Sample()
    stop = time.perf_counter() + args.seconds
    await asyncio.gather(*(_client(ports, i, round_, stop, sample, True) for i in range(clients)))
    runs = len(sample.run_ms)
    cpu_ms = (sum(r.cpu() for r in replicas) - cpu_before) * 1000
    tried = sample.runs + warm.runs
    return {
        "subject": subject,
        "round": round_,
        "clients": clients,
        "runs": runs,
        "runs_per_s": runs / args.seconds,
        "p50_ms": _pct(sample.run_ms, 0.50),
        "p99_ms": _pct(sample.run_ms, 0.99),
        "server_cpu_ms_per_run": cpu_ms / tried if tried else float("nan"),
        "errors": sample.errors + warm.errors,
        "first_error": sample.first_error or warm.first_error,
        "acknowledged_events": sum(a[3] for a in sample.acknowledged),
        "lost_events": await _lost_events(ports, sample),
        "load": os.getloadavg()[0],
    }


def _row(r: dict[str, Any]) -> str:
    return (
        f"| {r['subject']} | {r['round']} | {r['clients']} | {r['runs_per_s']:.1f} | "
        f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['server_cpu_ms_per_run']:.1f} | "
        f"{r['errors']} | {r['acknowledged_events']} | "
        f"{r['lost_events']} | {r['load']:.1f} |"
    )


async def bench(
    subjects: list[str], args: argparse.Namespace, workdir: Path
) -> list[dict[str, Any]]:
    for subject in subjects:
        await _fresh_database(DATABASES[subject])
    servers: dict[str, list[Replica]] = {}
    rows: list[dict[str, Any]] = []
    try:
        for subject in subjects:
            # One first, so two replicas never race to create the tables of an empty database.
            first = Replica(subject, workdir, args.src)
            await first.ready()
            others = [Replica(subject, workdir, args.src) for _ in range(REPLICAS - 1)]
            servers[subject] = [first, *others]
            for replica in servers[subject]:
                await replica.ready()
        for turn in range(args.rounds):
            for subject in subjects if turn % 2 == 0 else subjects[::-1]:
                row = await _point(subject, servers[subject], turn, args)
                rows.append(row)
                print(_row(row), flush=True)
                if row["first_error"]:
                    print(f"  first error: {row['first_error']}", flush=True)
    finally:
        for replicas in servers.values():
            for replica in replicas:
                replica.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", choices=["rondo", "adk"])
    parser.add_argument("--quick", action="store_true", help="4 s, one round")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--src", type=Path, help="run rondo from this source tree (its src/)")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.warmup, args.rounds = 4.0, 1.0, 1
    subjects = [args.only] if args.only else ["rondo", "adk"]
    print(
        f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {REPLICAS} replicas each; "
        f"{args.clients} clients; {args.seconds:.0f} s per point"
    )
    print("| server | round | clients | runs/s | run p50 ms | run p99 ms | replicas' CPU ms/run "
          "| errors | events acknowledged | events lost | load |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = asyncio.run(bench(subjects, args, Path(os.environ.get("TMPDIR", "/tmp"))))
    medians: dict[str, float] = {}
    for subject in subjects:
        group = [r for r in rows if r["subject"] == subject]
        medians[subject] = statistics.median(r["runs_per_s"] for r in group)
        print(
            f"{subject}: median {medians[subject]:.1f} runs/s, "
            f"p99 {statistics.median(r['p99_ms'] for r in group):.1f} ms, "
            f"{statistics.median(r['server_cpu_ms_per_run'] for r in group):.1f} CPU ms/run, "
            f"{sum(r['errors'] for r in group)} errors, "
            f"{sum(r['lost_events'] for r in group)} events lost"
        )
    if len(medians) == 2:
        pairs = [
            (o["runs_per_s"], t["runs_per_s"])
            for o in rows
            for t in rows
            if o["subject"] == "rondo" and t["subject"] == "adk" and o["round"] == t["round"]
        ]
        ratio = statistics.median(o / t for o, t in pairs if t)
        print(f"runs/s rondo/ADK, round by round, median: {ratio:.1f}x")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
