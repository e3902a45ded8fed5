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

import logging
import re
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from rondo.models._gemini_wire import (
    CACHED_FIELDS,
    ResponseReader,
    build_config,
    build_contents,
    cached_request_config,
    content_digests,
    estimate_tokens,
    prefix_digest,
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

__all__ = ["ContextCache", "GeminiModel", "RetryPolicy", "from_model_string"]

logger = logging.getLogger("rondo.models.gemini")

# Gemini's smallest cacheable prefix is 1,024 tokens on Flash models and up to 4,096 on Pro ones;
# below the larger figure implicit caching (automatic, nothing sent) is left to do the work.
DEFAULT_CACHE_MIN_TOKENS = 4096
DEFAULT_CACHE_TTL = 3600.0

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
    Cloud credentials instead and `project` / `location` apply. Long reused prefixes get an
    explicit context cache (`cache_min_tokens`, `cache_ttl`: see `ContextCache`).
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
        cache_min_tokens: int = DEFAULT_CACHE_MIN_TOKENS,
        cache_ttl: float = DEFAULT_CACHE_TTL,
    ) -> None:
        self.name = name
        self.context_cache = ContextCache(min_tokens=cache_min_tokens, ttl=cache_ttl)
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

    async def _fetch_context_window(self) -> int | None:
        # The Gemini API's model metadata says each model's input window.
        info = await self._client().aio.models.get(model=self.name)
        return info.input_token_limit

    @staticmethod
    def _is_transient(exc: BaseException) -> bool:
        return _is_transient_error(exc)

    @staticmethod
    def _retry_after(exc: BaseException) -> float | None:
        return _retry_after_seconds(exc)

    async def _wire(
        self, request: ModelRequest
    ) -> tuple[list[types.Content], types.GenerateContentConfig]:
        contents, config = build_contents(request.contents), build_config(request.config)
        key = request.config.prompt_cache_key
        if not request.config.prompt_cache or key is None:
            return contents, config
        caches = cast(_AsyncCaches, self._client().aio.caches)
        return await self.context_cache.prepare(caches, self.name, contents, config, key)

    async def release_session(self, cache_key: str) -> int:
        """Delete the cached contents made for the session with `cache_key` (issue 25:
        deleted with the session; a cache this process did not make lapses by its TTL)."""
        if not self.context_cache.holds(cache_key):
            return 0  # nothing to delete: no client is opened for it
        caches = cast(_AsyncCaches, self._client().aio.caches)
        return await self.context_cache.release(caches, cache_key)

    async def _complete(self, request: ModelRequest) -> AsyncGenerator[ModelResponse, None]:
        contents, config = await self._wire(request)
        response = await self._models().generate_content(
            model=self.name, contents=contents, config=config
        )
        yield ResponseReader().read(response, partial=False)

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[ModelResponse, None]:
        contents, config = await self._wire(request)
        chunks = await self._models().generate_content_stream(
            model=self.name, contents=contents, config=config
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


# -- explicit context caching (K3) ----------------------------------------------------------------

# A request sent this close to a cache's expiry does not name it: it could vanish in flight.
_EXPIRY_MARGIN = 60.0
_MAX_PREFIXES = 1024


class _AsyncCaches(Protocol):
    async def create(
        self, *, model: str, config: types.CreateCachedContentConfig
    ) -> types.CachedContent: ...

    async def delete(self, *, name: str) -> Any: ...


@dataclass
class _Prefix:
    """One session's stable prefix under one system instruction and tool set."""

    seen: list[str]  # digests of the last request's contents
    key: str  # the session's prompt-cache key
    name: str | None = None  # the cached content, when there is one
    covered: int = 0  # how many leading contents it holds
    expires: float = 0.0
    refused: bool = False  # the API refused a cache here: do not ask on every step


class ContextCache:
    """Gemini explicit context caching for one model (K3), off when `prompt_cache` is False.

    A cache is created (`caches.create`) only for a prefix that is reused — the leading
    contents a request shares with the previous request of the same session, system instruction
    and tools — and only when that prefix, with the system instruction and tools, is estimated
    at `min_tokens` or more. Requests whose contents still start with the cached ones name it
    (`cached_content`) and send only the uncached tail. It is replaced (the old one deleted)
    when the prefix changes (compaction, a rewind) or when the uncached tail has itself grown
    past `min_tokens`, and it lapses after `ttl` seconds. Smaller or one-off prefixes get
    Gemini's implicit caching. Deleting the session deletes its caches (`release`, called by
    `Runner.delete_session_async` and the server's DELETE session route); a cache this process
    does not know of (made by another replica, or before a restart) lapses by its TTL.
    """

    def __init__(self, *, min_tokens: int, ttl: float) -> None:
        self.min_tokens = min_tokens
        self.ttl = ttl
        self._prefixes: OrderedDict[str, _Prefix] = OrderedDict()

    async def prepare(
        self,
        caches: _AsyncCaches,
        model: str,
        contents: list[types.Content],
        config: types.GenerateContentConfig,
        key: str,
    ) -> tuple[list[types.Content], types.GenerateContentConfig]:
        """The contents and config to send: the tail and the cache's name, or both unchanged."""
        prefix = prefix_digest(model, config, key)
        digests = content_digests(contents)
        state = self._prefixes.get(prefix)
        if state is None:
            self._remember(prefix, _Prefix(seen=digests, key=key))
            return contents, config
        self._prefixes.move_to_end(prefix)
        now = time.monotonic()
        live = state.name is not None and now < state.expires
        usable = (
            live
            and 0 < state.covered < len(digests)
            and digests[: state.covered] == (state.seen[: state.covered])
        )
        tail = contents[state.covered :]
        if usable and estimate_tokens(_NO_CONFIG, tail) < self.min_tokens:
            state.seen = digests
            return tail, cached_request_config(config, cast(str, state.name))
        shared = len(digests) - 1 if usable else _common_length(state.seen, digests)
        shared = min(shared, len(digests) - 1)
        name: str | None = None
        worth = shared > 0 and estimate_tokens(config, contents[:shared]) >= self.min_tokens
        if worth and not state.refused:
            name = await self._create(caches, model, config, contents[:shared], state)
        if name is None and usable:
            state.seen = digests  # the longer prefix could not be cached: keep the old one
            return tail, cached_request_config(config, cast(str, state.name))
        if live and state.name is not None:
            await self._delete(caches, state.name)
        state.seen, state.name, state.covered = digests, name, shared if name else 0
        state.expires = now + self.ttl - _EXPIRY_MARGIN
        if name is None:
            return contents, config
        return contents[shared:], cached_request_config(config, name)

    def holds(self, key: str) -> bool:
        """Whether a live cache was made for the session with `key`."""
        return any(s.key == key and s.name is not None for s in self._prefixes.values())

    async def release(self, caches: _AsyncCaches, key: str) -> int:
        """Forget the session with `key` and delete its caches; how many were deleted."""
        mine = [(p, s) for p, s in self._prefixes.items() if s.key == key]
        deleted = 0
        for prefix, state in mine:
            del self._prefixes[prefix]
            if state.name is not None and time.monotonic() < state.expires:
                deleted += await self._delete(caches, state.name)
        return deleted

    def _remember(self, prefix: str, state: _Prefix) -> None:
        # Bounded: a forgotten prefix's cache lapses by its TTL.
        self._prefixes[prefix] = state
        while len(self._prefixes) > _MAX_PREFIXES:
            self._prefixes.popitem(last=False)

    async def _create(
        self,
        caches: _AsyncCaches,
        model: str,
        config: types.GenerateContentConfig,
        contents: list[types.Content],
        state: _Prefix,
    ) -> str | None:
        fields: dict[str, object] = {name: getattr(config, name) for name in CACHED_FIELDS}
        settings = types.CreateCachedContentConfig.model_validate(
            {**fields, "contents": contents, "ttl": f"{int(self.ttl)}s", "display_name": "rondo"}
        )
        try:
            created = await caches.create(model=model, config=settings)
        except errors.APIError as exc:
            # Caching is an optimisation: the request goes out whole instead.
            logger.warning("gemini context cache not created (%s): sending uncached", exc)
            # Refused (too small for this model, caching unsupported): do not ask every step;
            # a server error may pass, so the next step tries again.
            state.refused = exc.code < 500
            return None
        return created.name

    async def _delete(self, caches: _AsyncCaches, name: str) -> int:
        try:
            await caches.delete(name=name)
        except Exception as exc:
            if not (isinstance(exc, errors.APIError) or is_transport_error(exc)):
                raise
            logger.info("gemini context cache %s not deleted (%s): it lapses by TTL", name, exc)
            return 0
        return 1


_NO_CONFIG = types.GenerateContentConfig()


def _common_length(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


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
