"""Plugins: runner-wide hooks that see every invocation (SPEC R6).

Subclass `Plugin` and override the hooks you need. A hook returning a value short-circuits the
hooks after it (other plugins and the agent's own callbacks), exactly like agent callbacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from rondo._callbacks import Callbacks, first_result
from rondo.errors import ConfigurationError
from rondo.hooks import HOOK_NAMES, HookName

if TYPE_CHECKING:
    from rondo.context import CallbackContext, InvocationContext, ToolContext
    from rondo.events import Event
    from rondo.models.base import ModelRequest, ModelResponse
    from rondo.tools.base import BaseTool
    from rondo.types import Content

__all__ = ["Plugin", "PluginManager", "plugins_of"]

# Kept for callers of the old name; `rondo.hooks.HookName` is the typed list.
HOOKS = HOOK_NAMES


class Plugin:
    """Base class for plugins. Every hook is optional; the defaults do nothing."""

    name: str = ""

    def __init__(self, name: str | None = None) -> None:
        self.name = name or self.name or type(self).__name__

    async def on_user_message(self, ctx: InvocationContext, message: Content) -> Content | None:
        """Inspect or replace the user's message before it is stored."""
        return None

    async def before_run(self, ctx: InvocationContext) -> Content | None:
        """Before the agent runs; returning content answers without running it."""
        return None

    async def after_run(self, ctx: InvocationContext) -> None:
        """After the invocation finished normally."""
        return None

    async def on_event(self, ctx: InvocationContext, event: Event) -> Event | None:
        """Every event before it is stored and yielded; returning an event replaces it."""
        return None

    async def before_agent(self, ctx: CallbackContext) -> Content | None:
        return None

    async def after_agent(self, ctx: CallbackContext) -> Content | None:
        return None

    async def before_model(
        self, ctx: CallbackContext, request: ModelRequest
    ) -> ModelResponse | None:
        return None

    async def after_model(
        self, ctx: CallbackContext, response: ModelResponse
    ) -> ModelResponse | None:
        return None

    async def on_model_error(
        self, ctx: CallbackContext, request: ModelRequest, error: Exception
    ) -> ModelResponse | None:
        return None

    async def before_tool(
        self, tool: BaseTool, args: dict[str, object], tool_context: ToolContext
    ) -> dict[str, object] | None:
        return None

    async def after_tool(
        self,
        tool: BaseTool,
        args: dict[str, object],
        tool_context: ToolContext,
        result: dict[str, object],
    ) -> dict[str, object] | None:
        return None

    async def on_tool_error(
        self, tool: BaseTool, args: dict[str, object], tool_context: ToolContext, error: Exception
    ) -> dict[str, object] | None:
        return None


class PluginManager:
    """Runs one hook across the installed plugins; only plugins that override it are called."""

    __slots__ = ("_hooks", "active", "plugins")

    def __init__(self, plugins: Sequence[Plugin] = ()) -> None:
        names: set[str] = set()
        for plugin in plugins:
            if not isinstance(plugin, Plugin):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigurationError(f"plugins must be Plugin instances, got {plugin!r}")
            if plugin.name in names:
                raise ConfigurationError(f"two plugins are named {plugin.name!r}")
            names.add(plugin.name)
        self.plugins = tuple(plugins)
        self._hooks: dict[HookName, Callbacks] = {}
        for hook in HOOK_NAMES:
            base = getattr(Plugin, hook)
            self._hooks[hook] = tuple(
                getattr(p, hook) for p in self.plugins if getattr(type(p), hook) is not base
            )
        # The hooks some plugin overrides; hot paths test membership before calling run().
        self.active = frozenset(hook for hook, fns in self._hooks.items() if fns)

    def has(self, hook: HookName) -> bool:
        return bool(self._hooks[hook])

    # Typed dispatch: each hook's arguments and result, as `Plugin` declares them.
    @overload
    async def run(
        self, hook: Literal["on_user_message"], ctx: InvocationContext, message: Content, /
    ) -> Content | None: ...
    @overload
    async def run(
        self, hook: Literal["before_run"], ctx: InvocationContext, /
    ) -> Content | str | None: ...
    @overload
    async def run(self, hook: Literal["after_run"], ctx: InvocationContext, /) -> None: ...
    @overload
    async def run(
        self, hook: Literal["on_event"], ctx: InvocationContext, event: Event, /
    ) -> Event | None: ...
    @overload
    async def run(
        self, hook: Literal["before_agent", "after_agent"], ctx: CallbackContext, /
    ) -> Content | str | None: ...
    @overload
    async def run(
        self, hook: Literal["before_model"], ctx: CallbackContext, request: ModelRequest, /
    ) -> ModelResponse | None: ...
    @overload
    async def run(
        self, hook: Literal["after_model"], ctx: CallbackContext, response: ModelResponse, /
    ) -> ModelResponse | None: ...
    @overload
    async def run(
        self,
        hook: Literal["on_model_error"],
        ctx: CallbackContext,
        request: ModelRequest,
        error: Exception,
        /,
    ) -> ModelResponse | None: ...
    @overload
    async def run(
        self,
        hook: Literal["before_tool"],
        tool: BaseTool,
        args: dict[str, object],
        tool_context: ToolContext,
        /,
    ) -> dict[str, object] | None: ...
    @overload
    async def run(
        self,
        hook: Literal["after_tool"],
        tool: BaseTool,
        args: dict[str, object],
        tool_context: ToolContext,
        result: dict[str, object],
        /,
    ) -> dict[str, object] | None: ...
    @overload
    async def run(
        self,
        hook: Literal["on_tool_error"],
        tool: BaseTool,
        args: dict[str, object],
        tool_context: ToolContext,
        error: Exception,
        /,
    ) -> dict[str, object] | None: ...
    async def run(self, hook: HookName, *args: Any) -> Any:
        """Call `hook` on each plugin in order; the first non-None result is returned."""
        return await first_result(self._hooks[hook], *args)


def plugins_of(ctx: InvocationContext) -> PluginManager:
    """The run's plugin manager, typed: the context (a layer below the plugins) carries it as
    a plain object, and the agents, the loop and the runner dispatch hooks through this."""
    plugins = ctx.plugins
    if not isinstance(plugins, PluginManager):
        raise ConfigurationError(
            f"the invocation's plugins must be a PluginManager, got {plugins!r}"
        )
    return plugins
