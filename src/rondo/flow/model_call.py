"""The model boundary of one step: hooks around the model call (SPEC M1–M4, F7)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

from rondo._callbacks import first_result
from rondo._frozen import ReadOnlyList, replaced
from rondo._ids import new_client_call_id
from rondo._state_values import check_state_delta
from rondo.errors import (
    InvalidCallbackError,
    InvalidStateValueError,
    LlmCallsLimitExceeded,
    ModelResponseError,
    ModelTimeoutError,
)
from rondo.models.base import ModelRequest, ModelResponse
from rondo.models.pricing import priced
from rondo.plugins import plugins_of
from rondo.types import Content

if TYPE_CHECKING:
    from rondo.context import CallbackContext, InvocationContext
    from rondo.flow.views import LlmAgentView
    from rondo.models.base import Model
    from rondo.telemetry import ModelTrace

__all__ = ["call_model", "populate_client_call_ids"]


def populate_client_call_ids(response: ModelResponse) -> ModelResponse:
    """The response with an id on every function call, so its response can be paired with it
    (SPEC R2); the same object when every call has one."""
    content = response.content
    if content is None:
        return response
    parts = content.parts
    if all(p.function_call is None or p.function_call.id for p in parts):
        return response
    fresh = [
        replaced(p, function_call=replaced(p.function_call, id=new_client_call_id()))
        if p.function_call is not None and not p.function_call.id
        else p
        for p in parts
    ]
    return replaced(response, content=replaced(content, parts=ReadOnlyList(fresh)))


def check_calls(response: ModelResponse, model: str) -> ModelResponse:
    """G3/G4: the function calls of a final response are stored, so they must be storable —
    a name, and JSON arguments — or the call is a model error (and the session stays
    loadable)."""
    content = response.content
    if content is None or response.partial:
        return response
    for part in content.parts:
        call = part.function_call
        if call is None:
            continue
        if not isinstance(call.name, str) or not call.name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ModelResponseError(f"model {model!r} returned a function call without a name")
        if call.args:
            try:
                check_state_delta(call.args, what="argument")
            except InvalidStateValueError as exc:
                raise ModelResponseError(
                    f"model {model!r} returned a call to {call.name!r} that cannot be stored: {exc}"
                ) from exc
    return response


def _as_response(value: Any, hook: str) -> ModelResponse:
    if isinstance(value, ModelResponse):
        return value
    if isinstance(value, str):
        return ModelResponse(content=Content.model(value))
    raise InvalidCallbackError(
        f"{hook} must return a ModelResponse or None, got {type(value).__name__}"
    )


async def _after_model(
    agent: LlmAgentView, ctx: InvocationContext, cb_ctx: CallbackContext, response: ModelResponse
) -> ModelResponse:
    # M1: plugin.after_model, then the agent's; the first non-None result wins.
    replaced = await plugins_of(ctx).run("after_model", cb_ctx, response)
    if replaced is None and agent.after_model_callbacks:
        replaced = await first_result(agent.after_model_callbacks, cb_ctx, response)
    return response if replaced is None else _as_response(replaced, "after_model")


async def _recover(
    agent: LlmAgentView,
    ctx: InvocationContext,
    cb_ctx: CallbackContext,
    request: ModelRequest,
    error: Exception,
) -> ModelResponse:
    # M3: a replacement response recovers; None keeps the error; a raised error replaces it.
    replacement = await plugins_of(ctx).run("on_model_error", cb_ctx, request, error)
    if replacement is None and agent.on_model_error_callbacks:
        replacement = await first_result(agent.on_model_error_callbacks, cb_ctx, request, error)
    if replacement is None:
        raise error
    if isinstance(replacement, BaseException):
        raise replacement
    return _as_response(replacement, "on_model_error")


async def _next_before(
    responses: AsyncIterator[ModelResponse],
    deadline: float,
    seconds: Any,
    name: str,
    traced: ModelTrace | None,
) -> ModelResponse:
    """The next response, or `ModelTimeoutError` once the call's deadline passed (D3)."""
    scope = asyncio.timeout_at(deadline)
    try:
        async with scope:
            return await (anext(responses) if traced is None else traced.next(responses))
    except TimeoutError:
        if scope.expired():
            raise ModelTimeoutError(
                f"model {name!r} did not answer within RunConfig.model_timeout={seconds:g} s"
            ) from None
        raise


