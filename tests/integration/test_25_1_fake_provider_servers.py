"""Issue 25 item 1 (SPEC K3 / O6): prompt caching against fake provider *servers*, real SDKs.

rondo's Anthropic, OpenAI and Gemini adapters — the real `anthropic`, `openai` and
`google-genai` clients pointed at `tests/_fake_providers.py` on loopback by `base_url` — drive
one 20-step conversation with tools (19 tool rounds and an answer). The fakes simulate each
provider's prompt cache from the bytes they receive, so a cache hit is reported only when the
prefix really is byte-identical from one request to the next. The tests check where the markers
are, that the prefix holds, that `RunConfig(prompt_caching=False)` sends none, and that the
fakes' cached-read / cache-write figures land in the recorded usage and the price.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rondo import Agent, RunConfig, Runner
from rondo.runner import RunResult
from tests._fake_providers import FakeProviders, Recorded
from tests._require import require_module

require_module("anthropic", what="ANTHROPIC", install="pip install 'rondo-agents[anthropic]'")
require_module("openai", what="OPENAI", install="pip install 'rondo-agents[openai]'")
require_module("google.genai", what="GEMINI", install="pip install 'rondo-agents[gemini]'")
genai_prices = require_module("genai_prices", what="OPENAI", install="pip install genai-prices")

pytestmark = pytest.mark.integration

STEPS = 20  # model calls in the conversation: 19 tool rounds, then the answer
# A long agent prompt (~5,000 tokens), as real agents have: past every provider's minimum.
SYSTEM = " ".join(
    f"Rule {i}: check the forecast for each city before answering." for i in range(330)
)
PAD = 800  # characters each tool round adds twice (the call's note and the result's)


def get_weather(city: str, note: str = "") -> dict[str, str]:
    """The weather in a city (the note is echoed back)."""
    return {"city": city, "forecast": "sunny", "note": note}


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeProviders, str]]:
    providers = FakeProviders(tool_rounds=STEPS - 1, result_pad=PAD)
    with providers.running() as url:
        yield providers, url
        # The models' HTTP clients belong to this test's event loop: close them in it.
        for model in _opened:
            await model.aclose()
        _opened.clear()


_opened: list[Any] = []


def _model(provider: str, url: str) -> Any:
    model = _make_model(provider, url)
    _opened.append(model)
    return model


def _make_model(provider: str, url: str) -> Any:
    from rondo.models._retry import RetryPolicy

    once = RetryPolicy(max_attempts=1)
    if provider == "anthropic":
        from rondo.models.anthropic import AnthropicModel

        return AnthropicModel("claude-sonnet-4-5", api_key="sk-ant", base_url=url, retry=once)
    if provider == "openai":
        from rondo.models.openai import OpenAIModel

        # Not api.openai.com, so the key is sent only when asked for (as to OpenAI itself).
        return OpenAIModel(
            "gpt-4o-mini", api_key="sk", base_url=f"{url}/v1", retry=once, send_cache_key=True
        )
    from rondo.models.gemini import GeminiModel

    return GeminiModel("gemini-2.5-flash", api_key="gm", base_url=url, retry=once)


def _runner(provider: str, url: str) -> Runner:
    agent = Agent(name="a", model=_model(provider, url), instruction=SYSTEM, tools=[get_weather])
    return Runner(agent=agent, app_name="app")


async def _run(
    runner: Runner, *, caching: bool = True, session: str = "s1", text: str = "Weather?"
) -> RunResult:
    result = await runner.run_to_result(
        user_id="u",
        session_id=session,
        new_message=text,
        run_config=RunConfig(prompt_caching=caching),
    )
    assert result.output == "Done."
    return result


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]
    if isinstance(value, list):
        return [_strip(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _body(record: Recorded) -> dict[str, Any]:
    assert record.body is not None
    return record.body


# -- Anthropic ------------------------------------------------------------------------------


def _marks(body: dict[str, Any]) -> list[tuple[str, int]]:
    """Where the breakpoints are: ("system", i), ("tool", i), ("message", index)."""
    found = [("system", i) for i, b in enumerate(body["system"]) if "cache_control" in b]
    found += [("tool", i) for i, t in enumerate(body["tools"]) if "cache_control" in t]
    for i, message in enumerate(body["messages"]):
        if any("cache_control" in b for b in message["content"]):
            found.append(("message", i))
    return found


async def test_25_1_anthropic_breakpoints_move_with_a_byte_identical_prefix(
    fake: tuple[FakeProviders, str],
) -> None:
    providers, url = fake
    await _run(_runner("anthropic", url))
    calls = providers.calls("anthropic")
    assert len(calls) == STEPS
    bodies = [_body(c) for c in calls]
    last_marked: list[int] = []
    for body in bodies:
        marks = _marks(body)
        assert len(marks) <= 4  # Anthropic's limit
        assert ("system", 0) in marks
        assert ("tool", len(body["tools"]) - 1) in marks
        assert sum(1 for kind, _ in marks if kind == "tool") == 1
        # The newest message ends with a breakpoint: the next step finds this prefix cached.
        assert "cache_control" in body["messages"][-1]["content"][-1]
        last_marked.append(max(i for kind, i in marks if kind == "message"))
    assert last_marked == sorted(set(last_marked))  # the marks move forward as it grows
    assert last_marked[-1] > last_marked[0]
    for before, after in itertools.pairwise(bodies):
        # Byte for byte (the marks aside): tools, system and every message sent before.
        cut = len(before["messages"])
        assert _dump(_strip(after["tools"])) == _dump(_strip(before["tools"]))
        assert _dump(after["system"]) == _dump(before["system"])
        assert _dump(_strip(after["messages"][:cut])) == _dump(_strip(before["messages"]))
    # The fake's cache agrees: each step reads all that the step before it had cached.
    usages = [c.usage for c in calls]
    assert usages[0] is not None
    assert usages[0]["cache_read_input_tokens"] == 0
    assert usages[0]["cache_creation_input_tokens"] > 1000  # the system prompt and tools
    for before, after in itertools.pairwise(usages):
        assert before is not None
        assert after is not None
        cached_before = before["cache_read_input_tokens"] + before["cache_creation_input_tokens"]
        assert after["cache_read_input_tokens"] == cached_before
        assert after["cache_creation_input_tokens"] > 0
        assert after["input_tokens"] == 0  # all of it was read or written at a breakpoint


def _anthropic_price(usage: dict[str, Any]) -> float:
    read, written = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
    tokens = genai_prices.Usage(
        input_tokens=usage["input_tokens"] + read + written,
        output_tokens=usage["output_tokens"],
        cache_read_tokens=read or None,
        cache_write_tokens=written or None,
    )
    price = genai_prices.calc_price(tokens, model_ref="claude-sonnet-4-5", provider_id="anthropic")
    return float(price.total_price)


async def test_25_1_anthropic_cache_reads_and_writes_land_in_usage_and_price(
    fake: tuple[FakeProviders, str],
) -> None:
    providers, url = fake
    result = await _run(_runner("anthropic", url))
    usages = [c.usage for c in providers.calls("anthropic") if c.usage is not None]
    m = result.metrics
    assert m.model_calls == STEPS
    assert m.cached_tokens == sum(u["cache_read_input_tokens"] for u in usages) > 0
    assert m.cache_write_tokens == sum(u["cache_creation_input_tokens"] for u in usages) > 0
    assert m.input_tokens == sum(
        u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        for u in usages
    )
    assert m.output_tokens == sum(u["output_tokens"] for u in usages)
    assert m.unpriced_calls == 0
    assert m.cost_usd == pytest.approx(sum(_anthropic_price(u) for u in usages))
    # Each model call's record carries its own figures.
    recorded = [e.usage for e in result.events if e.usage is not None]
    assert [u.cached_tokens for u in recorded] == [u["cache_read_input_tokens"] for u in usages]


async def test_25_1_anthropic_caching_off_sends_no_marks_and_reads_nothing(
    fake: tuple[FakeProviders, str],
) -> None:
    providers, url = fake
    result = await _run(_runner("anthropic", url), caching=False)
    calls = providers.calls("anthropic")
    assert len(calls) == STEPS
    for call in calls:
        assert b"cache_control" not in call.raw
        assert isinstance(_body(call)["system"], str)
        assert call.usage is not None
        assert call.usage["cache_read_input_tokens"] == 0
    assert result.metrics.cached_tokens == 0
    assert result.metrics.cache_write_tokens == 0


# -- OpenAI ---------------------------------------------------------------------------------


async def test_25_1_openai_one_cache_key_per_session_and_a_growing_prefix(
    fake: tuple[FakeProviders, str],
) -> None:
    providers, url = fake
    runner = _runner("openai", url)
    first = await _run(runner, session="s1")
    second = await _run(runner, session="s1", text="And again?")
    other = await _run(runner, session="s2")
    calls = providers.calls("openai")
    assert len(calls) == 3 * STEPS
    keys = [_body(c).get("prompt_cache_key") for c in calls]
    s1, s2 = keys[: 2 * STEPS], keys[2 * STEPS :]
    assert len(set(s1)) == 1
    assert len(set(s2)) == 1
    assert s1[0]
    assert s2[0]
    assert s1[0] != s2[0]
    assert "s1" not in str(s1[0])  # a digest: the session id never reaches the provider
    bodies = [_body(c) for c in calls[: 2 * STEPS]]
    for before, after in itertools.pairwise(bodies):
        cut = len(before["messages"])
        assert _dump(after["messages"][:cut]) == _dump(before["messages"])
        assert _dump(after["tools"]) == _dump(before["tools"])
    usages = [c.usage for c in calls if c.usage is not None]
    # From the second request on, the provider finds the session's prefix cached.
    assert all(u["prompt_tokens_details"]["cached_tokens"] >= 1024 for u in usages[1:STEPS])
    # The other session's first request shares nothing cached under its own key.
    assert usages[2 * STEPS]["prompt_tokens_details"]["cached_tokens"] == 0
    for result, chunk in ((first, usages[:STEPS]), (second, usages[STEPS : 2 * STEPS])):
        cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in chunk)
        assert result.metrics.cached_tokens == cached > 0
        assert result.metrics.input_tokens == sum(u["prompt_tokens"] for u in chunk)
        price = sum(
            float(
                genai_prices.calc_price(
                    genai_prices.Usage(
                        input_tokens=u["prompt_tokens"],
                        output_tokens=u["completion_tokens"],
                        cache_read_tokens=u["prompt_tokens_details"]["cached_tokens"] or None,
                    ),
                    model_ref="gpt-4o-mini",
                    provider_id="openai",
                ).total_price
            )
            for u in chunk
        )
        assert result.metrics.cost_usd == pytest.approx(price)
    assert other.metrics.cost_usd is not None


async def test_25_1_openai_caching_off_sends_no_key(fake: tuple[FakeProviders, str]) -> None:
    providers, url = fake
    await _run(_runner("openai", url), caching=False)
    calls = providers.calls("openai")
    assert len(calls) == STEPS
    assert all(b"prompt_cache_key" not in c.raw for c in calls)


# -- Gemini ---------------------------------------------------------------------------------


async def test_25_1_gemini_cached_content_created_reused_replaced_and_named(
    fake: tuple[FakeProviders, str],
) -> None:
    providers, url = fake
    result = await _run(_runner("gemini", url))
    traffic = providers.of("gemini")
    generates = [r for r in traffic if r.path.endswith(":generateContent")]
    creates = [r for r in traffic if r.method == "POST" and r.path.endswith("/cachedContents")]
    deletes = [r for r in traffic if r.method == "DELETE"]
    assert len(generates) == STEPS
    assert all(r.status == 200 for r in traffic)  # no request the API would refuse
    # Step 1 has nothing reused; step 2 reuses the ~5,000-token prefix (past the documented
    # 4,096-token threshold): one cached content, named from then on.
    assert "cachedContent" not in _body(generates[0])
    assert _body(generates[0])["systemInstruction"]["parts"][0]["text"].startswith(SYSTEM)
    assert len(creates) >= 2  # created, then replaced as the uncached tail outgrew the threshold
    names = [_body(g).get("cachedContent") for g in generates]
    assert names[0] is None
    assert all(n is not None for n in names[1:])
    distinct = list(dict.fromkeys(n for n in names if n is not None))
    assert len(distinct) == len(creates)
    assert all(names.count(n) >= 2 for n in distinct[:-1])  # each cache is reused
    # The replaced caches were deleted when their successors were made; the last one lives on.
    assert [_path_name(d) for d in deletes] == distinct[:-1]
    assert set(providers.caches) == {distinct[-1]}
    for record in generates[1:]:
        body = _body(record)
        assert "systemInstruction" not in body
        assert "tools" not in body
        assert body["cachedContent"] in distinct
    for create in creates:
        assert _body(create)["systemInstruction"]["parts"][0]["text"].startswith(SYSTEM)
        assert _body(create)["ttl"] == "3600s"
    # What the model saw grows by appending: cached part + tail, byte-identical as a prefix.
    seen = [_dump(_contents_seen(providers, _body(g))) for g in generates]
    for before, after in itertools.pairwise(seen):
        assert after.startswith(before[:-1])
    usages = [g.usage for g in generates if g.usage is not None]
    cached = sum(u.get("cachedContentTokenCount", 0) for u in usages)
    assert result.metrics.cached_tokens == cached > 4096 * (STEPS - 2)
    price = sum(
        float(
            genai_prices.calc_price(
                genai_prices.Usage(
                    input_tokens=u["promptTokenCount"],
                    output_tokens=u["candidatesTokenCount"],
                    cache_read_tokens=u.get("cachedContentTokenCount") or None,
                ),
                model_ref="gemini-2.5-flash",
                provider_id="google",
            ).total_price
        )
        for u in usages
    )
    assert result.metrics.cost_usd == pytest.approx(price)


def _path_name(record: Recorded) -> str:
    return record.path.split("/", 2)[2]  # after /v1/ or /v1beta/


def _contents_seen(providers: FakeProviders, body: dict[str, Any]) -> list[Any]:
    name = body.get("cachedContent")
    tail = list(body["contents"])
    if name is None:
        return tail
    return list(providers.created_bodies[name]["contents"]) + tail


async def test_25_1_gemini_caching_off_creates_and_names_nothing(
    fake: tuple[FakeProviders, str],
) -> None:
    providers, url = fake
    result = await _run(_runner("gemini", url), caching=False)
    traffic = providers.of("gemini")
    assert len(traffic) == STEPS
    assert all(r.path.endswith(":generateContent") for r in traffic)
    assert all(b"cachedContent" not in r.raw for r in traffic)
    assert result.metrics.cached_tokens == 0
