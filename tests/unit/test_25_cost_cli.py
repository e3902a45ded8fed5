"""Issue 25 item 2: the CLI's run summary shows the run's price, or "unpriced" — never $0."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from rondo.cli.render import LiveRenderer, cost_label
from rondo.lifecycle import RunEnd, RunMetrics


def _summary(metrics: RunMetrics) -> str:
    out = io.StringIO()
    renderer = LiveRenderer(Console(file=out, force_terminal=False, width=200), "agent")
    renderer.show(RunEnd(run_id="r1", metrics=metrics))
    renderer.close()
    return out.getvalue()


def test_25_cli_summary_shows_priced_cost() -> None:
    m = RunMetrics(
        model_calls=2, input_tokens=100, output_tokens=20, cached_tokens=40, cost_usd=0.00125
    )
    text = _summary(m)
    assert "$0.0013" in text
    assert "40 cached" in text
    assert "unpriced" not in text


def test_25_cli_summary_says_unpriced_never_zero() -> None:
    m = RunMetrics(model_calls=3, input_tokens=10, output_tokens=5, cost_usd=None, unpriced_calls=2)
    text = _summary(m)
    assert "unpriced (2 calls)" in text
    assert "$0" not in text


def test_25_cost_label_zero_priced_is_shown_as_dollars() -> None:
    # A genuinely free, priced run (e.g. a local model with a $0 price) is a price, not "unpriced".
    assert cost_label(RunMetrics(model_calls=1, cost_usd=0.0)) == "$0.0000"
    assert (
        cost_label(RunMetrics(model_calls=1, cost_usd=None, unpriced_calls=1))
        == "unpriced (1 call)"
    )


def test_25_cost_label_local_runs_say_free_not_zero_dollars() -> None:
    local = RunMetrics(model_calls=2, cost_usd=0.0, free_calls=2)
    assert cost_label(local) == "free (local)"
    mixed = RunMetrics(model_calls=2, cost_usd=0.0012, free_calls=1)
    assert cost_label(mixed) == "$0.0012"


def test_25_server_startup_loads_the_price_table_not_the_first_request(tmp_path: Path) -> None:
    import sys

    pytest.importorskip("genai_prices", reason="genai-prices is not installed")
    from fastapi.testclient import TestClient

    from rondo.models import pricing
    from rondo.server.app import create_app

    pricing._calculator.cache_clear()  # pyright: ignore[reportPrivateUsage]
    sys.modules.pop("genai_prices", None)
    app = create_app(tmp_path)
    assert "genai_prices" not in sys.modules
    with TestClient(app):
        assert "genai_prices" in sys.modules
