"""Issue 25 item 2 / SPEC O6: a session's runs keep their price after the page that watched them
is gone. The ADK event shape has no field for a price, so `GET .../sessions/{id}/usage` sums
each invocation's stored usage: tokens, cached and written tokens, dollars — None (unpriced)
as soon as one call has no price, and local calls counted as free."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.conftest import Launch

genai_prices = pytest.importorskip("genai_prices")

AGENTS = Path(__file__).parents[1] / "browser" / "cost_agents"


def _run(http: object, app: str) -> tuple[str, str]:
    import httpx

    assert isinstance(http, httpx.Client)
    session = http.post(f"/apps/{app}/users/u/sessions", json={}).json()["id"]
    body = {
        "appName": app,
        "userId": "u",
        "sessionId": session,
        "newMessage": {"role": "user", "parts": [{"text": "weather in Oslo?"}]},
    }
    events = http.post("/run", json=body).json()
    return session, events[-1]["invocationId"]


def _sonnet(calls: int) -> float:
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
    return calls * float(one.total_price)


def test_25_2_usage_route_sums_each_invocation_with_its_price(launch: Launch) -> None:
    with launch(agents_dir=AGENTS) as http:
        session, invocation = _run(http, "priced")
        # A second run in the same session is its own row.
        body = {
            "appName": "priced",
            "userId": "u",
            "sessionId": session,
            "newMessage": {"role": "user", "parts": [{"text": "and in Rome?"}]},
        }
        second = http.post("/run", json=body).json()[-1]["invocationId"]
        rows = http.get(f"/apps/priced/users/u/sessions/{session}/usage").json()
        assert [r["invocationId"] for r in rows] == [invocation, second]
        first = rows[0]
        assert first["reportedCalls"] == 2
        assert first["inputTokens"] == 24_000
        assert first["outputTokens"] == 600
        assert first["cachedTokens"] == 20_000
        assert first["cacheWriteTokens"] == 3_000
        assert first["costUsd"] == pytest.approx(_sonnet(2))
        assert first["unpricedCalls"] == 0
        assert first["freeCalls"] == 0


def test_25_2_usage_route_says_unpriced_and_free(launch: Launch) -> None:
    with launch(agents_dir=AGENTS) as http:
        session, _ = _run(http, "mystery")
        (row,) = http.get(f"/apps/mystery/users/u/sessions/{session}/usage").json()
        assert row["costUsd"] is None  # never a partial sum, never 0
        assert row["unpricedCalls"] == 2
        session, _ = _run(http, "local")
        (row,) = http.get(f"/apps/local/users/u/sessions/{session}/usage").json()
        assert row["costUsd"] == 0
        assert row["freeCalls"] == 2


def test_25_2_usage_route_refuses_unknown_sessions_and_apps(launch: Launch) -> None:
    with launch(agents_dir=AGENTS) as http:
        missing = http.get("/apps/priced/users/u/sessions/nope/usage")
        assert missing.status_code == 404
        assert missing.json()["detail"] == "Session not found"
        assert http.get("/apps/nope/users/u/sessions/s/usage").status_code == 404
