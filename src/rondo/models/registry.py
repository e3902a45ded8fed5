"""Model strings: `"provider:model"` → a `Model` (adapters are imported only when used)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar

from rondo.errors import ModelNotFoundError
from rondo.models.base import Model

__all__ = ["register_provider", "resolve_model", "substitute_models"]

# provider prefix → (module, factory function, extra that installs its SDK)
_BUILTIN: dict[str, tuple[str, str, str]] = {
    "openai": ("rondo.models.openai", "from_model_string", "openai"),
    "anthropic": ("rondo.models.anthropic", "from_model_string", "anthropic"),
    "gemini": ("rondo.models.gemini", "from_model_string", "gemini"),
    "local": ("rondo.models.local", "from_model_string", "local"),
}
_custom: dict[str, Callable[[str], Model]] = {}
_substitute: ContextVar[Callable[[str], Model] | None] = ContextVar(
    "rondo_model_substitute", default=None
)


def register_provider(prefix: str, factory: Callable[[str], Model]) -> None:
    """Make `"prefix:name"` model strings resolve through `factory(name)`."""
    _custom[prefix] = factory


@contextmanager
def substitute_models(factory: Callable[[str], Model]) -> Generator[None]:
    """Within the block, every model string resolves to `factory(spec)` instead.

    `rondo run --replay` loads an agent this way: `Agent(model="openai:gpt-4o")` then needs
    neither the provider's SDK nor its API key.
    """
    token = _substitute.set(factory)
    try:
        yield
    finally:
        _substitute.reset(token)


def resolve_model(spec: str) -> Model:
    """The model a string names; fails now, with what to install or set, if it cannot work."""
    substitute = _substitute.get()
    if substitute is not None:
        return substitute(spec)
    live = _live_module(spec)
    if live is not None:
        return _load(spec, live, "from_model_string", _LIVE[live])(spec.partition(":")[2] or spec)
    prefix, sep, name = spec.partition(":")
    if not sep or not name:
        known = ", ".join(sorted({*_BUILTIN, *_custom}))
        raise ModelNotFoundError(
            f"model string {spec!r} must look like 'provider:model' (providers: {known})"
        )
    if prefix in _custom:
        return _custom[prefix](name)
    entry = _BUILTIN.get(prefix)
    if entry is None:
        known = ", ".join(sorted({*_BUILTIN, *_custom}))
        raise ModelNotFoundError(f"unknown model provider {prefix!r} in {spec!r} (known: {known})")
    module_name, factory_name, extra = entry
    return _load(spec, module_name, factory_name, extra)(name)


def _load(spec: str, module_name: str, factory_name: str, extra: str) -> Callable[[str], Model]:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelNotFoundError(
            f"model {spec!r} needs the {extra!r} extra: pip install 'rondo-agents[{extra}]' ({exc})"
        ) from exc
    return getattr(module, factory_name)


# Live models (SPEC L1): their adapters hold a connection instead of answering requests.
_LIVE = {"rondo.models.gemini_live": "gemini", "rondo.models.openai_realtime": "openai"}


def _live_module(spec: str) -> str | None:
    """The live adapter a model string names: `gemini-live-…` (bare, as ADK writes it) or
    `gemini:gemini-live-…` / `gemini:…native-audio…`, `openai:gpt-realtime…` /
    `openai:gpt-4o-realtime-…`."""
    prefix, sep, name = spec.partition(":")
    if not sep:
        prefix, name = "gemini", spec
        if not spec.startswith("gemini-"):
            return None
    if prefix == "gemini" and ("-live" in name or "native-audio" in name):
        return "rondo.models.gemini_live"
    if prefix == "openai" and "realtime" in name:
        return "rondo.models.openai_realtime"
    return None
