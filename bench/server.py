"""HTTP server benchmark: rondo's `api-server` against google-adk's `api_server`, same load.

    .venv/bin/python bench/server.py                 # 1, 4 and 16 clients, both servers
    .venv/bin/python bench/server.py --quick         # short runs while developing
    RONDO_ADK_PYTHON=/path/to/venv/bin/python .venv/bin/python bench/server.py

Both servers run the same deterministic agent (`server_apps/*/chat`: the model calls a tool,
then answers from its result — three events per run, no real model) with in-memory sessions
and artifacts, each as its own process started with its own command line as a user would
(`rondo api-server --db memory`, `adk api_server --no_use_local_storage`), at the default log
level. The load is N concurrent loopback clients, each on one keep-alive connection, each
repeating one *run*: create a session, `POST /run_sse` and read the stream to its end, read the
session back (checking it holds the four events). Reported per server and client count:
runs/s, time to first event (request sent → first `data:` line read) p50/p99, the whole run's
p50, and the server's CPU time per run (from /proc, the server process only). Both servers
are up for the whole benchmark and take turns point by point (rondo then ADK, then ADK then
rondo, `--rounds` times), so a machine whose speed drifts treats them alike; the ratios are
taken pair by pair and their median printed.

The client is a small HTTP/1.1 client on asyncio streams written here: a general client
(httpx) spends more CPU per request than the faster server does, and on a two-core machine
the client's CPU is taken from the server's. With `--pin` (default when the machine has 2+
CPUs) the server runs on CPU 0 and the client on CPU 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RONDO_APPS = HERE / "server_apps" / "rondo"
ADK_APPS = HERE / "server_apps" / "adk"
CLIENTS = (1, 4, 16)


# -- a minimal keep-alive HTTP/1.1 client ------------------------------------------------------


class Connection:
    """One keep-alive connection: requests in turn, Content-Length or chunked answers."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()

    async def request(
        self, method: str, path: str, body: bytes | None = None
    ) -> tuple[int, bytes, float]:
        """Send one request; returns the status, the body and when its first byte arrived."""
        assert self.reader is not None
        assert self.writer is not None
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + (body or b""))
        reader = self.reader
        status_line = await reader.readline()
        status = int(status_line.split()[1])
        length: int | None = None
        chunked = False
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
        if not chunked:
            data = await reader.readexactly(length or 0)
            return status, data, time.perf_counter()
        parts: list[bytes] = []
        first = 0.0
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            if size == 0:
                await reader.readline()
                break
            parts.append(await reader.readexactly(size))
            if not first:
                first = time.perf_counter()
            await reader.readexactly(2)
        return status, b"".join(parts), first


# -- the load -----------------------------------------------------------------------------------


@dataclass
class Sample:
    ttfe_ms: list[float] = field(default_factory=list[float])
    run_ms: list[float] = field(default_factory=list[float])
    errors: int = 0


async def _client(port: int, index: int, stop_at: float, sample: Sample, measure: bool) -> None:
    conn = Connection("127.0.0.1", port)
    await conn.open()
    user = f"user{index}"
    base = f"/apps/chat/users/{user}/sessions"
    n = 0
    try:
        while time.perf_counter() < stop_at:
            n += 1
            started = time.perf_counter()
            status, body, _ = await conn.request("POST", base, b"{}")
            if status != 200:
                sample.errors += 1
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
            status, body, first = await conn.request("POST", "/run_sse", json.dumps(run).encode())
            events = body.count(b"data: ")
            ok = status == 200 and events == 3 and b"Stub reply: noted" in body
            status, body, _ = await conn.request("GET", f"{base}/{sid}")
            ok = ok and status == 200 and len(json.loads(body)["events"]) == 4
            if not ok:
                sample.errors += 1
                continue
            if measure:
                sample.ttfe_ms.append((first - sent) * 1000)
                sample.run_ms.append((time.perf_counter() - started) * 1000)
    finally:
        await conn.close()


