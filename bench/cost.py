"""Dollars and tokens of a 50-turn session with and without prompt caching, per provider.

    python bench/cost.py                 # prints the table (offline: no network, no keys)

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

from dataclasses import dataclass

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


if __name__ == "__main__":
    print(
        f"{TURNS} turns, head {HEAD} tokens, {USER} in + {REPLY} out per turn "
        f"(prices: genai-prices via rondo.models.pricing)\n"
    )
    print(table())
