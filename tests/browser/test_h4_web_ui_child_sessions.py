"""SPEC H4 (issue 18 item 2) in the web UI: the tool card of a call that ran an agent in a
session of its own (an `AgentTool`) links to that child session, which opens with the
sub-agent's own conversation — a real `rondo web`, a real headless Chromium."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._require import require_module
from tests.browser.conftest import WebServer, _start, _stop

sync_api = require_module("playwright.sync_api", what="BROWSER", install="pip install playwright")
expect = sync_api.expect
expect.set_options(timeout=20_000)

AGENT = '''
from collections.abc import AsyncIterator
from typing import Any

from rondo import Agent, AgentTool
from rondo.models.base import ModelResponse
from rondo.types import Content, FunctionCall, Part


class Boss:
    """Asks its worker (an AgentTool) once, then reports the worker's answer."""

    name = "boss-rules"

    async def generate(self, request: Any, *, stream: bool = False) -> AsyncIterator[ModelResponse]:
        last = request.contents[-1]
        answers = [p.function_response for p in last.parts if p.function_response is not None]
        if answers:
            yield ModelResponse(content=Content.model("boss: " + str(answers[0].response["result"])))
            return
        call = FunctionCall(name="worker", args={"request": "say hi"}, id="call-w1")
        yield ModelResponse(content=Content(role="model", parts=[Part(function_call=call)]))


class Worker:
    name = "worker-rules"

    async def generate(self, request: Any, *, stream: bool = False) -> AsyncIterator[ModelResponse]:
        yield ModelResponse(content=Content.model("worker: hi from the worker"))


worker = Agent(name="worker", model=Worker(), description="Says hi.")
root_agent = Agent(name="boss", model=Boss(), tools=[AgentTool(worker)])
'''


@pytest.fixture
def boss_server(browser: Any, tmp_path: Path) -> Iterator[WebServer]:
    app = tmp_path / "agents" / "boss"
    app.mkdir(parents=True)
    (app / "agent.py").write_text(textwrap.dedent(AGENT))
    server = _start(tmp_path, agents_dir=tmp_path / "agents")
    try:
        yield server
    finally:
        _stop(server)


def test_h4_a_task_card_links_to_the_sub_agents_child_session(
    page: Any, boss_server: WebServer
) -> None:
    page.goto(boss_server.url + "/")
    expect(page).to_have_url(re.compile(r"#/apps/boss$"))
    box = page.get_by_role("textbox", name="Message")
    box.fill("go")
    box.press("Enter")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text(
        "boss: worker: hi from the worker"
    )
    match = re.search(r"#/apps/boss/sessions/([^/]+)$", page.url)
    assert match, page.url
    sid = match.group(1)

    card = page.locator('.tool-card[data-tool="worker"]')
    link = card.get_by_role("link", name="Open the sub-agent's session")
    expect(link).to_be_visible()
    assert link.get_attribute("href") == f"#/apps/boss/sessions/{sid}~call-w1"
    link.click()
    expect(page).to_have_url(re.compile(rf"#/apps/boss/sessions/{re.escape(sid)}~call-w1$"))
    # The child session shows the sub-agent's own conversation: the request, its answer.
    expect(page.locator(".msg-user").first).to_contain_text("say hi")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("worker: hi from the worker")
    # A card of a call that ran no agent has no such link (the worker's own session has none).
    expect(page.locator(".tool-child-link")).to_have_count(0)
