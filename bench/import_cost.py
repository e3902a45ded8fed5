"""Import cost of `from rondo import Agent, Runner` against `from pydantic import BaseModel`.

    python bench/import_cost.py            # 21 interleaved rounds; prints the table
    python bench/import_cost.py --write    # and records it in bench/IMPORT.md

Each round starts three fresh interpreters in turn — `python -c pass`, the pydantic import and
the rondo import — so a machine whose speed drifts affects all three alike. The figure is the
median wall time over `python -c pass`; the target (issue 8) is rondo ≤ 1.25 × pydantic.
`python -X importtime` shows where the rest goes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SUBJECTS = {
    "python -c pass": "pass",
    "from pydantic import BaseModel": "from pydantic import BaseModel",
    "from rondo import Agent, Runner": "from rondo import Agent, Runner",
}


def _wall(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def measure(rounds: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in SUBJECTS}
    for name, code in SUBJECTS.items():  # warm the OS caches once
        _wall(code)
        del name
    for _ in range(rounds):
        for name, code in SUBJECTS.items():
            samples[name].append(_wall(code))
    return {name: statistics.median(values) * 1000.0 for name, values in samples.items()}


def report(medians: dict[str, float], rounds: int) -> str:
    base = medians["python -c pass"]
    pydantic = medians["from pydantic import BaseModel"] - base
    rondo = medians["from rondo import Agent, Runner"] - base
    ratio = rondo / pydantic if pydantic > 0 else float("nan")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        "# Import cost",
        "",
        f"{dt.date.today().isoformat()} · Python {platform.python_version()} · "
        f"{os.cpu_count()} CPUs · load {load:.1f} · {rounds} interleaved rounds, medians",
        "",
        "| import | wall ms | over `python -c pass` |",
        "| --- | ---: | ---: |",
    ]
    for name, value in medians.items():
        lines.append(f"| `{name}` | {value:.0f} | {value - base:.0f} |")
    lines += [
        "",
        f"rondo / pydantic (over `python -c pass`): **{ratio:.2f}** (target ≤ 1.25).",
        "",
        "How: the agent and runner classes import no pydantic model, no asyncio and no store;",
        "records, contexts, models, tools and sessions load when an agent is built or first",
        "runs (`python -X importtime -c 'from rondo import Agent, Runner'` shows the rest).",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--write", action="store_true", help="record in bench/IMPORT.md")
    args = parser.parse_args()
    text = report(measure(args.rounds), args.rounds)
    print(text)
    if args.write:
        (BENCH / "IMPORT.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
