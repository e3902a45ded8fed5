"""`AnthropicModel`: Claude through the Anthropic Messages API.

`Agent(model="anthropic:claude-sonnet-4-5")` resolves here. Tool use, thinking blocks (as thought
parts that keep their signatures), structured output and streaming are supported.
"""

from __future__ import annotations

try:
    import anthropic
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "rondo.models.anthropic needs the Anthropic SDK: pip install 'rondo-agents[anthropic]'"
    ) from exc

from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, TypeVar, cast

from anthropic import AsyncAnthropic, AsyncStream, Omit, omit
from anthropic.types import Message, RawMessageStreamEvent

from rondo.errors import (
    ModelAuthError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelServerError,
    ModelTimeoutError,
)
from rondo.models._anthropic_wire import (
    EventReader,
    build_messages,
    build_output_config,
    build_system,
    build_thinking,
    build_tool_choice,
    build_tools,
    mark_cache_breakpoints,
    parse_message,
)
from rondo.models._retry import (
    RetryPolicy,
    is_transient_status,
    is_transport_error,
    retry_after_seconds,
)
from rondo.models._sdk import SdkModel
from rondo.models._shared import PerLoop, env_value, missing_key_error
from rondo.models.aggregator import StreamAggregator
from rondo.models.base import ModelCapabilities, ModelRequest, ModelResponse

if TYPE_CHECKING:
    import httpx2

__all__ = ["AnthropicModel", "RetryPolicy", "from_model_string"]

T = TypeVar("T")

# Error types the API may send inside an event stream that a later attempt can get past.
_TRANSIENT_ERROR_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error"})
# What each error type the API reports means for the caller (G4).
_STREAM_ERRORS: dict[str, type[ModelError]] = {
    "overloaded_error": ModelServerError,
    "api_error": ModelServerError,
    "rate_limit_error": ModelRateLimitError,
    "invalid_request_error": ModelBadRequestError,
    "request_too_large": ModelBadRequestError,
    "not_found_error": ModelBadRequestError,
    "authentication_error": ModelAuthError,
    "permission_error": ModelAuthError,
}


def _given(value: T | None) -> T | Omit:
    return omit if value is None else value


