"""K3 Gemini explicit context caching, through the real google-genai SDK on a recorded transport.

A long prefix reused by the next step gets one cached content (`caches.create`); later steps
name it and send only the uncached tail; a changed prefix deletes it and caches the new one;
short prefixes and `prompt_cache=False` send no cache at all (implicit caching).
"""

from __future__ import annotations

from typing import Any

from tests._require import require_module

require_module("google.genai", what="GEMINI", install="pip install 'rondo-agents[gemini]'")

from rondo import Agent, Content, FunctionCall, FunctionResponse, Part, RunConfig, Runner  # noqa: E402
from rondo.models import FunctionDeclaration, GenerateConfig, ModelRequest  # noqa: E402
from rondo.models.gemini import GeminiModel, RetryPolicy  # noqa: E402

from ._http_fakes import Exchanges, json_reply  # noqa: E402

SYSTEM = "You are a careful travel assistant. " * 20
LONG = "Background notes on every city we might visit. " * 60  # ~700 tokens by estimate
TOOL = FunctionDeclaration(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def generated(text: str = "ok") -> Any:
    return json_reply(
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 2},
        }
    )


def created(name: str) -> Any:
    return json_reply({"name": name, "model": "models/gemini-2.5-flash", "displayName": "rondo"})


def model(exchanges: Exchanges, **kwargs: Any) -> GeminiModel:
    return GeminiModel(
        "gemini-2.5-flash",
        api_key="gm-test",
        http_client=exchanges.client(),
        retry=RetryPolicy(max_attempts=1),
        cache_min_tokens=kwargs.pop("cache_min_tokens", 500),
        **kwargs,
    )


def step(i: int) -> list[Content]:
    """One tool round: the model's call and its result."""
    call = FunctionCall(name="get_weather", args={"city": f"c{i}"}, id=f"fc-{i}")
    answer = FunctionResponse(name="get_weather", response={"forecast": "sunny"}, id=f"fc-{i}")
    return [
        Content(role="model", parts=[Part(function_call=call)]),
        Content(role="user", parts=[Part(function_response=answer)]),
    ]


def request(contents: list[Content], *, cache: bool = True) -> ModelRequest:
    config = GenerateConfig(
        system_instruction=SYSTEM, tools=[TOOL], prompt_cache=cache, prompt_cache_key="session-1"
    )
    return ModelRequest(contents=contents, config=config)


async def send(m: GeminiModel, contents: list[Content], *, stream: bool = False) -> None:
    async for _ in m.generate(request(contents), stream=stream):
        pass


async def test_k3_gemini_cache_created_once_reused_with_tail_and_replaced() -> None:
    exchanges = Exchanges(
        generated(),  # step 1: nothing reused yet — implicit caching only
        created("cachedContents/c1"),
        generated(),  # step 2: the prefix step 1 sent is reused: cached
        generated(),  # step 3: same cache, longer tail
        json_reply({}),  # step 4: a compaction changed the head — the stale cache is deleted
        generated(),
        created("cachedContents/c2"),  # step 5: the new prefix is reused: cached anew
        generated(),
    )
    m = model(exchanges)
    history = [Content.user(LONG)]
    await send(m, history)
    first = exchanges.body(0)
    assert "cachedContent" not in first
    assert first["systemInstruction"]["parts"] == [{"text": SYSTEM}]

    history += step(1)
    await send(m, history)
    create = exchanges.requests[1]
    assert create.method == "POST"
    assert create.url.path.endswith("/cachedContents")
    cache_body = exchanges.body(1)
    assert cache_body["model"].endswith("gemini-2.5-flash")
    assert cache_body["contents"] == first["contents"]  # exactly the reused prefix
    assert cache_body["systemInstruction"] == first["systemInstruction"]
    assert cache_body["tools"] == first["tools"]
    assert cache_body["ttl"] == "3600s"
    second = exchanges.body(2)
    assert second["cachedContent"] == "cachedContents/c1"
    # Only the tail goes out; what the cache holds is not repeated (the API rejects that).
    assert [c["role"] for c in second["contents"]] == ["model", "user"]
    assert "systemInstruction" not in second
    assert "tools" not in second

    history += step(2)
    await send(m, history, stream=True)
    third = exchanges.body(3)
    assert exchanges.requests[3].url.path.endswith(":streamGenerateContent")
    assert third["cachedContent"] == "cachedContents/c1"  # created once, reused
    assert len(third["contents"]) == 4

    # A compaction replaces the head by a summary: the cached prefix no longer matches.
    compacted = [Content.user("Summary: " + LONG), *step(3)]
    await send(m, compacted)
    delete = exchanges.requests[4]
    assert delete.method == "DELETE"
    assert delete.url.path.endswith("/cachedContents/c1")
    fourth = exchanges.body(5)
    assert "cachedContent" not in fourth
    assert len(fourth["contents"]) == 3

    compacted += step(4)
    await send(m, compacted)
    assert exchanges.body(6)["contents"] == fourth["contents"]
    fifth = exchanges.body(7)
    assert fifth["cachedContent"] == "cachedContents/c2"
    assert len(fifth["contents"]) == 2
    assert not exchanges.replies


