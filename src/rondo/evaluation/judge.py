"""The judge: any rondo `Model`, asked one prompt at a time, `num_samples` times per invocation.

A judge model is named as ADK's `judge_model_options.judge_model` names it. A rondo model
string (`"openai:gpt-4o-mini"`, `"local:smollm2"`) resolves as everywhere in rondo; a bare
model name as ADK writes it resolves to its provider's adapter by its family: `gemini-*` to
Gemini, `gpt-*` / `o1`… / `chatgpt-*` to OpenAI, `claude-*` to Anthropic. Anything else is a
`ModelNotFoundError` that says how to name the provider.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from rondo.errors import ModelError, ModelNotFoundError
from rondo.evaluation.cost import record_call
from rondo.models.base import GenerateConfig, Model, ModelRequest
from rondo.models.registry import resolve_model
from rondo.types import Content

__all__ = ["JudgeResolver", "ask_judge", "provider_of", "resolve_judge_model", "sample"]

JudgeResolver = Callable[[str], Model]
"""Turns a `judge_model` name into the model that judges (the CLI wraps it for cassettes)."""

_FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(gemini|gemma|learnlm)-", re.IGNORECASE), "gemini"),
    (re.compile(r"^(gpt-|chatgpt-|o\d)", re.IGNORECASE), "openai"),
    (re.compile(r"^claude-", re.IGNORECASE), "anthropic"),
)

T = TypeVar("T")


def provider_of(name: str) -> str | None:
    """The rondo provider prefix a bare ADK model name belongs to, or None if unknown."""
    for pattern, provider in _FAMILIES:
        if pattern.match(name):
            return provider
    return None


def resolve_judge_model(name: str) -> Model:
    """The model `judge_model` names: a rondo model string, or a bare ADK model name."""
    if ":" in name:
        return resolve_model(name)
    provider = provider_of(name)
    if provider is None:
        raise ModelNotFoundError(
            f"judge model {name!r}: cannot tell its provider; write it as 'provider:model' "
            "(e.g. 'openai:gpt-4o-mini', 'local:smollm2')"
        )
    return resolve_model(f"{provider}:{name}")


def _text(content: Content | None) -> str | None:
    # As ADK reads a judge's answer: every text part, joined by newlines; None without any.
    if content is None or not content.parts:
        return None
    return "\n".join(p.text for p in content.parts if p.text)


async def ask_judge(model: Model, prompt: str) -> str | None:
    """One judge call: `prompt` as the user's message; the text of the final response."""
    request = ModelRequest(
        model=model.name, contents=[Content.user(prompt)], config=GenerateConfig()
    )
    answer: str | None = None
    responses = model.generate(request, stream=False)
    try:
        async for response in responses:
            if not response.partial:
                answer = _text(response.content)
                record_call(model, response.usage)  # the case's cost counts its judges
    finally:
        aclose = getattr(responses, "aclose", None)  # the protocol promises an iterator only
        if aclose is not None:
            await aclose()
    return answer


async def sample(
    calls: Sequence[Callable[[], Awaitable[T]]], parallelism_limit: int
) -> list[T | BaseException]:
    """Run the judge calls, at most `parallelism_limit` at once, results in the order of `calls`.

    A provider failure (`ModelError`) is kept as a value: as in ADK, it leaves its invocation
    not evaluated. Anything else — a replay that diverges from its cassette, a bug — is raised.
    """
    gate = asyncio.Semaphore(max(1, parallelism_limit))

    async def one(call: Callable[[], Awaitable[T]]) -> T | BaseException:
        async with gate:
            try:
                return await call()
            except ModelError as exc:
                return exc

    if parallelism_limit <= 1:
        return [await one(call) for call in calls]
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(call)) for call in calls]
    return [task.result() for task in tasks]