async def load(port: int, clients: int, seconds: float, warmup: float) -> Sample:
    """`clients` clients for `warmup` seconds (not counted), then for `seconds`."""
    await asyncio.gather(
        *(_client(port, i, time.perf_counter() + warmup, Sample(), False) for i in range(clients))
    )
    sample = Sample()
    await asyncio.gather(
        *(_client(port, i, time.perf_counter() + seconds, sample, True) for i in range(clients))
    )
    return sample


# -- the servers -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def adk_python() -> str:
    """google-adk's interpreter: RONDO_ADK_PYTHON, else bench/.venvs/adk (made on first use)."""
    configured = os.environ.get("RONDO_ADK_PYTHON")
    if configured:
        return configured
    sys.path.insert(0, str(HERE))
    from sessions import adk_python as sessions_adk_python  # the same venv as bench/sessions.py

    return sessions_adk_python()


def command(subject: str, port: int) -> list[str]:
    if subject == "rondo":
        # The checkout's venv, else the one running this (a worktree borrowing another's).
        script = ROOT / ".venv" / "bin" / "rondo"
        rondo = str(script if script.exists() else Path(sys.executable).parent / "rondo")
        return [rondo, "api-server", str(RONDO_APPS), "--port", str(port), "--db", "memory"]
    python = adk_python()
    # In-memory sessions and artifacts, as rondo's `--db memory`.
    flags = ["--port", str(port), "--no_use_local_storage", str(ADK_APPS)]
    return [python, "-m", "google.adk.cli", "api_server", *flags]


