"""`GeminiModel`: Gemini through the google-genai SDK (Gemini API or Vertex AI).

`Agent(model="gemini:gemini-2.5-flash")` resolves here. Function calls keep their ids and thought
signatures; thought parts, grounding and citation metadata come through.
"""

from __future__ import annotations

try:
    from google import genai
    from google.genai import errors, types
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "rondo.models.gemini needs the google-genai SDK: pip install 'rondo-agents[gemini]'"
    ) from exc

import re
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from rondo.models._gemini_wire import ResponseReader, build_config, build_contents
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

__all__ = ["GeminiModel", "RetryPolicy", "from_model_string"]

_VERSION = re.compile(r"gemini-(\d+)")


class _AsyncModels(Protocol):
    """The part of `client.aio.models` used here, typed with what rondo passes: the SDK's own
    signatures accept PIL images, which the type checker cannot see without Pillow."""

    async def generate_content(
        self, *, model: str, contents: list[types.Content], config: types.GenerateContentConfig
    ) -> types.GenerateContentResponse: ...

    async def generate_content_stream(
        self, *, model: str, contents: list[types.Content], config: types.GenerateContentConfig
    ) -> AsyncIterator[types.GenerateContentResponse]: ...


def _schema_with_tools(name: str) -> bool:
    # Gemini 3 and later accept a response schema together with function declarations;
    # earlier models reject the combination, so the loop falls back to a tool (SPEC S2).
    match = _VERSION.search(name)
    return match is not None and int(match.group(1)) >= 3


def _vertex_from_env() -> bool:
    return (env_value("GOOGLE_GENAI_USE_VERTEXAI") or "").lower() in ("1", "true")


class GeminiModel(SdkModel[genai.Client]):
    """A Gemini model, through the Gemini Developer API or Vertex AI.

    `api_key` defaults to `GOOGLE_API_KEY` or `GEMINI_API_KEY` (the SDK's order). With
    `vertexai=True` (or `GOOGLE_GENAI_USE_VERTEXAI=true`) the SDK authenticates with Google
    Cloud credentials instead and `project` / `location` apply.
    """

    def __init__(
        self,
        name: str,
        *,
        api_key: str | None = None,
        vertexai: bool | None = None,
        project: str | None = None,
        location: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        client: genai.Client | None = None,
        capabilities: ModelCapabilities | None = None,
    ) -> None:
        self.name = name
        self.retry = retry or RetryPolicy()
        self.capabilities = capabilities or ModelCapabilities(
            response_schema=True,
            response_schema_with_tools=_schema_with_tools(name),
            streaming=True,
        )
        if client is not None:
            # The caller's client keeps its own retry options; the SDK's default is none.
            self._shared: genai.Client | None = client
            self._clients: PerLoop[genai.Client] | None = None
            return
        vertex = vertexai if vertexai is not None else _vertex_from_env()
        key = api_key or env_value("GOOGLE_API_KEY", "GEMINI_API_KEY")
        if key is None and not vertex:
            raise missing_key_error(f"gemini:{name}", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
        options = types.HttpOptions(
            base_url=base_url,
            headers=dict(headers) if headers else None,
            timeout=int(timeout * 1000) if timeout is not None else None,
            httpx_async_client=http_client,
            retry_options=None,  # one retry policy: ours
        )

        def make() -> genai.Client:
            return genai.Client(
                api_key=key,
                vertexai=vertex or None,
                project=project,
                location=location,
                http_options=options,
            )

        if http_client is not None:
            self._shared, self._clients = make(), None
        else:
            self._shared, self._clients = None, PerLoop(make)

    provider = "gemini"

    def _models(self) -> _AsyncModels:
        return cast(_AsyncModels, self._client().aio.models)

    async def _close_client(self, client: genai.Client) -> None:
        await client.aio.aclose()

    @staticmethod
    def _is_transient(exc: BaseException) -> bool:
        return _is_transient_error(exc)

    @staticmethod
    def _retry_after(exc: BaseException) -> float | None:
        return _retry_after_seconds(exc)

    async def _complete(self, request: ModelRequest) -> AsyncGenerator[ModelResponse, None]:
        response = await self._models().generate_content(
            model=self.name,
            contents=build_contents(request.contents),
            config=build_config(request.config),
        )
        yield ResponseReader().read(response, partial=False)

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[ModelResponse, None]:
        chunks = await self._models().generate_content_stream(
            model=self.name,
            contents=build_contents(request.contents),
            config=build_config(request.config),
        )
        aggregator = StreamAggregator()
        reader = ResponseReader()
        try:
            async for chunk in chunks:
                partial = aggregator.add(reader.read(chunk, partial=True))
                if partial.content is not None or partial.error_code is not None:
                    yield partial
        finally:
            close: Any = getattr(chunks, "aclose", None)
            if close is not None:
                await close()
        final = aggregator.close()  # A3: reached only when the stream ended normally
        if final is not None:
            yield final


def _is_transient_error(exc: BaseException) -> bool:
    if isinstance(exc, errors.APIError):
        return is_transient_status(exc.code)
    return is_transport_error(exc)


def _retry_after_seconds(exc: BaseException) -> float | None:
    if isinstance(exc, errors.APIError):
        response: object = getattr(exc, "response", None)
        headers: object = getattr(response, "headers", None)
        if isinstance(headers, Mapping):
            return retry_after_seconds(cast(Mapping[str, str], headers))
    return None


def from_model_string(name: str) -> GeminiModel:
    """The model for `"gemini:<name>"`, configured from the environment."""
    return GeminiModel(name)
