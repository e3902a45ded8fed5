"""Issue 25 item 2: deleting a session deletes the Gemini cached contents rondo made for it.

Against the fake Gemini server (`tests/_fake_providers.py`) with the real google-genai SDK:
`Runner.delete_session_async` and the API server's `DELETE .../sessions/{id}` both send a
`DELETE cachedContents/...` for the session's live cache — only that session's — and a session
with no cache sends none.
"""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from rondo import Agent, Runner
from tests._fake_providers import FakeProviders
from tests._require import require_module

require_module("google.genai", what="GEMINI", install="pip install 'rondo-agents[gemini]'")

pytestmark = pytest.mark.integration

# ~5,000 tokens: past the 4,096-token threshold, so the second step caches the prefix.
SYSTEM = " ".join(
    f"Rule {i}: check the forecast for each city before answering." for i in range(330)
)


def get_weather(city: str, note: str = "") -> dict[str, str]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny"}


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeProviders, str]]:
    providers = FakeProviders(tool_rounds=3)
    with providers.running() as url:
        yield providers, url


def _deletes(providers: FakeProviders) -> list[str]:
    return [r.path.split("/", 2)[2] for r in providers.of("gemini") if r.method == "DELETE"]


async def test_25_2_runner_delete_session_deletes_its_gemini_caches(
    fake: tuple[FakeProviders, str],
) -> None:
    from rondo.models._retry import RetryPolicy
    from rondo.models.gemini import GeminiModel

    providers, url = fake
    model = GeminiModel(
        "gemini-2.5-flash", api_key="gm", base_url=url, retry=RetryPolicy(max_attempts=1)
    )
    agent = Agent(name="a", model=model, instruction=SYSTEM, tools=[get_weather])
    runner = Runner(agent=agent, app_name="app")
    try:
        live: dict[str, set[str]] = {}
        for sid in ("s1", "s2"):
            before = set(providers.caches)
            result = await runner.run_to_result(user_id="u", session_id=sid, new_message="Go")
            assert result.output == "Done."
            live[sid] = set(providers.caches) - before
        assert len(live["s1"]) == len(live["s2"]) == 1  # one live cache per session
        assert _deletes(providers) == []

        await runner.delete_session_async(user_id="u", session_id="s1")
        assert _deletes(providers) == list(live["s1"])  # the delete call arrived, for s1 only
        assert set(providers.caches) == live["s2"]
        assert (
            await runner.session_service.get_session(app_name="app", user_id="u", session_id="s1")
            is None
        )
        # Deleting again (or a session that never cached) sends nothing more.
        await runner.delete_session_async(user_id="u", session_id="s1")
        await runner.delete_session_async(user_id="u", session_id="nope")
        assert len(_deletes(providers)) == 1
    finally:
        await model.aclose()


def test_25_2_server_delete_route_deletes_the_session_caches(
    fake: tuple[FakeProviders, str], tmp_path: Path
) -> None:
    from rondo.server import create_app
    from tests.server._live import serve

    providers, url = fake
    app_dir = tmp_path / "weather"
    app_dir.mkdir()
    (app_dir / "agent.py").write_text(
        textwrap.dedent(
            f"""
            from rondo import Agent
            from rondo.models._retry import RetryPolicy
            from rondo.models.gemini import GeminiModel

            SYSTEM = {SYSTEM!r}

            def get_weather(city: str, note: str = "") -> dict:
                \"\"\"The weather in a city.\"\"\"
                return {{"city": city, "forecast": "sunny"}}

            root_agent = Agent(
                name="weather",
                model=GeminiModel(
                    "gemini-2.5-flash", api_key="gm", base_url={url!r},
                    retry=RetryPolicy(max_attempts=1),
                ),
                instruction=SYSTEM,
                tools=[get_weather],
            )
            """
        )
    )
    with (
        serve(create_app(tmp_path, db="memory", loopback_only=True)) as server,
        httpx.Client(base_url=server, timeout=30) as http,
    ):
        base = "/apps/weather/users/u/sessions"
        assert http.post(f"{base}/s1", json={}).status_code == 200
        run = {
            "appName": "weather",
            "userId": "u",
            "sessionId": "s1",
            "newMessage": {"role": "user", "parts": [{"text": "Go"}]},
        }
        answer = http.post("/run", json=run)
        assert answer.status_code == 200, answer.text
        live = list(providers.caches)
        assert len(live) == 1
        assert http.delete(f"{base}/s1").status_code in (200, 204)
        assert _deletes(providers) == live
        assert providers.caches == {}
        assert http.get(f"{base}/s1").status_code == 404
