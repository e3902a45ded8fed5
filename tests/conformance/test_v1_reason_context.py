"""SPEC V1 (seed 002): `ReasonStart` carries the round's system prompt and a summary of its
working memory; `ContextSize` comes before every round, with or without compaction, with
the model's window when known and before/after figures of 0 when nothing was compressed."""

from __future__ import annotations

from typing import Any

from rondo import Agent, FunctionCall, Runner
from rondo.lifecycle import ContextSize, ReasonStart
from rondo.testing import ScriptedModel, check_stream


def ping() -> dict[str, Any]:
    """Answers pong."""
    return {"pong": True}


async def test_v1_every_round_has_its_context_size_then_its_start_with_prompt_and_memory() -> None:
    model = ScriptedModel([FunctionCall(name="ping", args={}), "done"], context_window=8192)
    agent = Agent(name="a", model=model, instruction="Be brief.", tools=[ping])
    items = [
        e
        async for e in Runner(agent=agent).stream_async(
            user_id="u", session_id="s", new_message="hello"
        )
    ]
    check_stream(items)
    kinds = [type(e).__name__ for e in items if isinstance(e, ContextSize | ReasonStart)]
    assert kinds == ["ContextSize", "ReasonStart", "ContextSize", "ReasonStart"]
    sizes = [e for e in items if isinstance(e, ContextSize)]
    assert all(s.context_length == 8192 for s in sizes)
    assert [s.message_count for s in sizes] == [1, 3]
    assert sizes[1].token_count > sizes[0].token_count > 0
    for size in sizes:  # no compaction: nothing compressed, the figures are 0
        assert not size.compressed
        assert (size.tokens_before, size.tokens_after) == (0, 0)
        assert (size.messages_before, size.messages_after) == (0, 0)
    starts = [e for e in items if isinstance(e, ReasonStart)]
    assert all("Be brief." in s.system_prompt for s in starts)
    first, second = (s.working_memory for s in starts)
    assert first is not None
    assert second is not None
    assert (first.message_count, first.tool_calls, first.tool_results) == (1, 0, 0)
    assert first.last_message == "hello"
    assert (second.message_count, second.tool_calls, second.tool_results) == (3, 1, 1)


async def test_v1_without_a_window_the_context_length_is_unknown() -> None:
    agent = Agent(name="a", model=ScriptedModel(["hi"]))
    items = [
        e
        async for e in Runner(agent=agent).stream_async(
            user_id="u", session_id="s", new_message="x"
        )
    ]
    [size] = [e for e in items if isinstance(e, ContextSize)]
    assert size.context_length is None


async def test_v1_context_size_context_length_from_model_window() -> None:
    """Issue 18 item 3: `context_length` is the model's `context_window` — ScriptedModel's
    option, an OpenAI model's family (a documented table: OpenAI publishes no window in its
    API), a local model's n_ctx; unknown models say None."""
    from rondo.models.openai import OpenAIModel, openai_context_window

    agent = Agent(name="a", model=ScriptedModel(["hi"], context_window=32_768))
    items = [
        e
        async for e in Runner(agent=agent).stream_async(
            user_id="u", session_id="s", new_message="x"
        )
    ]
    [size] = [e for e in items if isinstance(e, ContextSize)]
    assert size.context_length == 32_768
    assert openai_context_window("gpt-4o-mini-2024-07-18") == 128_000
    assert openai_context_window("gpt-4.1-nano") == 1_047_576
    assert openai_context_window("gpt-4") == 8_192
    assert openai_context_window("gpt-5-mini") == 400_000
    assert openai_context_window("o3-mini") == 200_000
    assert openai_context_window("llama3.2") is None
    assert OpenAIModel("gpt-4o", api_key="sk-test").context_window == 128_000
    assert OpenAIModel("qwen3", base_url="http://127.0.0.1:1/v1").context_window is None


def test_v1_a_local_model_s_window_is_its_n_ctx(tmp_path: Any) -> None:
    import importlib.util

    from tests._require import require

    require(
        importlib.util.find_spec("xllamacpp") is not None, what="LOCAL", reason="needs xllamacpp"
    )
    from rondo.models.local import LocalModel

    weights = tmp_path / "m.gguf"
    weights.write_bytes(b"GGUF")  # never loaded: the window is known without the weights
    assert LocalModel(weights, n_ctx=2048).context_window == 2048
    assert LocalModel(weights, n_ctx=64).context_window == 256  # llama.cpp's minimum
