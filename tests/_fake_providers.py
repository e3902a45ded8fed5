"""Fake Anthropic, OpenAI and Gemini servers on loopback, for the real SDKs (issue 25 item 1).

One Starlette app serves Anthropic Messages (`/v1/messages`), OpenAI Chat Completions
(`/v1/chat/completions`) and Gemini `generateContent` with `cachedContents` create / get /
list / delete (`/v1beta/...`), run by uvicorn in a thread. Every request is recorded (raw bytes
and parsed body) with the usage the fake answered.

The "model" is a script read from the request itself: while the conversation holds fewer
than `tool_rounds` tool results it calls `get_weather` for the next city, then it answers
"Done.". Usage is computed, not canned: tokens are estimated at four characters each, and each
provider's prompt cache is simulated the way its documentation describes it, so cached-token
figures appear only when rondo's requests really keep their prefixes byte-identical:

- Anthropic: a prefix (tools, then system, then message blocks, `cache_control` marks left
  out) is written to the cache at each breakpoint and read back on a later request whose
  blocks up to some boundary hash the same; 1,024 tokens at least.
- OpenAI: the longest common character prefix with an earlier prompt sent under the same
  `prompt_cache_key`, in 128-token steps from 1,024 tokens.
- Gemini: explicit cached contents only (what rondo asks for); a request naming one may not
  repeat the system instruction or tools (the API answers 400), an unknown one is 404, and a
  cache below 1,024 tokens is refused.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import math
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["FakeProviders", "Recorded", "estimate"]

# The smallest prefix each provider caches (Anthropic's Sonnet / OpenAI / Gemini 2.5 Flash).
MIN_CACHED = 1024
_OPENAI_STEP = 128


def estimate(text: str) -> int:
    """Tokens of `text`, at four characters a token (what rondo's own estimate assumes)."""
    return math.ceil(len(text) / 4)


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        items = cast(dict[str, Any], value).items()
        return {k: _strip(v) for k, v in items if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in cast(list[Any], value)]
    return value


def _canon(value: Any) -> str:
    return json.dumps(_strip(value), separators=(",", ":"))


@dataclass
class Recorded:
    """One request the fake received, and the usage it answered with (None: no model call)."""

    provider: str
    method: str
    path: str
    raw: bytes
    body: dict[str, Any] | None
    usage: dict[str, Any] | None = None
    status: int = 200


@dataclass
class _Cache:
    name: str
    model: str
    body: dict[str, Any]
    tokens: int
    expires: float


@dataclass
class FakeProviders:
    """The fake servers' state; `running()` serves them and yields the base URL."""

    tool_rounds: int = 19
    result_pad: int = 0  # characters of padding in each tool call's arguments (a longer history)
    answer: str = "Done."  # the text that ends each turn
    requests: list[Recorded] = field(default_factory=list[Recorded])
    caches: dict[str, _Cache] = field(default_factory=dict[str, _Cache])
    deleted: list[str] = field(default_factory=list[str])
    # Every cached content ever created, by name (deleted ones too), as its create body.
    created_bodies: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    created_tokens: dict[str, int] = field(default_factory=dict[str, int])
    _anthropic_cache: dict[str, int] = field(default_factory=dict[str, int])
    _openai_prompts: dict[str | None, list[str]] = field(
        default_factory=dict[str | None, list[str]]
    )
    _ids: Iterator[int] = field(default_factory=itertools.count)

    # -- reading what arrived -------------------------------------------------------------

    def calls(self, provider: str) -> list[Recorded]:
        """The model calls `provider` answered, in order."""
        return [r for r in self.requests if r.provider == provider and r.usage is not None]

    def of(self, provider: str) -> list[Recorded]:
        return [r for r in self.requests if r.provider == provider]

    # -- serving --------------------------------------------------------------------------

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/messages", self._anthropic, methods=["POST"]),
                Route("/v1/chat/completions", self._openai, methods=["POST"]),
                # google-genai says `v1beta`, or `v1` when given a base URL.
                Route("/v1beta/{rest:path}", self._gemini, methods=["GET", "POST", "DELETE"]),
                Route("/v1/{rest:path}", self._gemini, methods=["GET", "POST", "DELETE"]),
            ]
        )

    @contextmanager
    def running(self) -> Iterator[str]:
        """Serve on a free loopback port (uvicorn in a thread); yields the base URL."""
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        config = uvicorn.Config(self.app(), host="127.0.0.1", port=port, log_level="warning")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the fake provider server did not start")
            time.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(10)

    async def _record(self, provider: str, request: Request) -> Recorded:
        raw = await request.body()
        body = cast(dict[str, Any], json.loads(raw)) if raw else None
        record = Recorded(provider, request.method, request.url.path, raw, body)
        self.requests.append(record)
        return record

    def _city(self, done: int) -> dict[str, str]:
        return {"city": f"city-{done}", "note": "x" * self.result_pad}

    # -- Anthropic ------------------------------------------------------------------------

    async def _anthropic(self, request: Request) -> Response:
        record = await self._record("anthropic", request)
        body = record.body or {}
        messages = cast(list[dict[str, Any]], body.get("messages", []))
        blocks = [
            b
            for m in messages
            for b in ([{"type": "text"}] if isinstance(m["content"], str) else m["content"])
            if m["role"] == "user"
        ]
        done = _since_last(b.get("type") == "tool_result" for b in blocks)
        if done < self.tool_rounds:
            n = next(self._ids)
            content: list[dict[str, Any]] = [
                {
                    "type": "tool_use",
                    "id": f"toolu_{n}",
                    "name": "get_weather",
                    "input": self._city(done),
                }
            ]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": self.answer}], "end_turn"
        usage = self._anthropic_usage(body)
        usage["output_tokens"] = estimate(json.dumps(content))
        record.usage = usage
        return JSONResponse(
            {
                "id": f"msg_{next(self._ids)}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "claude"),
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": usage,
            }
        )

    def _anthropic_usage(self, body: dict[str, Any]) -> dict[str, Any]:
        # The cache's order: tools, system, messages; a block's identity is its JSON without
        # the marks (moving a mark does not change what is cached).
        blocks: list[tuple[str, bool]] = []
        for tool in cast(list[dict[str, Any]], body.get("tools", [])):
            blocks.append((_canon(tool), "cache_control" in tool))
        system = body.get("system")
        if isinstance(system, str):
            blocks.append((_canon({"type": "text", "text": system}), False))
        elif isinstance(system, list):
            for block in cast(list[dict[str, Any]], system):
                blocks.append((_canon(block), "cache_control" in block))
        for message in cast(list[dict[str, Any]], body.get("messages", [])):
            content = message["content"]
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            for block in cast(list[dict[str, Any]], content):
                blocks.append((message["role"] + _canon(block), "cache_control" in block))
        digests: list[str] = []
        tokens: list[int] = []
        running = hashlib.sha256()
        total = 0
        for text, _ in blocks:
            running.update(text.encode())
            digests.append(running.copy().hexdigest())
            total += estimate(text)
            tokens.append(total)
        marks = [i for i, (_, marked) in enumerate(blocks) if marked]
        read = 0
        last = marks[-1] if marks else -1
        for i in range(last, -1, -1):  # the longest cached prefix the marks reach back to
            if digests[i] in self._anthropic_cache:
                read = tokens[i]
                break
        written = 0
        for i in marks:
            if tokens[i] >= MIN_CACHED and tokens[i] > read:
                self._anthropic_cache[digests[i]] = tokens[i]
                written = tokens[i] - read
        return {
            "input_tokens": total - read - written,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "output_tokens": 0,
        }

    # -- OpenAI ---------------------------------------------------------------------------

    async def _openai(self, request: Request) -> Response:
        record = await self._record("openai", request)
        body = record.body or {}
        messages = cast(list[dict[str, Any]], body.get("messages", []))
        done = _since_last(m.get("role") == "tool" for m in messages if m["role"] != "assistant")
        message: dict[str, Any]
        if done < self.tool_rounds:
            call = {
                "id": f"call_{next(self._ids)}",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps(self._city(done))},
            }
            message, finish = (
                {"role": "assistant", "content": None, "tool_calls": [call]},
                "tool_calls",
            )
        else:
            message, finish = {"role": "assistant", "content": self.answer}, "stop"
        prompt = _canon(body.get("tools", [])) + "".join(_canon(m) for m in messages)
        key = cast(str | None, body.get("prompt_cache_key"))
        seen = self._openai_prompts.setdefault(key, [])
        common = max((_common(prompt, before) for before in seen), default=0)
        seen.append(prompt)
        cached = estimate(prompt[:common])
        cached = 0 if cached < MIN_CACHED else cached - cached % _OPENAI_STEP
        prompt_tokens = estimate(prompt)
        completion = estimate(json.dumps(message))
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        record.usage = usage
        return JSONResponse(
            {
                "id": f"chatcmpl-{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "gpt"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
        )

    # -- Gemini ---------------------------------------------------------------------------

    async def _gemini(self, request: Request) -> Response:
        record = await self._record("gemini", request)
        rest = request.path_params["rest"]
        if rest.startswith("models/") and rest.endswith(":generateContent"):
            return self._generate(record, rest[len("models/") : -len(":generateContent")])
        if rest == "cachedContents" and request.method == "POST":
            return self._create_cache(record)
        if rest == "cachedContents" and request.method == "GET":
            listed = [self._cache_json(c) for c in self.caches.values()]
            return JSONResponse({"cachedContents": listed})
        if rest.startswith("cachedContents/"):
            cache = self.caches.get(rest)
            if cache is None or cache.expires < time.time():
                return _gemini_error(record, 404, "NOT_FOUND", f"{rest} not found")
            if request.method == "DELETE":
                del self.caches[rest]
                self.deleted.append(rest)
                return JSONResponse({})
            return JSONResponse(self._cache_json(cache))
        return _gemini_error(record, 404, "NOT_FOUND", f"no route {rest}")

    def _create_cache(self, record: Recorded) -> Response:
        body = record.body or {}
        tokens = estimate(
            _canon({k: body.get(k) for k in ("contents", "systemInstruction", "tools")})
        )
        if tokens < MIN_CACHED:
            return _gemini_error(record, 400, "INVALID_ARGUMENT", "Cached content is too small")
        name = f"cachedContents/c{next(self._ids)}"
        ttl = float(str(body.get("ttl", "3600s")).rstrip("s"))
        cache = _Cache(name, str(body.get("model")), body, tokens, time.time() + ttl)
        self.caches[name] = cache
        self.created_bodies[name] = body
        self.created_tokens[name] = tokens
        return JSONResponse(self._cache_json(cache))

    def _cache_json(self, cache: _Cache) -> dict[str, Any]:
        expire = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(cache.expires))
        return {
            "name": cache.name,
            "model": cache.model,
            "displayName": cache.body.get("displayName", ""),
            "usageMetadata": {"totalTokenCount": cache.tokens},
            "expireTime": expire,
        }

    def _generate(self, record: Recorded, model: str) -> Response:
        body = record.body or {}
        contents = cast(list[dict[str, Any]], body.get("contents", []))
        cached_tokens = 0
        name = body.get("cachedContent")
        if name is not None:
            cache = self.caches.get(str(name))
            if cache is None or cache.expires < time.time():
                return _gemini_error(record, 404, "NOT_FOUND", f"{name} not found")
            if any(k in body for k in ("systemInstruction", "tools", "toolConfig")):
                return _gemini_error(
                    record,
                    400,
                    "INVALID_ARGUMENT",
                    "CachedContent can not be used with GenerateContent request setting "
                    "system_instruction, tools or tool_config.",
                )
            contents = cast(list[dict[str, Any]], cache.body.get("contents", [])) + contents
            cached_tokens = cache.tokens
        done = _since_last(
            "functionResponse" in p
            for c in contents
            if c.get("role") == "user"
            for p in cast(list[dict[str, Any]], c.get("parts", []))
        )
        if done < self.tool_rounds:
            call = {"name": "get_weather", "args": self._city(done), "id": f"fc-{next(self._ids)}"}
            parts: list[dict[str, Any]] = [{"functionCall": call}]
        else:
            parts = [{"text": self.answer}]
        sent = estimate(
            _canon({k: body.get(k) for k in ("contents", "systemInstruction", "tools")})
        )
        output = estimate(json.dumps(parts))
        usage: dict[str, Any] = {
            "promptTokenCount": sent + cached_tokens,
            "candidatesTokenCount": output,
            "totalTokenCount": sent + cached_tokens + output,
        }
        if cached_tokens:
            usage["cachedContentTokenCount"] = cached_tokens
        record.usage = usage
        return JSONResponse(
            {
                "candidates": [
                    {"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}
                ],
                "usageMetadata": usage,
                "modelVersion": model,
            }
        )


def _since_last(results: Iterable[bool]) -> int:
    """Tool results since the user's last own message (True: a tool result, False: the user's
    text): the rounds of the current turn."""
    done = 0
    for is_result in results:
        done = done + 1 if is_result else 0
    return done


def _common(a: str, b: str) -> int:
    """The length of the common prefix (a binary search: slices compare in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _gemini_error(record: Recorded, code: int, status: str, message: str) -> Response:
    record.status = code
    return JSONResponse({"error": {"code": code, "message": message, "status": status}}, code)
