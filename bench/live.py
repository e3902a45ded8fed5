"""What a live call costs the framework: rondo's `run_live` beside google-adk's, against the same
fake Gemini Live server (SPEC L1, issue 20 item 6). Results: bench/LIVE.md.

    .venv/bin/python bench/live.py                 # google-adk from RONDO_ADK_PYTHON or bench/.venvs/adk
    .venv/bin/python bench/live.py --calls --write # + Python call counts; write live_results.json

The fake server (its own process, TLS with a throwaway certificate, the BidiGenerateContent
wire protocol) answers a text turn with one text chunk and `turnComplete`, and a "tool" turn
with a `toolCall` and `turnComplete` (as Gemini 2.5 Live), then — once the tool response
arrives — a text chunk and `turnComplete`. Each client runs in a fresh interpreter with
google-genai as its client, warms up, then measures its own process's CPU time
(`time.process_time`) — or, with `--calls`, the Python function calls it makes — over the
turns, driving the call as a client would: the next message is sent once the previous turn's
text and end are yielded. "google-genai alone" drives the SDK's session by hand: the floor both
frameworks stand on, so what is above it is the framework's. CPU times vary with the machine's
phase (2 shared cores); the call counts do not.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "live_results.json"

_SERVER = r"""
import asyncio, json, ssl, sys
from websockets.asyncio.server import serve

async def handler(ws):
    await ws.recv()
    await ws.send(json.dumps({"setupComplete": {}}))
    async for raw in ws:
        msg = json.loads(raw)
        if "toolResponse" in msg or "tool_response" in msg:
            await ws.send(json.dumps({"serverContent": {"modelTurn": {"parts": [{"text": "done"}]}}}))
            await ws.send(json.dumps({"serverContent": {"turnComplete": True}}))
            continue
        content = msg.get("clientContent") or msg.get("client_content")
        if not content or not (content.get("turnComplete") or content.get("turn_complete")):
            continue
        text = content["turns"][-1]["parts"][0]["text"]
        if text == "tool":
            call = {"id": "c", "name": "add", "args": {"a": 1, "b": 2}}
            await ws.send(json.dumps({"toolCall": {"functionCalls": [call]}}))
            # Gemini 2.5 Live ends the turn after a tool call (google-adk waits for it).
            await ws.send(json.dumps({"serverContent": {"turnComplete": True}}))
        else:
            await ws.send(json.dumps({"serverContent": {"modelTurn": {"parts": [{"text": "ok"}]}}}))
            await ws.send(json.dumps({"serverContent": {"turnComplete": True}}))

async def main():
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    async with serve(handler, "127.0.0.1", 0, ssl=context) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()

asyncio.run(main())
"""

_DRIVE = r"""
async def drive(run, send, turns, tools):
    # send(text) queues a turn; run() yields events; returns the clock and event count at the
    # end of the warm-up, of the text turns and of the tool round trips. The clock is CPU time,
    # or with RONDO_BENCH_CALLS=1 the Python function calls made (deterministic; slow).
    import os, sys, time
    clock = time.process_time
    if os.environ.get("RONDO_BENCH_CALLS"):
        calls = [0]
        def count(frame, event, arg):
            if event == "call":
                calls[0] += 1
        sys.setprofile(count)
        clock = lambda: calls[0]
    plan = ["warm"] * 5 + ["tool"] * 3 + ["t"] * turns + ["tool"] * tools
    from contextlib import aclosing
    marks, events, index, answered = {}, 0, 0, False
    send(plan[0])
    async with aclosing(run()) as stream:
      async for event in stream:
        events += 1
        content = getattr(event, "content", None)
        if content is not None and any(getattr(p, "text", None) for p in content.parts or []):
            answered = True
        # A turn ends with the model's text: the end of a tool-call turn does not count.
        if not (getattr(event, "turn_complete", False) and answered):
            continue
        answered = False
        index += 1
        if index == 8:
            marks["start"], marks["events0"] = clock(), events
        if index == 8 + turns:
            marks["text"], marks["events1"] = clock(), events
        if index == len(plan):
            marks["tool"], marks["events2"] = clock(), events
            sys.setprofile(None)
            return marks
        send(plan[index])
"""

_RONDO = (
    r"""
import asyncio, json, sys
sys.path.insert(0, sys.argv[3])
from rondo import Agent, Content, LiveRequestQueue, RunConfig, Runner
from rondo.models.gemini_live import GeminiLiveModel
"""
    + _DRIVE
    + r"""
def add(a: int, b: int) -> int:
    "Add two numbers."
    return a + b

