"""Where a run's CPU goes in the live server: `rondo api-server` as a user starts it, under load.

    .venv/bin/python bench/server_live_profile.py              # CPU per run, then calls per run
    .venv/bin/python bench/server_live_profile.py --mode cpu   # CPU per run only (pair with it)
    .venv/bin/python bench/server_live_profile.py --mode cprofile   # CPU share per package
    PYTHONPATH=/other/tree/src .venv/bin/python bench/server_live_profile.py --mode cpu

`bench/server_profile.py` counts the app alone, in-process; this counts what the server
process does per run with uvicorn, uvloop, httptools and the access log as deployed: the
server (`rondo api-server --db memory`, pinned to CPU 0) starts under a profile switched on and
off by signals, N clients (bench/server.py's, on CPU 1) warm it up, then make `--runs` runs
each while it counts. `calls`: every Python and C call of every thread (`sys.setprofile`,
deterministic: it moves only when the code does), per run, by package and by function.
`cprofile`: the CPU share of each package (a C function counts for its caller's). `cpu`: no
profile; the server's CPU time per run from /proc (user + system), as bench/server.py has it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import server as bench_server  # noqa: E402  (bench/server.py: its client and its server process)

# Runs in the server process before rondo's CLI: the profile, switched by SIGUSR1 / SIGUSR2.
BOOT = r"""
import collections, cProfile, json, os, signal, sys, threading, time
mode, out = os.environ["PROFILE_MODE"], os.environ["PROFILE_OUT"]
on, began = [False], [0.0]
calls, funcs = collections.Counter(), collections.Counter()
def hook(frame, event, arg):
    if on[0]:
        if event == "call":
            code = frame.f_code
            calls[code.co_filename] += 1
            funcs[f"{code.co_filename}:{code.co_name}:{code.co_firstlineno}"] += 1
        elif event == "c_call":
            calls["<C>"] += 1
            funcs["C:" + str(getattr(arg, "__qualname__", arg))] += 1
profile = cProfile.Profile() if mode == "cprofile" else None
def start(*_):
    began[0] = time.process_time()
    if profile: profile.enable()
    on[0] = True
def stop(*_):
    cpu = time.process_time() - began[0]
    on[0] = False
    if profile:
        profile.disable()
        profile.dump_stats(out + ".prof")
    with open(out + ".tmp", "w") as f:
        json.dump({"cpu": cpu, "calls": calls, "funcs": funcs}, f)
    os.replace(out + ".tmp", out)
signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, stop)
if mode == "calls":
    sys.setprofile(hook)
    threading.setprofile(hook)
from rondo.cli import main
sys.argv = ["rondo", *sys.argv[1:]]
sys.exit(main())
"""


def package(filename: str) -> str:
    """A code file's package, for the tables: `uvicorn`, `rondo/server`, `stdlib:asyncio`…"""
    if "site-packages/" in filename:
        return filename.split("site-packages/")[1].split("/")[0]
    if "/rondo/" in filename and "/bench/" not in filename:
        rest = filename.rsplit("/rondo/", 1)[1]
        return "rondo/" + rest.split("/")[0].removesuffix(".py")
    if "/lib/python3" in filename:
        rest = filename.split("/lib/python3", 1)[1].split("/", 1)[1]
        return "stdlib:" + rest.split("/")[0].removesuffix(".py")
    return filename


async def _client(port: int, index: int, runs: int) -> None:
    conn = bench_server.Connection("127.0.0.1", port)
    await conn.open()
    user = f"user{index}"
    base = f"/apps/chat/users/{user}/sessions"
    try:
        for n in range(runs):
            status, body, _ = await conn.request("POST", base, b"{}")
            assert status == 200, body
            sid = json.loads(body)["id"]
            message = {"role": "user", "parts": [{"text": f"note {n}"}]}
            run = {"appName": "chat", "userId": user, "sessionId": sid, "newMessage": message}
            status, body, _ = await conn.request("POST", "/run_sse", json.dumps(run).encode())
            assert status == 200, body
            assert body.count(b"data: ") == 3, body
            status, body, _ = await conn.request("GET", f"{base}/{sid}")
            assert status == 200, body
            assert len(json.loads(body)["events"]) == 4, body
    finally:
        await conn.close()