class AnthropicModel(SdkModel[AsyncAnthropic]):
    """A Claude model behind the Anthropic Messages API.

    `api_key` defaults to `ANTHROPIC_API_KEY` (or a bearer `ANTHROPIC_AUTH_TOKEN`), `base_url`
    to `ANTHROPIC_BASE_URL`. The API
    requires a token limit: `max_output_tokens` from the request, else `max_tokens` here
    (raised above the thinking budget when the request sets one). Sampling settings
    (`temperature`, `top_p`, `top_k`) are sent as given; some Claude models reject them.
    """

    def __init__(
        self,
        name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        max_tokens: int = 4096,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        client: AsyncAnthropic | None = None,
        capabilities: ModelCapabilities | None = None,
    ) -> None:
        self.name = name
        self.retry = retry or RetryPolicy()
        self.max_tokens = max_tokens
        self.capabilities = capabilities or ModelCapabilities(
            response_schema=True, response_schema_with_tools=True, streaming=True
        )
        if client is not None:
            self._shared: AsyncAnthropic | None = client.with_options(max_retries=0)
            self._clients: PerLoop[AsyncAnthropic] | None = None
            return
        key = api_key or env_value("ANTHROPIC_API_KEY")
        # A bearer token (gateways, proxies) stands in for the key.
        token = None if key else env_value("ANTHROPIC_AUTH_TOKEN")
        if key is None and token is None:
            raise missing_key_error(f"anthropic:{name}", ["ANTHROPIC_API_KEY"])
        url = base_url or env_value("ANTHROPIC_BASE_URL")

        def make() -> AsyncAnthropic:
            return AsyncAnthropic(
                api_key=key,
                auth_token=token,
                base_url=url,
                timeout=timeout if timeout is not None else anthropic.DEFAULT_TIMEOUT,
                max_retries=0,
                default_headers=default_headers,
                http_client=http_client,
            )

        if http_client is not None:
            self._shared, self._clients = make(), None
        else:
            self._shared, self._clients = None, PerLoop(make)

    provider = "anthropic"

    async def _fetch_context_window(self) -> int | None:
        # Anthropic's Models API says each model's input window (`max_input_tokens`).
        info = await self._client().models.retrieve(self.name)
        return info.max_input_tokens

    async def _close_client(self, client: AsyncAnthropic) -> None:
        await client.close()

    @staticmethod
    def _is_transient(exc: BaseException) -> bool:
        return _is_transient_error(exc)

    @staticmethod
    def _retry_after(exc: BaseException) -> float | None:
        return _retry_after_seconds(exc)

    @staticmethod
    def _failure_kind(exc: BaseException) -> type[ModelError] | None:
        if isinstance(exc, anthropic.APITimeoutError):
            return ModelTimeoutError
        if isinstance(exc, anthropic.APIConnectionError):
            return ModelConnectionError
        if isinstance(exc, anthropic.APIStatusError):
            # An `error` event inside a 200 stream: judge it by the error's type.
            return _STREAM_ERRORS.get(_error_type(exc.body) or "")
        return None

    async def _complete(self, request: ModelRequest) -> AsyncGenerator[ModelResponse, None]:
        message = await self._create(request, stream=False)
        assert isinstance(message, Message)
        yield parse_message(message)

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[ModelResponse, None]:
        events = await self._create(request, stream=True)
        assert isinstance(events, AsyncStream)
        aggregator = StreamAggregator()
        reader = EventReader()
        async with events:
            async for event in events:
                chunk = reader.read(event)
                if chunk is None:
                    continue
                partial = aggregator.add(chunk)
                if partial.content is not None or partial.error_code is not None:
                    yield partial
        final = aggregator.close()  # A3: reached only when the stream ended normally
        if final is not None:
            yield final

    async def _create(
        self, request: ModelRequest, *, stream: bool
    ) -> Message | AsyncStream[RawMessageStreamEvent]:
        config = request.config
        tools = build_tools(config.tools)
        choice = build_tool_choice(config.tool_choice) if tools else None
        thinking = build_thinking(config)
        max_tokens = config.max_output_tokens
        if max_tokens is None:
            max_tokens = self.max_tokens
            budget = config.thinking_budget or 0
            if budget >= max_tokens:
                max_tokens = budget + self.max_tokens  # the budget must stay below the limit
        extra: dict[str, object] = {}
        # No longer typed parameters of the SDK, but still accepted by the models that allow them.
        for key, value in (
            ("temperature", config.temperature),
            ("top_p", config.top_p),
            ("top_k", config.top_k),
        ):
            if value is not None:
                extra[key] = value
        if config.extra:
            extra.update(config.extra)
        cache = bool(config.prompt_cache)
        messages = build_messages(request.contents)
        system = build_system(config.system_instruction, cache=cache)
        if cache:
            mark_cache_breakpoints(messages, tools, system=system is not None)
        return await self._client().messages.create(
            model=self.name,
            max_tokens=max_tokens,
            messages=messages,
            system=_given(system),
            tools=tools if tools else omit,
            tool_choice=_given(choice),
            thinking=_given(thinking),
            output_config=_given(build_output_config(config)),
            stop_sequences=config.stop_sequences if config.stop_sequences else omit,
            stream=stream,
            extra_body=extra or None,
        )


def _is_transient_error(exc: BaseException) -> bool:
    if isinstance(exc, anthropic.APIStatusError):
        if is_transient_status(exc.status_code):
            return True
        # An `error` event inside a 200 stream: judge it by the error's type.
        return _error_type(exc.body) in _TRANSIENT_ERROR_TYPES
    if isinstance(exc, anthropic.APIConnectionError):
        return True  # includes timeouts
    return is_transport_error(exc)


def _error_type(body: object) -> str | None:
    error = cast(dict[str, object], body).get("error") if isinstance(body, dict) else None
    kind = cast(dict[str, object], error).get("type") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else None


def _retry_after_seconds(exc: BaseException) -> float | None:
    if isinstance(exc, anthropic.APIStatusError):
        return retry_after_seconds(exc.response.headers)
    return None


def from_model_string(name: str) -> AnthropicModel:
    """The model for `"anthropic:<name>"`, configured from the environment."""
    return AnthropicModel(name)
