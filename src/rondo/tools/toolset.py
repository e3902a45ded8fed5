"""A toolset built from a function: the tool list is computed per run (or per step)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rondo.tools.base import BaseTool, BaseToolset
from rondo.tools.function import as_tool

if TYPE_CHECKING:
    from rondo.context import ReadonlyContext

__all__ = ["FunctionToolset"]


class FunctionToolset(BaseToolset):
    """`FunctionToolset(lambda ctx: [...])`: tools chosen from the context (state, user...).

    The provider may be sync or async and return tools or plain functions.
    """

    def __init__(
        self,
        provider: Callable[[ReadonlyContext], Any],
        *,
        relist_each_step: bool = False,
    ) -> None:
        self._provider = provider
        self.relist_each_step = relist_each_step

    async def get_tools(self, ctx: ReadonlyContext) -> list[BaseTool]:
        listed: Any = self._provider(ctx)
        if inspect.isawaitable(listed):
            listed = await listed
        items: Sequence[object] = listed
        return [as_tool(item) for item in items]
