"""`OpenAIModel`: OpenAI's Chat Completions API, and any server that speaks it.

`Agent(model="openai:gpt-4o-mini")` resolves here. The same adapter drives OpenAI-compatible
servers (llama.cpp, vLLM, Ollama, LM Studio) through `base_url` / `OPENAI_BASE_URL`.
"""

from __future__ import annotations

try:
    import openai
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "rondo.models.openai needs the OpenAI SDK: pip install 'rondo-agents[openai]'"
    ) from exc

from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Literal, TypeVar

from openai import AsyncOpenAI, AsyncStream, Omit, omit
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from rondo.errors import ModelConnectionError, ModelError, ModelTimeoutError
from rondo.models._openai_wire import (
    ChunkReader,
    build_messages,
    build_response_format,
    build_tool_choice,
    build_tools,
    parse_completion,
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

__all__ = ["OpenAIModel", "RetryPolicy", "from_model_string"]

T = TypeVar("T")

# Local servers ignore the key, but the SDK insists on one.
_PLACEHOLDER_KEY = "not-needed"


# V1: OpenAI's models API says nothing of context windows, and no maintained package has
# them (genai-prices has prices only), so this small table of model families — the input
# window OpenAI's model pages state — is the source; the longest matching prefix wins, and a
# name it does not know (another server's model) has no window. Set `context_window` to
# override. Checked against platform.openai.com/docs/models, 2026-12.
_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-5-chat", 128_000),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
)


def openai_context_window(name: str) -> int | None:
    """The context window of an OpenAI model family (`_CONTEXT_WINDOWS`), or None."""
    best: tuple[str, int] | None = None
    for prefix, window in _CONTEXT_WINDOWS:
        if name.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, window)
    return best[1] if best is not None else None


def _given(value: T | None) -> T | Omit:
    return omit if value is None else value


