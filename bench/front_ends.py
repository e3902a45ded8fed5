"""The front-end protocol routes against `/run_lifecycle`, on one rondo server (SPEC W8).

    .venv/bin/python bench/front_ends.py             # 1 and 4 clients, 3 rounds
    .venv/bin/python bench/front_ends.py --quick     # short runs while developing

One `rondo api-server --db memory` process serves bench/server.py's deterministic agent
(`server_apps/rondo/chat`: a tool call, then an answer streamed). Each client repeats one run
on a new session, streaming on: `/run_lifecycle` (after creating the session, which it needs),
`/ag-ui/chat`, `/ai-sdk/chat` and `/v1/chat/completions` (each creates its session itself).
The routes take turns point by point (the order reversed every round) and the figure is the
median over rounds of each route's runs/s divided by `/run_lifecycle`'s in the same round.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server import Connection, Server

ROUTES = ("run_lifecycle", "ag_ui", "ai_sdk", "openai")


def _message(n: int) -> str:
    return f"note {n}"


async def _one_run(conn: Connection, route: str, user: str, n: int) -> bool:
    sid = uuid.uuid4().hex
    if route == "run_lifecycle":
        status, _, _ = await conn.request("POST", f"/apps/chat/users/{user}/sessions/{sid}", b"{}")
        if status != 200:
            return False
        body: dict[str, Any] = {
            "appName": "chat",
            "userId": user,
            "sessionId": sid,
            "newMessage": {"role": "user", "parts": [{"text": _message(n)}]},
        }
        path = "/run_lifecycle"
    elif route == "ag_ui":
        message = {"id": "m", "role": "user", "content": _message(n)}
        body = {"threadId": sid, "runId": "r", "messages": [message]}
        path = "/ag-ui/chat"
    elif route == "ai_sdk":
        message = {"id": "m", "role": "user", "parts": [{"type": "text", "text": _message(n)}]}
        body = {"id": sid, "messages": [message]}
        path = "/ai-sdk/chat"
    else:
        message = {"role": "user", "content": _message(n)}
        body = {"model": "chat", "messages": [message], "stream": True, "user": sid}
        path = "/v1/chat/completions"
    status, answer, _ = await conn.request("POST", path, json.dumps(body).encode())
    return status == 200 and b"noted" in answer


async def _client(port: int, route: str, index: int, stop_at: float) -> tuple[int, int]:
    conn = Connection("127.0.0.1", port)
    await conn.open()
    runs = errors = 0
    try:
        while time.perf_counter() < stop_at:
            if await _one_run(conn, route, f"user{index}", runs + errors):
                runs += 1
            else:
                errors += 1
    finally:
        await conn.close()
    return runs, errors


async def _point(port: int, route: str, clients: int, seconds: float, warmup: float) -> float:
    await asyncio.gather(
        *(_client(port, route, i, time.perf_counter() + warmup) for i in range(clients))
    )
    counts = await asyncio.gather(
        *(_client(port, route, i, time.perf_counter() + seconds) for i in range(clients))
    )
    errors = sum(e for _, e in counts)
    if errors:
        raise RuntimeError(f"{route}: {errors} runs failed")
    return sum(r for r, _ in counts) / seconds


async def bench(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as workdir:
        server = Server("rondo", args.pin, Path(workdir))
        try:
            await server.ready()
            for clients in args.clients:
                for turn in range(args.rounds):
                    order = ROUTES if turn % 2 == 0 else ROUTES[::-1]
                    for route in order:
                        rate = await _point(server.port, route, clients, args.seconds, args.warmup)
                        rows.append(
                            {"route": route, "clients": clients, "round": turn, "runs_per_s": rate}
                        )
                        print(f"| {route} | {clients} | {turn} | {rate:.1f} |", flush=True)
        finally:
            server.stop()
    return rows


def ratios(rows: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for clients in sorted({r["clients"] for r in rows}):
        base = {
            r["round"]: r["runs_per_s"]
            for r in rows
            if r["clients"] == clients and r["route"] == "run_lifecycle"
        }
        for route in ROUTES[1:]:
            per_round = [
                r["runs_per_s"] / base[r["round"]]
                for r in rows
                if r["clients"] == clients and r["route"] == route
            ]
            lines.append(
                f"{clients} client(s): {route} / run_lifecycle runs/s = "
                f"{statistics.median(per_round):.3f}"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="3 s per point, one round")
    parser.add_argument("--no-pin", dest="pin", action="store_false")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.warmup, args.rounds = 3.0, 1.0, 1
    print("| route | clients | round | runs/s |\n| --- | --- | --- | --- |")
    rows = asyncio.run(bench(args))
    for line in ratios(rows):
        print(line)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