async def measure(mode: str, runs: int, clients: int, workdir: Path) -> dict[str, Any]:
    """One server, warmed up, then `runs` runs per client while the profile is on."""
    out = workdir / f"profile-{mode}-{os.getpid()}.json"
    out.unlink(missing_ok=True)
    port = bench_server._free_port()  # pyright: ignore[reportPrivateUsage]
    argv = [sys.executable, "-c", BOOT, "api-server", str(bench_server.RONDO_APPS)]
    argv += ["--port", str(port), "--db", "memory"]
    if (os.cpu_count() or 1) >= 2:
        argv = ["taskset", "-c", "0", *argv]
        os.sched_setaffinity(0, {1})
    process = _start(argv, mode, out, workdir)
    server = bench_server.Server.__new__(bench_server.Server)
    server.port, server.process = port, process
    try:
        await server.ready()
        await asyncio.gather(*(_client(port, i, max(runs // 2, 20)) for i in range(clients)))
        process.send_signal(signal.SIGUSR1)
        await asyncio.sleep(0.2)
        cpu_before = server.cpu()
        started = time.perf_counter()
        await asyncio.gather(*(_client(port, i, runs) for i in range(clients)))
        wall = time.perf_counter() - started
        cpu = server.cpu() - cpu_before
        process.send_signal(signal.SIGUSR2)
        data = _wait_for(out)
    finally:
        server.stop()
    total = runs * clients
    data.update(runs=total, runs_per_s=total / wall, cpu_ms_per_run=cpu * 1000 / total)
    if mode == "cprofile":
        data["shares"] = _shares(pstats.Stats(str(out) + ".prof"))
    return data


def _start(argv: list[str], mode: str, out: Path, workdir: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PROFILE_MODE": mode, "PROFILE_OUT": str(out)}
    return subprocess.Popen(
        argv, env=env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _wait_for(out: Path) -> dict[str, Any]:
    """The profile the server writes on SIGUSR2 (it is idle by then: waiting blocks nothing)."""
    deadline = time.monotonic() + 30
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return json.loads(out.read_text())


def _shares(stats: pstats.Stats) -> Counter[str]:
    """Own CPU time per package; a C function's time goes to its callers' packages."""
    shares: Counter[str] = Counter()
    table: dict[Any, Any] = stats.stats  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
    for (filename, _, _), (_, _, own, _, callers) in table.items():
        if filename != "~":
            shares[package(filename)] += own
            continue
        for (caller, _, _), figures in callers.items():
            shares[package(caller)] += figures[2]
    return shares


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--mode", choices=["all", "cpu", "calls", "cprofile"], default="all")
    parser.add_argument("--runs", type=int, default=100, help="runs per client")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--top", type=int, default=40, help="functions listed (calls)")
    args = parser.parse_args()
    modes = ["cpu", "calls"] if args.mode == "all" else [args.mode]
    print(f"load {os.getloadavg()[0]:.1f}; {args.clients} clients, {args.runs} runs each")
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            data = asyncio.run(measure(mode, args.runs, args.clients, Path(tmp)))
            runs = data["runs"]
            if mode == "cpu":
                print(
                    f"CPU per run {data['cpu_ms_per_run']:.3f} ms ({data['runs_per_s']:.0f} runs/s)"
                )
            elif mode == "calls":
                by_package: Counter[str] = Counter()
                for filename, count in data["calls"].items():
                    by_package[package(filename) if filename != "<C>" else "<C>"] += count
                print(f"calls per run {sum(by_package.values()) / runs:,.1f}")
                print("| package | calls per run |\n|---|---:|")
                for name, count in by_package.most_common(25):
                    print(f"| {name} | {count / runs:.1f} |")
                print("| function | calls per run |\n|---|---:|")
                for name, count in Counter(data["funcs"]).most_common(args.top):
                    print(f"| {name.rsplit('/', 2)[-1]} | {count / runs:.2f} |")
            else:
                shares: Counter[str] = data["shares"]
                total = sum(shares.values())
                print("| package | share of profiled CPU |\n|---|---:|")
                for name, own in shares.most_common(25):
                    print(f"| {name} | {own / total * 100:.1f} % |")
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