class Server:
    def __init__(self, subject: str, pin: bool, workdir: Path) -> None:
        self.port = _free_port()
        argv = command(subject, self.port)
        if pin and shutil.which("taskset"):
            argv = ["taskset", "-c", "0", *argv]
        self.process = subprocess.Popen(
            argv, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    async def ready(self) -> None:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}")
            try:
                conn = Connection("127.0.0.1", self.port)
                await conn.open()
                status, _, _ = await conn.request("GET", "/health")
                await conn.close()
                if status == 200:
                    return
            except OSError:
                pass
            await asyncio.sleep(0.2)
        raise RuntimeError("the server did not start")

    def cpu(self) -> float:
        return _cpu_seconds(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _point(
    server: Server, subject: str, clients: int, args: argparse.Namespace
) -> dict[str, Any]:
    cpu_before = server.cpu()
    sample = await load(server.port, clients, args.seconds, args.warmup)
    runs = len(sample.run_ms)
    # The warm-up's CPU is in the figure too, so divide by every run of both phases.
    total_runs = runs * (args.seconds + args.warmup) / args.seconds
    cpu_ms = (server.cpu() - cpu_before) * 1000
    return {
        "subject": subject,
        "clients": clients,
        "runs": runs,
        "runs_per_s": runs / args.seconds,
        "ttfe_p50_ms": _pct(sample.ttfe_ms, 0.50),
        "ttfe_p99_ms": _pct(sample.ttfe_ms, 0.99),
        "run_p50_ms": _pct(sample.run_ms, 0.50),
        "server_cpu_ms_per_run": cpu_ms / total_runs if total_runs else float("nan"),
        "errors": sample.errors,
    }


async def bench(
    subjects: list[str], args: argparse.Namespace, workdir: Path
) -> list[dict[str, Any]]:
    """Every point of every subject, the subjects taking turns (A B, then B A, ...) so that a
    machine whose speed drifts during the run treats them alike."""
    servers = {subject: Server(subject, args.pin, workdir) for subject in subjects}
    rows: list[dict[str, Any]] = []
    try:
        for server in servers.values():
            await server.ready()
        for clients in args.clients:
            for turn in range(args.rounds):
                order = subjects if turn % 2 == 0 else subjects[::-1]
                for subject in order:
                    row = await _point(servers[subject], subject, clients, args)
                    row["round"] = turn
                    rows.append(row)
                    print(_row(row), flush=True)
    finally:
        for server in servers.values():
            server.stop()
    return rows


def _row(r: dict[str, Any]) -> str:
    return (
        f"| {r['subject']} | {r['clients']} | {r['runs_per_s']:.1f} | {r['ttfe_p50_ms']:.2f} | "
        f"{r['ttfe_p99_ms']:.2f} | {r['run_p50_ms']:.2f} | {r['server_cpu_ms_per_run']:.2f} | "
        f"{r['errors']} |"
    )


def _median_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per subject and client count: the median of its rounds, figure by figure."""
    keys = sorted({(r["subject"], r["clients"]) for r in rows}, key=lambda k: (k[1], k[0]))
    out: list[dict[str, Any]] = []
    for subject, clients in keys:
        group = [r for r in rows if r["subject"] == subject and r["clients"] == clients]
        merged: dict[str, Any] = {"subject": subject, "clients": clients}
        for name in group[0]:
            if name not in merged and name != "round":
                merged[name] = statistics.median(r[name] for r in group)
        out.append(merged)
    return out


def _ratios(rows: list[dict[str, Any]]) -> list[str]:
    """rondo against google-adk, round by round (the pair measured back to back), medians."""
    lines = []
    for clients in sorted({r["clients"] for r in rows}):
        pairs = [
            (ours, theirs)
            for ours in rows
            for theirs in rows
            if ours["subject"] == "rondo"
            and theirs["subject"] == "adk"
            and ours["clients"] == theirs["clients"] == clients
            and ours["round"] == theirs["round"]
        ]
        if not pairs:
            continue
        speed = statistics.median(o["runs_per_s"] / t["runs_per_s"] for o, t in pairs)
        cpu = statistics.median(
            t["server_cpu_ms_per_run"] / o["server_cpu_ms_per_run"] for o, t in pairs
        )
        p99 = statistics.median(o["ttfe_p99_ms"] for o, _ in pairs)
        p50 = statistics.median(t["ttfe_p50_ms"] for _, t in pairs)
        lines.append(f"| {clients} | {speed:.1f}x | {p99:.1f} vs {p50:.1f} | {cpu:.1f}x |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--only", choices=["rondo", "adk"])
    parser.add_argument("--rounds", type=int, default=2, help="turns per point (median)")
    parser.add_argument("--quick", action="store_true", help="3 s per point, one round")
    parser.add_argument("--no-pin", dest="pin", action="store_false")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    args.clients = args.clients or list(CLIENTS)
    if args.quick:
        args.seconds, args.warmup, args.rounds = 3.0, 1.0, 1
    args.pin = args.pin and (os.cpu_count() or 1) >= 2
    if args.pin:
        os.sched_setaffinity(0, {1})
    load_before = round(os.getloadavg()[0], 2)
    print(f"load {load_before:.1f}; {args.seconds:.0f} s per point; pinned: {args.pin}")
    print("| server | clients | runs/s | TTFE p50 ms | TTFE p99 ms | run p50 ms | "
          "server CPU ms/run | errors |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    subjects = [args.only] if args.only else ["rondo", "adk"]
    workdir = Path(os.environ.get("TMPDIR", "/tmp"))
    rows = asyncio.run(bench(subjects, args, workdir))
    if args.rounds > 1:
        print("\nmedians of the rounds:")
        print("| server | clients | runs/s | TTFE p50 ms | TTFE p99 ms | run p50 ms | "
              "server CPU ms/run | errors |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for row in _median_rows(rows):
            print(_row(row))
    ratios = _ratios(rows)
    if ratios:
        print(
            "\n| clients | runs/s rondo/ADK | rondo TTFE p99 vs ADK p50 (ms) | CPU/run ADK/rondo |"
        )
        print("|---:|---:|---:|---:|")
        print("\n".join(ratios))
    if args.json:
        record = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "command": " ".join(["python bench/server.py", *sys.argv[1:]]),
            "load_before": load_before,
            "load_after": round(os.getloadavg()[0], 2),
            "rows": rows,
        }
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    print(f"load at the end {os.getloadavg()[0]:.1f}; median runs/s over all points: "
          f"{statistics.median(r['runs_per_s'] for r in rows):.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
