"""Issue 19.2: seams are typed — `Any` per 1,000 lines of `src/` stays at most half of the 36
the issue found (`grep -ow Any src/**/*.py` over the lines of those files).

Where `Any` remains it is on purpose: a user's state values (ADK's contract), record maps
built from any typed dict, rows read back from a database driver, SDK objects loaded lazily.
"""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).parents[2] / "src"
LIMIT = 18.0
_ANY = re.compile(r"\bAny\b")


def any_per_thousand_lines(src: Path = SRC) -> float:
    words = lines = 0
    for path in src.rglob("*.py"):
        text = path.read_text()
        words += len(_ANY.findall(text))
        lines += text.count("\n")
    return words / lines * 1000


def test_19_the_ratio_counts_like_grep(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from typing import Any\nx: Any = 1\n# AnyOther, Anything\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    assert any_per_thousand_lines(tmp_path) == 2 / 4 * 1000


def test_19_any_per_thousand_lines_is_at_most_half_of_36() -> None:
    ratio = any_per_thousand_lines()
    assert ratio <= LIMIT, (
        f"{ratio:.1f} Any per 1,000 lines of src/ (limit {LIMIT}): type the new seam — "
        "object with narrowing, a Protocol, a TypedDict, the SDK's own types"
    )