async def test_k3_gemini_short_prefix_and_opt_out_use_implicit_caching() -> None:
    exchanges = Exchanges(generated(), generated(), generated(), generated())
    short = model(exchanges, cache_min_tokens=100_000)
    history = [Content.user(LONG)]
    await send(short, history)
    await send(short, history + step(1))
    off = model(exchanges)
    async for _ in off.generate(request(history, cache=False)):
        pass
    async for _ in off.generate(request(history + step(1), cache=False)):
        pass
    # Four generate calls and nothing else: no cache created, none named.
    assert all(r.url.path.endswith(":generateContent") for r in exchanges.requests)
    assert all("cachedContent" not in exchanges.body(i) for i in range(4))
    assert exchanges.body(3)["systemInstruction"]["parts"] == [{"text": SYSTEM}]


async def test_k3_gemini_cache_not_created_falls_back_to_whole_request() -> None:
    exchanges = Exchanges(
        generated(),
        json_reply(
            {"error": {"code": 400, "message": "too small", "status": "INVALID_ARGUMENT"}}, 400
        ),
        generated(),
        generated(),
    )
    m = model(exchanges)
    history = [Content.user(LONG)]
    await send(m, history)
    await send(m, history + step(1))
    await send(m, history + step(1) + step(2))  # refused once: not asked again
    assert exchanges.requests[3].url.path.endswith(":generateContent")
    last = exchanges.body(2)
    assert "cachedContent" not in last
    assert len(last["contents"]) == 3
    assert last["systemInstruction"]["parts"] == [{"text": SYSTEM}]


def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny"}


def called(i: int) -> Any:
    part = {"functionCall": {"name": "get_weather", "args": {"city": f"c{i}"}, "id": f"fc-{i}"}}
    return json_reply(
        {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}]}
    )


def test_k3_gemini_runner_steps_share_one_cache_per_session() -> None:
    def run(caching: bool) -> Exchanges:
        exchanges = Exchanges(
            called(1), created("cachedContents/r1"), called(2), generated("Done.")
        )
        if not caching:
            exchanges.replies.pop(1)
        agent = Agent(name="a", model=model(exchanges), instruction=SYSTEM, tools=[get_weather])
        result = Runner(agent=agent, app_name="app").run_sync(
            user_id="u", new_message=LONG, run_config=RunConfig(prompt_caching=caching)
        )
        assert result.output == "Done."
        return exchanges

    on = run(True)
    assert on.requests[1].url.path.endswith("/cachedContents")
    assert [on.body(i).get("cachedContent") for i in (2, 3)] == ["cachedContents/r1"] * 2
    assert [len(on.body(i)["contents"]) for i in (0, 2, 3)] == [1, 2, 4]
    off = run(False)
    assert all("cachedContent" not in off.body(i) for i in range(3))