async def call_model(
    agent: LlmAgentView,
    model: Model,
    ctx: InvocationContext,
    request: ModelRequest,
    cb_ctx: CallbackContext,
) -> AsyncGenerator[ModelResponse, None]:
    """Yield the responses of one model call, after the hooks of SPEC M1 ran on each."""
    demand = ctx.demand
    if demand.paused:
        await demand.wait()  # R7: nothing starts while the consumer is not asking
    plugins = plugins_of(ctx)
    response: Any = None
    if "before_model" in plugins.active:
        response = await plugins.run("before_model", cb_ctx, request)
    if response is None and agent.before_model_callbacks:
        response = await first_result(agent.before_model_callbacks, cb_ctx, request)
    if response is not None:
        # M2: the model and after_model are skipped; the step still builds an event from it.
        yield populate_client_call_ids(_as_response(response, "before_model"))
        return

    limit = ctx.run_config.max_llm_calls
    if limit > 0 and ctx.llm_calls >= limit:
        raise LlmCallsLimitExceeded(
            f"the invocation reached max_llm_calls={limit}; raise RunConfig.max_llm_calls "
            "if the agent needs more model calls",
            limit=limit,
            used=ctx.llm_calls,
        )
    ctx.count_llm_call()
    if ctx.guard is not None:
        ctx.guard.model_calls += 1  # G6: real calls, sub-runs' included (they share it)
    run_after = "after_model" in plugins.active or bool(agent.after_model_callbacks)
    # O1: a `chat {model}` span when an SDK records; the loop ends it with the model's event.
    traced = ctx.trace.model_call(model, request) if ctx.trace is not None else None
    timeout = ctx.run_config.model_timeout
    deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
    responses = model.generate(request, stream=ctx.run_config.streaming_mode == "sse")
    steps = ctx.run_config.durable_steps
    if steps is not None:  # D2: the model call is the engine's step
        responses = steps.model_call(agent.name, model.name, responses)
    try:
        while True:
            try:
                # An unstorable call is the model's failure: on_model_error may recover it.
                if deadline is not None:
                    raw = await _next_before(responses, deadline, timeout, model.name, traced)
                elif traced is None:
                    raw = await anext(responses)
                else:
                    raw = await traced.next(responses)
                response = check_calls(raw, model.name)
            except StopAsyncIteration:
                break
            except Exception as exc:
                if traced is not None:
                    traced.failed(exc)
                response = populate_client_call_ids(
                    await _recover(agent, ctx, cb_ctx, request, exc)
                )
                yield await _after_model(agent, ctx, cb_ctx, response) if run_after else response
                return
            response = populate_client_call_ids(response)
            if not response.partial and response.usage is not None:
                # O6: the call's price travels with its usage into the record.
                usage = priced(model, response.usage)
                if usage is not response.usage:
                    response = replaced(response, usage=usage)
                guard = ctx.guard
                if guard is not None and usage is not None:
                    # G6: what the budgets count, in line (issue 24.7).
                    guard.reported += 1
                    guard.tokens += usage.input_tokens + usage.output_tokens
                    spent, price = guard.cost, usage.cost_usd
                    guard.cost = None if spent is None or price is None else spent + price
            if traced is not None and not response.partial:
                traced.response(response)
            if run_after:
                response = await _after_model(agent, ctx, cb_ctx, response)
            yield response
    except BaseException as exc:
        if traced is not None and not isinstance(exc, GeneratorExit):
            traced.failed(exc)
        raise
    finally:
        if traced is not None:
            traced.finish()  # a no-op when the loop ended it with its event
        aclose = getattr(responses, "aclose", None)
        if aclose is not None:
            await aclose()
