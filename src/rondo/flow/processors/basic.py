"""P1: the agent's generation config, copied per request; native output schema (S1)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from rondo.models.base import GenerateConfig, ModelRequest, model_capabilities

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.views import FlowView


def needs_output_schema_fallback(flow: FlowView) -> bool:
    """S2: a schema with tools, on a model that cannot combine them, needs set_model_response."""
    agent = flow.agent
    if agent.output_schema is None or agent.mode == "task" or not agent.tools:
        return False
    return not model_capabilities(flow.model).response_schema_with_tools


def basic_processor(flow: FlowView, ctx: InvocationContext, request: ModelRequest) -> None:
    agent = flow.agent
    config = agent.generate_config
    if config is None:
        # Built with its cache hints: a GenerateConfig setting is two Python calls each.
        request.config = _with_cache_hints(ctx)
    else:
        # A deep copy: callbacks may edit the request's config without touching the agent's.
        request.config = config.model_copy(deep=True)
        cache_hints(ctx, request.config)
    schema = agent.output_json_schema
    if schema is not None and agent.mode != "task" and not needs_output_schema_fallback(flow):
        request.config.response_schema = dict(schema)
        request.config.response_mime_type = "application/json"


def cache_hints(ctx: InvocationContext, config: GenerateConfig) -> None:
    """K3: the request may be cached by prefix — one cache key per session, so requests of
    different users never share an entry (the key is a digest: no id reaches the provider)."""
    if not ctx.run_config.prompt_caching or config.prompt_cache is False:
        config.prompt_cache = False
        return
    config.prompt_cache = True
    if config.prompt_cache_key is None:
        config.prompt_cache_key = _cache_key(ctx)


def _with_cache_hints(ctx: InvocationContext) -> GenerateConfig:
    """A new default config with what `cache_hints` would set on it."""
    if not ctx.run_config.prompt_caching:
        return GenerateConfig(prompt_cache=False)
    return GenerateConfig(prompt_cache=True, prompt_cache_key=_cache_key(ctx))


# Session → its cache key, for the sessions running lately (a digest per step was ~8 calls).
_KEYS: dict[tuple[str, str, str], str] = {}


def _cache_key(ctx: InvocationContext) -> str:
    session = ctx.session
    ids = (session.app_name, session.user_id, session.id)
    key = _KEYS.get(ids)
    if key is None:
        if len(_KEYS) >= 4096:
            _KEYS.clear()
        raw = "\x00".join(ids).encode()
        key = _KEYS[ids] = hashlib.sha256(raw).hexdigest()[:32]
    return key