async def main():
    port, turns, tools = sys.argv[1], int(sys.argv[4]), int(sys.argv[5])
    model = GeminiLiveModel("gemini-live-2.5-flash-preview", api_key="k", base_url=f"https://127.0.0.1:{port}")
    runner = Runner(agent=Agent("bot", model=model, tools=[add]))
    queue = LiveRequestQueue()
    config = RunConfig(response_modalities=("TEXT",))
    run = lambda: runner.run_live(user_id="u", session_id="s", live_request_queue=queue, run_config=config)
    marks = await drive(run, lambda t: queue.send_content(Content.user(t)), turns, tools)
    queue.close()
    print(json.dumps(marks))

asyncio.run(main())
"""
)

_ADK = (
    r"""
import asyncio, json, os, sys, logging
logging.disable(logging.WARNING)
from google.adk.agents import Agent
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.run_config import RunConfig
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
"""
    + _DRIVE
    + r"""
def add(a: int, b: int) -> int:
    "Add two numbers."
    return a + b

async def main():
    turns, tools = int(sys.argv[4]), int(sys.argv[5])
    agent = Agent(name="bot", model="gemini-live-2.5-flash-preview", tools=[add])
    runner = Runner(app_name="bench", agent=agent, session_service=InMemorySessionService())
    session = await runner.session_service.create_session(app_name="bench", user_id="u")
    queue = LiveRequestQueue()
    config = RunConfig(response_modalities=["TEXT"])
    run = lambda: runner.run_live(user_id="u", session_id=session.id, live_request_queue=queue, run_config=config)
    send = lambda t: queue.send_content(types.Content(role="user", parts=[types.Part(text=t)]))
    marks = await drive(run, send, turns, tools)
    queue.close()
    print(json.dumps(marks))

asyncio.run(main())
"""
)


# The floor both frameworks stand on: google-genai's live session alone, driven the same way
# (its TLS, websocket and message parsing), with no framework around it.
_SDK = r"""
import asyncio, json, os, sys, time
from google import genai
from google.genai import types

async def main():
    turns, tools = int(sys.argv[4]), int(sys.argv[5])
    clock = time.process_time
    if os.environ.get("RONDO_BENCH_CALLS"):
        calls = [0]
        def count(frame, event, arg):
            if event == "call":
                calls[0] += 1
        sys.setprofile(count)
        clock = lambda: calls[0]
    client = genai.Client(api_key="k")
    add = types.FunctionDeclaration(name="add", description="Add two numbers.", parameters_json_schema={
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})
    config = types.LiveConnectConfig(response_modalities=["TEXT"], tools=[types.Tool(function_declarations=[add])])
    plan = ["warm"] * 5 + ["tool"] * 3 + ["t"] * turns + ["tool"] * tools
    marks, events = {}, 0
    async with client.aio.live.connect(model="gemini-live-2.5-flash-preview", config=config) as session:
        for index, text in enumerate(plan):
            if index == 8:
                marks["start"], marks["events0"] = clock(), events
            if index == 8 + turns:
                marks["text"], marks["events1"] = clock(), events
            turn = types.Content(role="user", parts=[types.Part(text=text)])
            await session.send_client_content(turns=turn, turn_complete=True)
            answered = False
            while not answered:
                async for message in session.receive():
                    events += 1
                    if message.tool_call:
                        call = message.tool_call.function_calls[0]
                        response = types.FunctionResponse(id=call.id, name=call.name, response={"result": 3})
                        await session.send_tool_response(function_responses=[response])
                    if message.text:
                        answered = True
        marks["tool"], marks["events2"] = clock(), events
    sys.setprofile(None)
    print(json.dumps(marks))

