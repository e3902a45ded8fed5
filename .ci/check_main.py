"""Checks the JSON lines of the README's first command (`./dev run examples/weather ... --jsonl`).

    ./dev run examples/weather "What's the weather in Paris?" --jsonl > out.jsonl
    .venv/bin/python .ci/check_main.py out.jsonl      # or read from stdin

Passes when every line is a lifecycle event, the run called get_weather without error, and the
final answer (run_end) contains the temperature the tool reported.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from rondo.lifecycle import parse_lifecycle_event


def check(lines: list[str]) -> str:
    """A one-line summary of a good run; raises ValueError saying what is wrong otherwise."""
    events: list[Any] = []
    for number, line in enumerate(lines, 1):
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {number} is not JSON ({exc}): {line[:200]!r}") from None
        events.append(parse_lifecycle_event(data))
    if not events:
        raise ValueError("no output")
    if events[0].type != "run_start" or events[-1].type != "run_end":
        raise ValueError(f"the stream runs from {events[0].type} to {events[-1].type}")
    calls = [e for e in events if e.type == "tool_call_end" and e.tool_name == "get_weather"]
    if not calls:
        raise ValueError("get_weather was never called")
    good = [c for c in calls if c.error is None and c.result is not None]
    if not good:
        raise ValueError(f"get_weather failed: {calls[0].error}")
    report = str(good[0].result.get("report", ""))
    found = re.search(r"(-?\d+)°C", report)
    if found is None:
        raise ValueError(f"get_weather reported no temperature: {good[0].result}")
    end = events[-1]
    if end.is_abnormal:
        raise ValueError("the run ended on an incomplete response")
    if not re.search(rf"(?<![\d-]){found.group(1)}(?!\d)", end.text):
        raise ValueError(f"the answer {end.text!r} does not contain the tool's {found.group(0)}")
    return (
        f"get_weather({json.dumps(good[0].args, ensure_ascii=False)}) → {report!r}; "
        f"answer: {end.text!r}"
    )


def main() -> int:
    source = open(sys.argv[1], encoding="utf-8") if len(sys.argv) > 1 else sys.stdin
    with source:
        lines = [line for line in source.read().splitlines() if line.strip()]
    try:
        summary = check(lines)
    except ValueError as exc:
        print(f"main command check FAILED: {exc}", file=sys.stderr)
        return 1
    print(f"main command check passed: {summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
