"""Detached runs (SPEC W7): what frame ids and the run task cost, and how fast a rejoin is.

    .venv/bin/python bench/detached_runs.py            # all three parts
    .venv/bin/python bench/detached_runs.py --quick    # short points while developing

1. **Run routes, before and after.** bench/server.py's load (N keep-alive clients, each:
   create a session, `POST /run_sse`, read the session back) against two `rondo api-server`
   processes: this tree, and the tree before detached runs (`--base`, default the merge base
   with `main`, exported to a temp dir and put first on PYTHONPATH). Both are up for the
   whole benchmark and take turns point by point; runs/s and server CPU per run, and the
   ratio after/before pair by pair (median).
2. **A frame id per event.** The ADK framing of one record before (`data:` line) and after
   (`id:` line, numbering): Python calls (cProfile, deterministic) and µs per event.
3. **Rejoin latency.** A finished run of the `steps` app (7 records), rejoined after its
   first frame: request sent → first missed frame read, from the journal of the server that
   ran it, and from the log on a second server on the same SQLite file.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from server import RONDO_APPS, Connection, Server, _cpu_seconds, _free_port, load  # noqa: E402

STEPS_APPS = ROOT / "tests" / "server" / "apps"


def _export_base(base: str, into: Path) -> Path:
    """The `src/` of commit `base`, written under `into`."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", base, "src"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


class Replica(Server):
    """`rondo api-server` in a process of its own, optionally on another tree's code."""

    def __init__(self, apps: Path, db: str, cwd: Path, src: Path | None = None) -> None:
        self.port = _free_port()
        env = dict(os.environ)
        if src is not None:
            env["PYTHONPATH"] = str(src)
        argv = [sys.executable, "-m", "rondo.cli", "api-server", str(apps)]
        argv += ["--port", str(self.port), "--db", db]
        self.process = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )


async def routes(args: argparse.Namespace, work: Path) -> list[str]:
    base_src = _export_base(args.base, work / "base")
    replicas = {
        "before": Replica(RONDO_APPS, "memory", work, base_src),
        "after": Replica(RONDO_APPS, "memory", work),
    }
    rows: list[dict[str, Any]] = []
    try:
        for replica in replicas.values():
            await replica.ready()
        for clients in args.clients:
            for turn in range(args.rounds):
                order = ["before", "after"] if turn % 2 == 0 else ["after", "before"]
                for name in order:
                    replica = replicas[name]
                    cpu = _cpu_seconds(replica.process.pid)
                    sample = await load(replica.port, clients, args.seconds, args.warmup)
                    runs = len(sample.run_ms)
                    total = runs * (args.seconds + args.warmup) / args.seconds
                    cpu_ms = (_cpu_seconds(replica.process.pid) - cpu) * 1000
                    row = {
                        "subject": name,
                        "clients": clients,
                        "round": turn,
                        "runs_per_s": runs / args.seconds,
                        "cpu_ms": cpu_ms / total if total else float("nan"),
                        "errors": sample.errors,
                    }
                    rows.append(row)
                    print(
                        f"| {name} | {clients} | {row['runs_per_s']:.1f} | {row['cpu_ms']:.2f} "
                        f"| {sample.errors} |",
                        flush=True,
                    )
    finally:
        for replica in replicas.values():
            replica.stop()
    lines = ["| clients | runs/s before | runs/s after | after/before | CPU ms/run b → a |"]
    lines.append("|---|---|---|---|---|")
    for clients in args.clients:
        pairs = [
            (b, a)
            for b in rows
            for a in rows
            if b["subject"] == "before"
            and a["subject"] == "after"
            and b["clients"] == a["clients"] == clients
            and b["round"] == a["round"]
        ]
        ratio = statistics.median(a["runs_per_s"] / b["runs_per_s"] for b, a in pairs)
        before = statistics.median(b["runs_per_s"] for b, _ in pairs)
        after = statistics.median(a["runs_per_s"] for _, a in pairs)
        cpu_b = statistics.median(b["cpu_ms"] for b, _ in pairs)
        cpu_a = statistics.median(a["cpu_ms"] for _, a in pairs)
        lines.append(
            f"| {clients} | {before:.1f} | {after:.1f} | {ratio:.3f} | {cpu_b:.2f} → {cpu_a:.2f} |"
        )
    return lines


