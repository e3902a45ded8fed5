"""Issue 25 item 2 (web UI): each run's footer shows its tokens, cached ones included, and its
price — dollars for a priced model, "unpriced" for one no price source knows (never "$0"),
"free (local)" for a model that runs on this machine. A real `rondo web`, headless Chromium.

The apps (`cost_agents/`) make one tool round and answer; every model call reports 12,000
prompt tokens of which 10,000 were read from the cache and 1,500 written to it, and 300 output
tokens. The dollars the footer shows are what genai-prices says for Claude Sonnet 4.5.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._require import require_module
from tests.browser.conftest import WebServer, _start, _stop  # pyright: ignore[reportPrivateUsage]
from tests.browser.test_w4_web_ui import send, wait_idle

sync_api = require_module("playwright.sync_api", what="BROWSER", install="pip install playwright")
genai_prices = require_module("genai_prices", what="BROWSER", install="pip install genai-prices")
expect = sync_api.expect
expect.set_options(timeout=30_000)

AGENTS = Path(__file__).parent / "cost_agents"
FOOTER_TOKENS = "24,600 tokens (20,000 cached, 3,000 written)"  # two calls' worth


@pytest.fixture(scope="module")
def cost_web(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    server = _start(tmp_path_factory.mktemp("cost"), agents_dir=AGENTS)
    try:
        yield server
    finally:
        _stop(server)


def _footer_after_a_run(page: Any, web: WebServer, app: str) -> Any:
    page.goto(f"{web.url}/#/apps/{app}")
    expect(page).to_have_url(re.compile(rf"#/apps/{app}$"))
    send(page, "weather in Oslo?")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("It is sunny.")
    wait_idle(page)
    footer = page.locator(".chat-list .run-footer")
    expect(footer).to_have_count(1)
    return footer


def _sonnet_dollars() -> str:
    one = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=12_000,
            output_tokens=300,
            cache_read_tokens=10_000,
            cache_write_tokens=1_500,
        ),
        model_ref="claude-sonnet-4-5",
        provider_id="anthropic",
    )
    return f"${2 * float(one.total_price):.4f}"


def test_25_3_a_priced_run_shows_tokens_cached_and_dollars(page: Any, cost_web: WebServer) -> None:
    footer = _footer_after_a_run(page, cost_web, "priced")
    expect(footer.locator(".run-tokens")).to_have_text(FOOTER_TOKENS)
    cost = footer.locator(".run-cost")
    expect(cost).to_have_attribute("data-cost", "priced")
    expect(cost).to_have_text(_sonnet_dollars())
    expect(footer).to_contain_text("2 model calls")


def test_25_3_an_unknown_model_is_unpriced_never_zero(page: Any, cost_web: WebServer) -> None:
    footer = _footer_after_a_run(page, cost_web, "mystery")
    expect(footer.locator(".run-tokens")).to_have_text(FOOTER_TOKENS)
    cost = footer.locator(".run-cost")
    expect(cost).to_have_attribute("data-cost", "unpriced")
    expect(cost).to_have_text("unpriced")
    expect(footer).not_to_contain_text("$")


def test_25_3_a_local_model_is_free_local(page: Any, cost_web: WebServer) -> None:
    footer = _footer_after_a_run(page, cost_web, "local")
    cost = footer.locator(".run-cost")
    expect(cost).to_have_attribute("data-cost", "free")
    expect(cost).to_have_text("free (local)")
    expect(footer).not_to_contain_text("$")


def test_25_3_the_price_survives_a_reload(page: Any, cost_web: WebServer) -> None:
    # A reload rebuilds the run from its stored records; the price comes from the usage route.
    for app, kind, text in (
        ("priced", "priced", _sonnet_dollars()),
        ("mystery", "unpriced", "unpriced"),
        ("local", "free", "free (local)"),
    ):
        _footer_after_a_run(page, cost_web, app)
        page.reload()
        footer = page.locator(".chat-list .run-footer")
        expect(footer).to_have_count(1)
        expect(footer.locator(".run-tokens")).to_contain_text("tokens")
        cost = footer.locator(".run-cost")
        expect(cost).to_have_attribute("data-cost", kind)
        expect(cost).to_have_text(text)
