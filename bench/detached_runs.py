"""Detached runs (SPEC W7): what frame ids and the run task cost, and how fast a rejoin is.

    .venv/bin/python bench/detached_runs.py            # every part
    .venv/bin/python bench/detached_runs.py --quick    # short points while developing
    .venv/bin/python bench/detached_runs.py --base cb705ed^ --postgres URL

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
   ran it, and from the log on a second server on the same SQLite file. With `--postgres`,
   also across two replicas on PostgreSQL, in both formats (the lifecycle one from the frames
   the running replica kept).
4. **Calls per request, in-process** (`bench/server_profile.py` on this tree and on `--base`,
   deterministic): at ASGI spec 2.4 and at 2.3, the one uvicorn declares.
5. **Keeping lifecycle frames** (`--postgres`): Python calls and database statements of one
   `/run_lifecycle` run of `steps` on PostgreSQL, with the frames kept for other replicas
   and without.
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


async def routes(args: argparse.Namespace, work: Path, base_src: Path) -> list[str]:
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

    p = _p
    return [
        "| rejoin after the first frame | p50 ms | p99 ms |",
        "|---|---|---|",
        f"| journal (the server that ran it) | {p(journal, 0.5):.2f} | {p(journal, 0.99):.2f} |",
        f"| log (another server, SQLite) | {p(log, 0.5):.2f} | {p(log, 0.99):.2f} |",
    ]


def profile_calls(args: argparse.Namespace, base_src: Path) -> list[str]:
    """`bench/server_profile.py`'s calls per request, on the base tree and on this one."""
    runs = "20" if args.quick else "100"
    found: dict[tuple[str, str], dict[str, str]] = {}
    for spec in ("2.4", "2.3"):
        for name, src in (("before", base_src), ("after", None)):
            env = dict(os.environ)
            if src is not None:
                env["PYTHONPATH"] = str(src)
            argv = [sys.executable, str(HERE / "server_profile.py"), "--runs", runs]
            out = subprocess.run(
                [*argv, "--asgi-spec", spec], env=env, check=True, capture_output=True, text=True
            ).stdout
            rows = [line.strip("|").split("|") for line in out.splitlines() if "|" in line]
            found[spec, name] = {r[0].strip(" *"): r[1].strip(" *") for r in rows[2:]}
    lines = ["| request | ASGI | calls before | calls after |", "|---|---|---:|---:|"]
    for spec in ("2.4", "2.3"):
        for request in found[spec, "after"]:
            before = found[spec, "before"].get(request, "")
            lines.append(f"| {request} | {spec} | {before} | {found[spec, 'after'][request]} |")
    return lines


async def keeping_cost(postgres: str) -> list[str]:
    """Calls and statements of one `/run_lifecycle` run of `steps` on PostgreSQL, with the
    lifecycle frames kept for other replicas and without."""
    from server_profile import call

    from rondo.server import create_app
    from rondo.sessions.sql import SqlSessionService

    keeping = SqlSessionService.run_frames
    app = create_app(STEPS_APPS, db=postgres, loopback_only=True)
    database = type(app.state.rondo.sessions._db)  # counts its writes
    statements = 0
    writes = database.write

    async def counted(self: Any, fn: Any, *, single: bool = False) -> Any:
        nonlocal statements
        statements += 1
        return await writes(self, fn, single=single)

    database.write = counted  # type: ignore[method-assign]
    user = f"bench-{os.getpid()}"

    async def one_run() -> None:
        status, body = await call(app, "POST", f"/apps/steps/users/{user}/sessions", b"{}")
        assert status == 200, body
        run = {
            "appName": "steps",
            "userId": user,
            "sessionId": json.loads(body)["id"],
            "newMessage": {"role": "user", "parts": [{"text": "go"}]},
        }
        status, body = await call(app, "POST", "/run_lifecycle", json.dumps(run).encode())
        assert status == 200, body
        assert b"run_end" in body, body

    lines = [
        "| /run_lifecycle on PostgreSQL | Python calls | write statements |",
        "|---|---:|---:|",
    ]
    try:
        for name, kept in (("frames kept", True), ("no frames kept", False)):
            if not kept:
                SqlSessionService.run_frames = property(lambda self: None)  # type: ignore[assignment]
            for _ in range(5):  # warm up
                await one_run()
            calls: list[int] = []
            counts: list[int] = []
            for _ in range(5):
                statements = 0
                counter = [0]

                def hook(frame: Any, event: str, arg: Any, counter: list[int] = counter) -> None:
                    if event in ("call", "c_call"):
                        counter[0] += 1

                sys.setprofile(hook)
                try:
                    await one_run()
                finally:
                    sys.setprofile(None)
                calls.append(counter[0])
                counts.append(statements)
            lines.append(
                f"| {name} | {statistics.median(calls):,.0f} | {statistics.median(counts):.0f} |"
            )
    finally:
        SqlSessionService.run_frames = keeping  # type: ignore[assignment]
        database.write = writes  # type: ignore[method-assign]
        await app.state.rondo.sessions.close()
    return lines