asyncio.run(main())
"""


def _certificate(folder: Path) -> tuple[Path, Path]:
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem"),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return folder / "cert.pem", folder / "key.pem"


def _worker(
    python: str, code: str, port: int, cert: Path, turns: int, tools: int, *, calls: bool = False
) -> dict[str, Any]:
    env = {
        **os.environ,
        "RONDO_BENCH_CALLS": "1" if calls else "",
        "SSL_CERT_FILE": str(cert),
        "GOOGLE_API_KEY": "k",
        "GOOGLE_GEMINI_BASE_URL": f"https://127.0.0.1:{port}",
    }
    env.pop("GOOGLE_GENAI_USE_VERTEXAI", None)
    args = [python, "-c", code, str(port), str(cert), str(REPO / "src"), str(turns), str(tools)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{python} failed:\n{done.stderr[-3000:]}")
    marks = json.loads(done.stdout.strip().splitlines()[-1])
    text_cpu, tool_cpu = marks["text"] - marks["start"], marks["tool"] - marks["text"]
    text_events = marks["events1"] - marks["events0"]
    tool_events = marks["events2"] - marks["events1"]
    if calls:
        return {
            "calls_per_event": (text_cpu + tool_cpu) / (text_events + tool_events),
            "calls_per_text_turn": text_cpu / turns,
            "calls_per_tool_round_trip": tool_cpu / tools,
        }
    return {
        "us_per_event": (text_cpu + tool_cpu) / (text_events + tool_events) * 1e6,
        "us_per_text_turn": text_cpu / turns * 1e6,
        "us_per_tool_round_trip": tool_cpu / tools * 1e6,
        "events_per_text_turn": text_events / turns,
        "events_per_tool_turn": tool_events / tools,
    }


def _adk_python() -> str | None:
    found = os.environ.get("RONDO_ADK_PYTHON")
    if found:
        return found
    local = BENCH / ".venvs" / "adk" / "bin" / "python"
    return str(local) if local.exists() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--tools", type=int, default=100)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--no-adk", action="store_true", help="skip google-adk's run_live (rondo's figures only)"
    )
    parser.add_argument(
        "--calls",
        action="store_true",
        help="also count the Python function calls per event and turn (deterministic; slow)",
    )
    parser.add_argument("--write", action="store_true", help=f"write the figures to {RESULTS.name}")
    options = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = _certificate(Path(tmp))
        server = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(cert), str(key)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert server.stdout is not None
            port = int(server.stdout.readline())
            frameworks = [
                ("google-genai alone", sys.executable, _SDK),
                ("rondo", sys.executable, _RONDO),
            ]
            adk = None if options.no_adk else _adk_python()
            if adk is not None:
                frameworks.append(("google-adk", adk, _ADK))
            results: dict[str, dict[str, float]] = {}
            for name, python, code in frameworks:
                args = (python, code, port, cert, options.turns, options.tools)
                results[name] = _worker(*args)
                if options.calls:
                    results[name].update(_worker(*args, calls=True))
        finally:
            server.terminate()
            server.wait()
    if options.write:
        RESULTS.write_text(
            json.dumps(
                {
                    "date": dt.date.today().isoformat(),
                    "turns": options.turns,
                    "tools": options.tools,
                    "cpus": os.cpu_count(),
                    "load_before": load_before,
                    "load_after": os.getloadavg(),
                    "results": results,
                },
                indent=2,
            )
            + "\n"
        )
    _report(results, options)


def _report(results: dict[str, dict[str, float]], options: argparse.Namespace) -> None:
    if options.json:
        print(json.dumps(results, indent=2))
        return
    print(f"live call, {options.turns} text turns + {options.tools} tool round trips "
          f"({dt.date.today().isoformat()}), CPU µs of the client process")  # fmt: skip
    print(
        f"{'framework':<18} {'µs/event':>10} {'µs/text turn':>13} {'µs/tool trip':>13} {'events/turn':>12}"
    )
    for name, row in results.items():
        print(
            f"{name:<18} {row['us_per_event']:>10.0f} {row['us_per_text_turn']:>13.0f} "
            f"{row['us_per_tool_round_trip']:>13.0f} {row['events_per_text_turn']:>12.1f}"
        )
    if options.calls:
        print(
            f"{'framework':<18} {'calls/event':>12} {'calls/text turn':>16} {'calls/tool trip':>16}"
        )
        for name, row in results.items():
            print(
                f"{name:<18} {row['calls_per_event']:>12.0f} {row['calls_per_text_turn']:>16.0f} "
                f"{row['calls_per_tool_round_trip']:>16.0f}"
            )
    sdk = results.get("google-genai alone")
    if options.calls and sdk is not None:
        print("framework only (minus google-genai alone): calls per text turn, per tool trip")
        for name, row in results.items():
            if row is not sdk:
                text = row["calls_per_text_turn"] - sdk["calls_per_text_turn"]
                tool = row["calls_per_tool_round_trip"] - sdk["calls_per_tool_round_trip"]
                print(f"{name:<18} {text:>8.0f} {tool:>8.0f}")
    if "google-adk" in results:
        ours, theirs = results["rondo"], results["google-adk"]
        keys = ["us_per_event", "us_per_text_turn", "us_per_tool_round_trip"]
        if options.calls:
            keys += ["calls_per_event", "calls_per_text_turn", "calls_per_tool_round_trip"]
        for key in keys:
            print(f"google-adk / rondo, {key}: {theirs[key] / ours[key]:.2f}x")
    else:
        print("google-adk: not run (set RONDO_ADK_PYTHON to its venv's python)")


if __name__ == "__main__":
    main()
