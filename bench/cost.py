"""Dollars and tokens of a 50-turn session with and without prompt caching, per provider.

    python bench/cost.py                 # prints the table (offline: no network, no keys)
    python bench/cost.py --recorded      # the same session run through rondo's adapters
                                         # against the fake provider servers (loopback)

`--recorded` drives a real 50-turn session — rondo's Runner, its Anthropic / OpenAI / Gemini
adapters and their real SDKs — against `tests/_fake_providers.py`, whose servers simulate each
provider's prompt cache from the bytes they receive, and tables the usage rondo recorded
(`RunResult.metrics`, priced by the same function). Its token counts are the fakes' (four
characters a token of the request JSON), so they run a little above the formula's.

Every figure is computed from the usage each provider *reports* on a cache hit, shaped turn by
turn as below, and priced with `rondo.models.pricing.price_usage` (genai-prices) — the same
function that prices live runs. Assumptions (change the constants to model another workload):

- One session, 50 turns of plain chat: a stable head of `HEAD` tokens (system prompt + tool
  declarations), then each turn adds a `USER`-token message and gets a `REPLY`-token answer,
  which the next turn sends back as history. Turn n sends HEAD + (n-1)(USER+REPLY) + USER.
- Without caching every prompt token is billed at the input price (a provider's own implicit
  caching may in practice still discount some of them: "without" is the upper bound).
- Anthropic (rondo's breakpoints on the system prompt, last tool and the last two messages):
  each turn reads the previous turn's whole prompt from the cache (`cache_read_input_tokens`)
  and writes the new part (`cache_creation_input_tokens`, billed at the 5-minute write price);
  turn 1 writes its whole prompt. Sessions with turns > 5 minutes apart would miss.
- OpenAI (`prompt_cache_key` per session, automatic prefix caching): `cached_tokens` is the
  previous prompt rounded down to 128-token blocks, and 0 below 1,024 tokens; no write price.
- Gemini implicit (every reused prefix hit — Google does not guarantee it):
  `cached_content_token_count` is the previous prompt; no write price.
- "prompt tokens" counts what the provider bills as prompt, so Gemini explicit includes the
  creation calls.
- Gemini explicit (rondo's `ContextCache`): a cached content is created once the reused prefix
  is estimated at ≥ 4,096 tokens, covers the previous turn's prompt, is reused while the
  uncached tail stays < 4,096 tokens, then replaced by one covering all but the newest user
  message. Each creation bills its tokens once at the
  input price; storage is billed at `GEMINI_STORAGE_PER_MTOK_HOUR` for `SESSION_MINUTES` per
  cache (genai-prices has no storage price; Google's list price for 2.5 Flash).
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rondo.models.pricing import price_usage
from rondo.types import Usage

TURNS = 50
HEAD = 3000
USER = 150
REPLY = 250
CACHE_MIN_TOKENS = 4096
GEMINI_STORAGE_PER_MTOK_HOUR = 1.00
SESSION_MINUTES = 30.0

MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai": "gpt-4.1",
    "gemini": "gemini-2.5-flash",
}


@dataclass
class Total:
    input: int = 0
    cached: int = 0
    written: int = 0
    output: int = 0
    dollars: float = 0.0
    # The same calls priced as if nothing had been read from or written to a cache.
    list_dollars: float = 0.0

    def add(self, provider: str, usage: Usage) -> None:
        cost = price_usage(provider, MODELS[provider], usage)
        if cost is None:
            raise SystemExit(f"{provider}:{MODELS[provider]} is unpriced: install genai-prices")
        self.input += usage.input_tokens
        self.cached += usage.cached_tokens
        self.written += usage.cache_write_tokens
        self.output += usage.output_tokens
        self.dollars += cost


def prompts() -> list[int]:
    return [HEAD + n * (USER + REPLY) + USER for n in range(TURNS)]


def uncached(provider: str) -> Total:
    total = Total()
    for prompt in prompts():
        total.add(provider, Usage(input_tokens=prompt, output_tokens=REPLY))
    return total


def anthropic() -> Total:
    total, previous = Total(), 0
    for prompt in prompts():
        usage = Usage(
            input_tokens=prompt,
            output_tokens=REPLY,
            cached_tokens=previous,
            cache_write_tokens=prompt - previous,
        )
        total.add("anthropic", usage)
        previous = prompt
    return total


def openai() -> Total:
    total, previous = Total(), 0
    for prompt in prompts():
        cached = previous // 128 * 128 if previous >= 1024 else 0
        total.add("openai", Usage(input_tokens=prompt, output_tokens=REPLY, cached_tokens=cached))
        previous = prompt
    return total


def gemini_implicit() -> Total:
    total, previous = Total(), 0
    for prompt in prompts():
        total.add("gemini", Usage(input_tokens=prompt, output_tokens=REPLY, cached_tokens=previous))
        previous = prompt
    return total


def gemini_explicit() -> tuple[Total, int]:
    total, previous, cache, created = Total(), 0, 0, 0
    for prompt in prompts():
        replace = cache > 0 and prompt - cache >= CACHE_MIN_TOKENS
        if replace or (cache == 0 and previous >= CACHE_MIN_TOKENS):
            # first: the previous prompt; a replacement: all but the newest user message
            cache, created = (prompt - USER if replace else previous), created + 1
            total.add("gemini", Usage(input_tokens=cache))  # the creation call
            storage = cache / 1e6 * GEMINI_STORAGE_PER_MTOK_HOUR * SESSION_MINUTES / 60
            total.dollars += storage
        total.add("gemini", Usage(input_tokens=prompt, output_tokens=REPLY, cached_tokens=cache))
        previous = prompt
    return total, created


def table() -> str:
    explicit, created = gemini_explicit()
    rows = [
        ("Anthropic", MODELS["anthropic"], uncached("anthropic"), anthropic(), "breakpoints"),
        ("OpenAI", MODELS["openai"], uncached("openai"), openai(), "prompt_cache_key"),
        ("Gemini", MODELS["gemini"], uncached("gemini"), gemini_implicit(), "implicit"),
        ("Gemini", MODELS["gemini"], uncached("gemini"), explicit, f"explicit ({created} caches)"),
    ]
    return _format(rows)


# -- recorded: a real session against the fake provider servers ---------------------------------

ROOT = Path(__file__).resolve().parent.parent
# Text of about the given token counts (four characters a token).
SYSTEM_TEXT = ("Follow the house rules for every answer. " * 300)[: HEAD * 4]
REPLY_TEXT = ("The forecast says sunny with light wind. " * 30)[: REPLY * 4]


def _question(turn: int) -> str:
    return f"Turn {turn}: " + ("what should I pack for the trip tomorrow? " * 20)[: USER * 4]


def _recorded_model(provider: str, url: str) -> Any:
    from rondo.models._retry import RetryPolicy

    once = RetryPolicy(max_attempts=1)
    if provider == "anthropic":
        from rondo.models.anthropic import AnthropicModel

        return AnthropicModel(MODELS[provider], api_key="fake", base_url=url, retry=once)
    if provider == "openai":
        from rondo.models.openai import OpenAIModel

        return OpenAIModel(
            MODELS[provider], api_key="fake", base_url=f"{url}/v1", retry=once, send_cache_key=True
        )
    from rondo.models.gemini import GeminiModel

    return GeminiModel(MODELS[provider], api_key="fake", base_url=url, retry=once)


def _weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny"}


async def _session(provider: str, url: str, caching: bool) -> Total:
    from rondo import Agent, RunConfig, Runner

    model = _recorded_model(provider, url)
    agent = Agent(name="packer", model=model, instruction=SYSTEM_TEXT, tools=[_weather])
    runner = Runner(agent=agent, app_name="bench")
    total = Total()
    try:
        for turn in range(TURNS):
            result = await runner.run_to_result(
                user_id="u",
                session_id="s",
                new_message=_question(turn),
                run_config=RunConfig(prompt_caching=caching),
            )
            m = result.metrics
            if m.cost_usd is None:
                raise SystemExit(f"{provider}:{MODELS[provider]} is unpriced: install genai-prices")
            total.input += m.input_tokens
            total.cached += m.cached_tokens
            total.written += m.cache_write_tokens
            total.output += m.output_tokens
            total.dollars += m.cost_usd
            for event in result.events:
                if event.usage is not None:
                    plain = event.usage.model_copy(
                        update={"cached_tokens": 0, "cache_write_tokens": 0}
                    )
                    total.list_dollars += price_usage(provider, MODELS[provider], plain) or 0.0
    finally:
        await model.aclose()
    return total


def recorded_run(provider: str, caching: bool) -> tuple[Total, int]:
    """One 50-turn session against a fresh fake server; the Gemini caches it created."""
    sys.path.insert(0, str(ROOT))
    from tests._fake_providers import FakeProviders

    fake = FakeProviders(tool_rounds=0, answer=REPLY_TEXT)
    with fake.running() as url:
        total = asyncio.run(_session(provider, url, caching))
    created = len(fake.created_tokens)
    for tokens in fake.created_tokens.values():
        # Creating a cache bills its tokens once at the input price; storage is not in
        # genai-prices (the constant above).
        creation = Usage(input_tokens=tokens)
        total.input += tokens
        total.dollars += price_usage(provider, MODELS[provider], creation) or 0.0
        total.list_dollars += price_usage(provider, MODELS[provider], creation) or 0.0
        total.dollars += tokens / 1e6 * GEMINI_STORAGE_PER_MTOK_HOUR * SESSION_MINUTES / 60
    return total, created


def recorded_table() -> str:
    rows: list[tuple[str, str, Total, Total, str]] = []
    for provider, label, how in (
        ("anthropic", "Anthropic", "breakpoints"),
        ("openai", "OpenAI", "prompt_cache_key"),
        ("gemini", "Gemini", "explicit"),
    ):
        off, _ = recorded_run(provider, caching=False)
        on, created = recorded_run(provider, caching=True)
        if created:
            how = f"{how} ({created} caches)"
        rows.append((label, MODELS[provider], off, on, how))
    lines = [
        "| provider | model | caching | prompt tokens | cached read | cache write | output |"
        " $ no cache hit | $ caching off | $ caching on | saved |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for provider, model, off, on, how in rows:
        # Saved against what the same calls would cost with no cache hit at all.
        saved = 1 - on.dollars / on.list_dollars
        lines.append(
            f"| {provider} | {model} | {how} | {on.input:,} | {on.cached:,} | {on.written:,} |"
            f" {on.output:,} | {on.list_dollars:.4f} | {off.dollars:.4f} | {on.dollars:.4f} |"
            f" {saved:.0%} |"
        )
    return "\n".join(lines)


def _format(rows: list[tuple[str, str, Total, Total, str]]) -> str:
    lines = [
        "| provider | model | caching | prompt tokens | cached read | cache write | output |"
        " $ without | $ with | saved |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for provider, model, off, on, how in rows:
        saved = 1 - on.dollars / off.dollars
        lines.append(
            f"| {provider} | {model} | {how} | {on.input:,} | {on.cached:,} | {on.written:,} |"
            f" {on.output:,} | {off.dollars:.4f} | {on.dollars:.4f} | {saved:.0%} |"
        )
    return "\n".join(lines)


if __name__ == "__main__" and "--recorded" in sys.argv:
    print(
        f"{TURNS} turns recorded against the fake provider servers, head ~{HEAD} tokens, "
        f"~{USER} in + ~{REPLY} out per turn (prices: genai-prices via rondo.models.pricing)\n"
    )
    print(recorded_table())
elif __name__ == "__main__":
    print(
        f"{TURNS} turns, head {HEAD} tokens, {USER} in + {REPLY} out per turn "
        f"(prices: genai-prices via rondo.models.pricing)\n"
    )
    print(table())
