"""Ten weather questions through the example weather agent on the local model.

    .venv/bin/python bench/local_weather.py              # RONDO_MODEL overrides local:smollm2
    .venv/bin/python bench/local_weather.py --held-out   # ten more, never used for tuning

A question scores when the agent called `get_weather` with the city the question names and its
final answer contains the temperature the tool reported. Results: bench/LOCAL_WEATHER.md.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.weather.agent import root_agent

from rondo import Runner

QUESTIONS: list[tuple[str, str]] = [
    ("What's the weather in Paris?", "Paris"),
    ("How hot is it in Tokyo right now?", "Tokyo"),
    ("Is it raining in London?", "London"),
    ("weather berlin", "Berlin"),
    ("Tell me the temperature in New York.", "New York"),
    ("Do I need a jacket in Oslo today?", "Oslo"),
    ("What's it like outside in Madrid?", "Madrid"),
    ("Current conditions for Sydney, please.", "Sydney"),
    ("How's the weather in Cairo?", "Cairo"),
    ("Should I bring an umbrella in Seattle?", "Seattle"),
]

# Phrasings written after the prompt and demo were chosen: a check that they were not fitted to
# the ten questions above.
HELD_OUT: list[tuple[str, str]] = [
    ("Temperature in Rome?", "Rome"),
    ("Give me the forecast for Buenos Aires.", "Buenos Aires"),
    ("Is it cold in Moscow?", "Moscow"),
    ("I'm flying to Nairobi tomorrow, how's the weather there?", "Nairobi"),
    ("hows the weather in mumbai", "Mumbai"),
    ("What is the weather like in San Francisco today?", "San Francisco"),
    ("Will it be sunny in Athens?", "Athens"),
    ("Weather report for Toronto.", "Toronto"),
    ("Tell me about the weather in Reykjavik", "Reykjavik"),
    ("How warm is it in Bangkok?", "Bangkok"),
]


def _temperature(report: str) -> str | None:
    found = re.search(r"(-?\d+)°C", report)
    return found.group(1) if found else None


async def ask(runner: Runner, question: str, session_id: str) -> dict[str, Any]:
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    text = ""
    started = time.perf_counter()
    async for event in runner.run_async(
        user_id="bench", session_id=session_id, new_message=question
    ):
        for call in event.get_function_calls():
            calls.append({"name": call.name, "args": call.args})
        for response in event.get_function_responses():
            results.append(response.response)
        if event.is_final_response() and event.text:
            text = event.text
    return {
        "calls": calls,
        "results": results,
        "text": text,
        "seconds": time.perf_counter() - started,
    }


def score(outcome: dict[str, Any], city: str) -> tuple[bool, bool]:
    call_ok = any(
        c["name"] == "get_weather"
        and str(c["args"].get("city", "")).strip().lower() == city.lower()
        for c in outcome["calls"]
    )
    temperatures = [_temperature(str(r.get("report", ""))) for r in outcome["results"]]
    answer_ok = any(
        t is not None and re.search(rf"(?<![\d-]){re.escape(t)}(?!\d)", outcome["text"])
        for t in temperatures
    )
    return call_ok, answer_ok


async def main(questions: list[tuple[str, str]]) -> int:
    runner = Runner(agent=root_agent, app_name="bench_local_weather")
    print(f"model: {root_agent.canonical_model.name}")
    calls_ok = answers_ok = both_ok = 0
    total = 0.0
    for index, (question, city) in enumerate(questions):
        outcome = await ask(runner, question, f"q{index}")
        call_ok, answer_ok = score(outcome, city)
        calls_ok += call_ok
        answers_ok += answer_ok
        both_ok += call_ok and answer_ok
        total += outcome["seconds"]
        args = ", ".join(str(c["args"]) for c in outcome["calls"]) or "no call"
        mark = "ok " if call_ok and answer_ok else "BAD"
        print(f"{mark} {question!r:45} {args:28} {outcome['seconds']:5.1f}s  {outcome['text']!r}")
    n = len(questions)
    print(
        f"\ncorrect tool call: {calls_ok}/{n}   answer with the tool's temperature: "
        f"{answers_ok}/{n}   both: {both_ok}/{n}   ({total:.1f}s, {total / n:.1f}s per question)"
    )
    return 0 if both_ok == n else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(HELD_OUT if "--held-out" in sys.argv else QUESTIONS)))
