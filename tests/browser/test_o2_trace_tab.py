"""SPEC O2 / W4: the web UI's Trace tab shows a span waterfall per invocation, in Chromium.

`rondo web` keeps the spans of its sessions (its span store) and the tab reads them from
google-adk's trace route. Needs the browser and opentelemetry-sdk (the server extra).
"""

from __future__ import annotations

import re
from typing import Any

from tests._require import require_module
from tests.browser.test_w4_web_ui import expect, open_app, send, session_id, wait_idle

require_module("opentelemetry.sdk", what="OTEL_SDK", install="pip install 'rondo-agents[server]'")


def test_o2_the_trace_tab_shows_each_invocations_span_waterfall(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "What's the weather in Paris?")
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("sunny in Paris")
    wait_idle(page)
    send(page, "weather in Tokyo")
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("in Tokyo")
    wait_idle(page)
    page.get_by_role("tab", name=re.compile("^Trace")).click()
    invocations = page.locator(".trace-invocation")
    expect(invocations).to_have_count(2)
    first = invocations.first
    # The agent's span (under the request's own spans), its model and tool spans under it.
    expect(first.locator(".span-agent")).to_contain_text("invoke_agent assistant")
    expect(first.locator(".span-tool")).to_contain_text("execute_tool get_weather")
    expect(first.locator(".span-model")).to_have_count(2)
    assert first.locator(".span-bar").count() == first.locator(".span-row").count()
    agent_indent = first.locator(".span-agent .span-name").first.evaluate(
        "el => parseFloat(el.style.paddingLeft)"
    )
    tool_indent = first.locator(".span-tool .span-name").evaluate(
        "el => parseFloat(el.style.paddingLeft)"
    )
    assert tool_indent > agent_indent
    # A span's attributes open in the detail pane: the ids the route keys them by.
    first.locator(".span-tool").click()
    detail = page.locator(".detail-body")
    expect(detail).to_contain_text('"gen_ai.tool.name"')
    expect(detail).to_contain_text(session_id(page))
    # What the tab shows is what google-adk's trace route answers for the session.
    status, spans = web.get(f"/dev/apps/assistant/debug/trace/session/{session_id(page)}")
    assert status == 200
    assert len({s["trace_id"] for s in spans}) == 2
    # Span and trace ids are 64- and 128-bit integers (JSON numbers, as google-adk sends
    # them): the detail pane shows their exact digits, not a JS number's rounding of them.
    tools = [s for s in spans if s["name"] == "execute_tool get_weather"]
    assert any(s["span_id"] > 2**53 for s in tools)  # random ids: past JS's exact integers
    digits = set(re.findall(r"\d+", detail.inner_text()))
    assert any({str(s["span_id"]), str(s["trace_id"])} <= digits for s in tools), digits