class OpenAIModel(SdkModel[AsyncOpenAI]):
    """A model behind the OpenAI Chat Completions API.

    `base_url` and `api_key` default to `OPENAI_BASE_URL` and `OPENAI_API_KEY`. A key is
    required for OpenAI itself; a custom `base_url` (a local server) works without one.
    Pass `http_client` (an async httpx client the SDK accepts) or a ready `client` to control
    transport; `retry` replaces the SDK's own retries. `max_tokens_param` picks the request
    field for `max_output_tokens`: OpenAI wants `max_completion_tokens`, most compatible
    servers only know `max_tokens` (the default when `base_url` is not OpenAI's).
    `send_cache_key`: send the per-session `prompt_cache_key` (default: to OpenAI only).
    """

    def __init__(
        self,
        name: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        organization: str | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        client: AsyncOpenAI | None = None,
        max_tokens_param: Literal["max_tokens", "max_completion_tokens"] | None = None,
        stream_usage: bool = True,
        capabilities: ModelCapabilities | None = None,
        send_cache_key: bool | None = None,
    ) -> None:
        self.name = name
        self.context_window = openai_context_window(name)
        self.retry = retry or RetryPolicy()
        self.stream_usage = stream_usage
        self.capabilities = capabilities or ModelCapabilities(
            response_schema=True, response_schema_with_tools=True, streaming=True
        )
        resolved_url = base_url or env_value("OPENAI_BASE_URL")
        official = resolved_url is None or "api.openai.com" in resolved_url
        # OpenAI's `prompt_cache_key` (K3): sent to OpenAI itself; other servers may refuse
        # a parameter they do not know, so there it is sent only when asked for.
        self.send_cache_key = official if send_cache_key is None else send_cache_key
        self.max_tokens_param = max_tokens_param or (
            "max_completion_tokens" if official else "max_tokens"
        )
        if client is not None:
            # One retry policy: ours. The copy shares the caller's connection pool.
            shared = client.with_options(max_retries=0)
            self._clients: PerLoop[AsyncOpenAI] | None = None
            self._shared: AsyncOpenAI | None = shared
            return
        key = api_key or env_value("OPENAI_API_KEY")
        if key is None:
            if official:
                raise missing_key_error(f"openai:{name}", ["OPENAI_API_KEY"])
            key = _PLACEHOLDER_KEY

        def make() -> AsyncOpenAI:
            return AsyncOpenAI(
                api_key=key,
                base_url=resolved_url,
                organization=organization,
                timeout=timeout if timeout is not None else openai.DEFAULT_TIMEOUT,
                max_retries=0,
                default_headers=default_headers,
                http_client=http_client,
            )

        if http_client is not None:
            # The caller owns the transport (and its event loop).
            self._shared = make()
            self._clients = None
        else:
            self._shared = None
            self._clients = PerLoop(make)

    provider = "openai"

    async def _close_client(self, client: AsyncOpenAI) -> None:
        await client.close()

    @staticmethod
    def _is_transient(exc: BaseException) -> bool:
        return _is_transient_error(exc)

    @staticmethod
    def _retry_after(exc: BaseException) -> float | None:
        return _retry_after_seconds(exc)

    @staticmethod
    def _failure_kind(exc: BaseException) -> type[ModelError] | None:
        if isinstance(exc, openai.APITimeoutError):
            return ModelTimeoutError
        if isinstance(exc, openai.APIConnectionError):
            return ModelConnectionError
        return None

    async def _complete(self, request: ModelRequest) -> AsyncGenerator[ModelResponse, None]:
        completion = await self._create(request, stream=False)
        assert isinstance(completion, ChatCompletion)
        yield parse_completion(completion, include_thoughts=_include_thoughts(request))

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[ModelResponse, None]:
        chunks = await self._create(request, stream=True)
        assert isinstance(chunks, AsyncStream)
        aggregator = StreamAggregator()
        reader = ChunkReader(include_thoughts=_include_thoughts(request))
        async with chunks:
            async for chunk in chunks:
                partial = aggregator.add(reader.read(chunk))
                if partial.content is not None or partial.error_code is not None:
                    yield partial
        tail = reader.close()
        if tail is not None:
            yield aggregator.add(tail)
        final = aggregator.close()  # A3: reached only when the stream ended normally
        if final is not None:
            yield final

    async def _create(
        self, request: ModelRequest, *, stream: bool
    ) -> ChatCompletion | AsyncStream[ChatCompletionChunk]:
        config = request.config
        tools = build_tools(config.tools)
        choice = build_tool_choice(config.tool_choice) if tools else None
        response_format = build_response_format(config)
        max_tokens = config.max_output_tokens
        extra: dict[str, object] = {}
        if config.top_k is not None:
            extra["top_k"] = config.top_k  # not OpenAI's, but most compatible servers take it
        if config.extra:
            extra.update(config.extra)
        return await self._client().chat.completions.create(
            model=self.name,
            messages=build_messages(config.system_instruction, request.contents),
            tools=tools if tools else omit,
            tool_choice=_given(choice),
            response_format=_given(response_format),
            temperature=_given(config.temperature),
            top_p=_given(config.top_p),
            seed=_given(config.seed),
            stop=config.stop_sequences if config.stop_sequences else omit,
            max_tokens=_given(max_tokens if self.max_tokens_param == "max_tokens" else None),
            max_completion_tokens=_given(
                max_tokens if self.max_tokens_param == "max_completion_tokens" else None
            ),
            stream=stream,
            stream_options={"include_usage": True} if stream and self.stream_usage else omit,
            prompt_cache_key=_given(
                config.prompt_cache_key if config.prompt_cache and self.send_cache_key else None
            ),
            extra_body=extra or None,
        )


def _include_thoughts(request: ModelRequest) -> bool:
    return request.config.include_thoughts is not False


def _is_transient_error(exc: BaseException) -> bool:
    if isinstance(exc, openai.APIStatusError):
        return is_transient_status(exc.status_code)
    if isinstance(exc, openai.APIConnectionError):
        return True  # includes timeouts
    return is_transport_error(exc)


def _retry_after_seconds(exc: BaseException) -> float | None:
    if isinstance(exc, openai.APIStatusError):
        return retry_after_seconds(exc.response.headers)
    return None


def from_model_string(name: str) -> OpenAIModel:
    """The model for `"openai:<name>"`, configured from the environment."""
    return OpenAIModel(name)