def frame_cost(repeat: int) -> list[str]:
    from rondo.events import Event
    from rondo.server.frames import Numbering
    from rondo.server.streams import dumps, sse
    from rondo.server.wire import event_json
    from rondo.types import Content, FunctionCall, Part

    call = FunctionCall(name="remember", args={"note": "x"}, id="c1")
    events = [
        Event(author="chat", content=Content(role="model", parts=[Part(function_call=call)])),
        Event(author="chat", content=Content.model("Stub reply: noted 'x'")),
    ]

    def before() -> None:
        for event in events:
            sse(dumps(event_json(event)))

    def after() -> None:
        numbering = Numbering("adk", 1)
        for event in events:
            for _ in numbering.frames(event):
                pass

    lines = ["| framing | Python calls per event | µs per event |", "|---|---|---|"]
    for name, fn in (("data: line (before)", before), ("id: + data: (after)", after)):
        fn()
        profile = cProfile.Profile()
        profile.runcall(fn)
        calls = pstats.Stats(profile).total_calls / len(events)  # pyright: ignore[reportAttributeAccessIssue]
        started = time.perf_counter()
        for _ in range(repeat):
            fn()
        us = (time.perf_counter() - started) / (repeat * len(events)) * 1e6
        lines.append(f"| {name} | {calls:.0f} | {us:.1f} |")
    return lines


async def _first_frame(port: int, path: str, cursor: str) -> tuple[float, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (
        f"GET {path} HTTP/1.1\r\nHost: x\r\nLast-Event-ID: {cursor}\r\nConnection: close\r\n\r\n"
    )
    sent = time.perf_counter()
    writer.write(request.encode())
    await writer.drain()
    seen = b""
    while b"\nid: " not in seen and b"\r\n\r\nid: " not in seen and b"data: " not in seen:
        chunk = await reader.read(65536)
        if not chunk:
            break
        seen += chunk
    elapsed = time.perf_counter() - sent
    writer.close()
    return elapsed, seen


async def rejoin(args: argparse.Namespace, work: Path) -> list[str]:
    db = str(work / "rejoin.db")
    one = Replica(STEPS_APPS, db, work)
    await one.ready()
    two = Replica(STEPS_APPS, db, work)
    await two.ready()
    journal: list[float] = []
    log: list[float] = []
    try:
        conn = Connection("127.0.0.1", one.port)
        await conn.open()
        for i in range(args.rejoins):
            base = "/apps/steps/users/bench/sessions"
            _, body, _ = await conn.request("POST", base, b"{}")
            sid = json.loads(body)["id"]
            run = {
                "appName": "steps",
                "userId": "bench",
                "sessionId": sid,
                "newMessage": {"role": "user", "parts": [{"text": f"go {i}"}]},
            }
            _, body, _ = await conn.request("POST", "/run_sse", json.dumps(run).encode())
            text = body.decode()
            first_id = text.split("\n", 1)[0].removeprefix("id: ")
            run_id = json.loads(text.split("\n")[1].removeprefix("data: "))["runId"]
            path = f"{base}/{sid}/runs/{run_id}/stream"
            journal.append((await _first_frame(one.port, path, first_id))[0] * 1000)
            log.append((await _first_frame(two.port, path, first_id))[0] * 1000)
        await conn.close()
    finally:
        one.stop()
        two.stop()

    def p(values: list[float], q: float) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return [
        "| rejoin after the first frame | p50 ms | p99 ms |",
        "|---|---|---|",
        f"| journal (the server that ran it) | {p(journal, 0.5):.2f} | {p(journal, 0.99):.2f} |",
        f"| log (another server, SQLite) | {p(log, 0.5):.2f} | {p(log, 0.99):.2f} |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", help="the tree before (default: the merge base with main)")
    parser.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rejoins", type=int, default=200)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.warmup, args.rounds, args.rejoins = 3.0, 1.0, 1, 30
    args.clients = args.clients or [1, 16]
    if args.base is None:
        merge_base = ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"]
        args.base = subprocess.run(merge_base, check=True, capture_output=True, text=True).stdout
        args.base = args.base.strip()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print("\n".join(frame_cost(2000)), "\n", flush=True)
        print("\n".join(asyncio.run(rejoin(args, work))), "\n", flush=True)
        print("\n".join(asyncio.run(routes(args, work))), flush=True)


if __name__ == "__main__":
    main()
