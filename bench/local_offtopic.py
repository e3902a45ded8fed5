"""Ten messages that need no tool, through the example weather agent on the local model.

    .venv/bin/python bench/local_offtopic.py         # RONDO_MODEL overrides local:smollm2

A message scores when the agent made no tool call and answered with a short text (under 300
characters). Written after the prompt's demos were chosen, never used for tuning. Results:
bench/LOCAL_WEATHER.md; the weather questions are bench/local_weather.py.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.local_weather import ask
from examples.weather.agent import root_agent

from rondo import Runner

MESSAGES: list[str] = [
    "Hello",
    "What is 2+2?",
    "Who are you?",
    "Thanks, bye!",
    "Tell me a joke.",
    "What is the capital of Japan?",
    "How do I boil an egg?",
    "Good evening!",
    "Can you recommend a book?",
    "What does CPU stand for?",
]

SHORT = 300


async def main() -> int:
    runner = Runner(agent=root_agent, app_name="bench_local_offtopic")
    print(f"model: {root_agent.canonical_model.name}")
    good = 0
    total = 0.0
    for index, message in enumerate(MESSAGES):
        outcome = await ask(runner, message, f"m{index}")
        text = outcome["text"].strip()
        ok = not outcome["calls"] and 0 < len(text) < SHORT
        good += ok
        total += outcome["seconds"]
        calls = ", ".join(f"{c['name']}({c['args']})" for c in outcome["calls"]) or "no call"
        print(
            f"{'ok ' if ok else 'BAD'} {message!r:32} {calls:30} {outcome['seconds']:5.1f}s  {text!r}"
        )
    n = len(MESSAGES)
    print(
        f"\nanswered without a tool call: {good}/{n}   ({total:.1f}s, {total / n:.1f}s per message)"
    )
    return 0 if good >= 8 else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
