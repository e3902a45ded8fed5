"""Issue 24 item 4, rondo's web UI: the Evals tab adds the open session to an eval set, runs the
set, and shows a results table (case, metric, score, threshold, pass/fail, tokens, cost) with a
failing case's expected-vs-actual diff."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._require import require_module
from tests.browser.conftest import AGENTS_DIR, WebServer, _start, _stop  # pyright: ignore[reportPrivateUsage]

sync_api = require_module("playwright.sync_api", what="BROWSER", install="pip install playwright")
require_module("rouge_score", what="EVAL", install="pip install 'rondo-agents[eval]'")
expect = sync_api.expect
expect.set_options(timeout=20_000)


@pytest.fixture
def server(browser: Any, tmp_path: Path) -> Iterator[tuple[WebServer, Path]]:
    agents = tmp_path / "agents"  # the eval sets are written beside the app: a copy of it
    shutil.copytree(AGENTS_DIR / "assistant", agents / "assistant")
    started = _start(tmp_path, agents_dir=agents)
    try:
        yield started, agents
    finally:
        _stop(started)


def test_24_add_the_session_run_and_see_results_with_a_diff(
    page: Any, server: tuple[WebServer, Path]
) -> None:
    web, agents = server
    page.goto(web.url + "/")
    expect(page).to_have_url(re.compile(r"#/apps/assistant$"))
    box = page.get_by_role("textbox", name="Message")
    box.fill("weather in Oslo")
    box.press("Enter")
    # The whole answer first: a session added while its run still streams has no final
    # response yet, and the run of its case would fail on response_match_score.
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("It is 18°C and sunny in Oslo.")
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()
    expect(page).to_have_url(re.compile(r"/sessions/"))

    page.get_by_role("tab", name="Evals").click()
    page.get_by_label("Eval set", exact=True).fill("smoke")
    page.get_by_label("Case id", exact=True).fill("oslo")
    page.get_by_role("button", name="Add session").click()
    expect(page.locator(".eval-note")).to_contain_text("Added this session to smoke as oslo")
    stored = json.loads((agents / "assistant" / "smoke.evalset.json").read_text())
    assert [c["eval_id"] for c in stored["eval_cases"]] == ["oslo"]

    page.get_by_role("button", name="Run", exact=True).click()
    rows = page.locator(".eval-results tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator('tr[data-metric="tool_trajectory_avg_score"] .eval-verdict')).to_have_text(
        "PASS"
    )
    expect(page.locator(".eval-summary")).to_contain_text("1 of 1 case passed")

    # Change what the case expects: the rerun fails and shows the diff.
    stored["eval_cases"][0]["conversation"][0]["final_response"] = {
        "role": "model",
        "parts": [{"text": "It is snowing on the moon."}],
    }
    (agents / "assistant" / "smoke.evalset.json").write_text(json.dumps(stored))
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator('tr[data-metric="response_match_score"] .eval-verdict')).to_have_text(
        "FAIL"
    )
    failing = page.locator('[data-failing="oslo"] .eval-diff')
    expect(failing).to_have_count(1)
    expect(failing.locator(".eval-expected").first).to_have_text("It is snowing on the moon.")
    expect(failing.locator(".eval-actual").first).not_to_be_empty()