async def pg_rejoin(args: argparse.Namespace, work: Path) -> list[str]:
    """Rejoin a finished `steps` run after its first frame on the other of two replicas on
    PostgreSQL: request sent → first missed frame read, both formats."""
    one = Replica(STEPS_APPS, args.postgres, work)
    two = Replica(STEPS_APPS, args.postgres, work)
    await one.ready()
    await two.ready()
    times: dict[str, list[float]] = {"adk": [], "lifecycle": []}
    try:
        conn = Connection("127.0.0.1", one.port)
        await conn.open()
        user = f"bench-{os.getpid()}"
        for i in range(args.rejoins):
            for fmt, route in (("adk", "/run_sse"), ("lifecycle", "/run_lifecycle")):
                base = f"/apps/steps/users/{user}/sessions"
                _, body, _ = await conn.request("POST", base, b"{}")
                sid = json.loads(body)["id"]
                run = {
                    "appName": "steps",
                    "userId": user,
                    "sessionId": sid,
                    "newMessage": {"role": "user", "parts": [{"text": f"go {i}"}]},
                }
                _, body, _ = await conn.request("POST", route, json.dumps(run).encode())
                frames = body.decode().split("\n\n")
                fields = dict(line.split(": ", 1) for line in frames[0].split("\n"))
                data = json.loads(fields["data"])
                run_id = data.get("runId") or data["run_id"]
                path = f"{base}/{sid}/runs/{run_id}/stream"
                times[fmt].append((await _first_frame(two.port, path, fields["id"]))[0] * 1000)
        await conn.close()
    finally:
        one.stop()
        two.stop()
    lines = ["| rejoin on the other replica (PostgreSQL) | p50 ms | p99 ms |", "|---|---|---|"]
    for fmt, values in times.items():
        lines.append(f"| {fmt} | {_p(values, 0.5):.2f} | {_p(values, 0.99):.2f} |")
    return lines


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", help="the tree before (default: the merge base with main)")
    parser.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rejoins", type=int, default=200)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("RONDO_TEST_POSTGRES_URL"),
        help="a PostgreSQL URL for the replica parts (default: $RONDO_TEST_POSTGRES_URL)",
    )
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
        base_src = _export_base(args.base, work / "base")
        print("\n".join(profile_calls(args, base_src)), "\n", flush=True)
        print("\n".join(frame_cost(2000)), "\n", flush=True)
        print("\n".join(asyncio.run(rejoin(args, work))), "\n", flush=True)
        if args.postgres:
            print("\n".join(asyncio.run(keeping_cost(args.postgres))), "\n", flush=True)
            print("\n".join(asyncio.run(pg_rejoin(args, work))), "\n", flush=True)
        print("\n".join(asyncio.run(routes(args, work, base_src))), flush=True)


if __name__ == "__main__":
    main()
