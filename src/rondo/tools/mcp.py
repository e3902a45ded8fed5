"""MCP toolsets: the tools of a Model Context Protocol server as agent tools (SPEC T7).

Built on the official `mcp` SDK (2.x, `mcp.Client`): a URL connects over streamable HTTP,
`StdioServerParameters` launch a local server process, and an in-process `MCPServer` works
for tests. The connection is owned by one background task — anyio cancel scopes must be
entered and left in the same task — and lives until `close()` (or `Runner.close()`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rondo.errors import ConfigurationError, ToolError
from rondo.models.base import FunctionDeclaration
from rondo.tools.base import BaseTool, BaseToolset, check_tool_name

if TYPE_CHECKING:
    from rondo.context import ReadonlyContext, ToolContext

__all__ = ["MCPTool", "MCPToolset"]


def _import_client() -> Any:
    try:
        import mcp
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ConfigurationError(
            "MCP toolsets need the 'mcp' extra: pip install 'rondo-agents[mcp]'"
        ) from exc
    return mcp.Client


class _Connection:
    """One MCP client session, entered and left by the task that owns it."""

    def __init__(self, server: Any, client_options: dict[str, object]) -> None:
        self._server = server
        self._options = client_options
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()

    async def client(self) -> Any:
        async with self._lock:
            if self._client is None:
                await self._open()
            return self._client

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._stop = asyncio.Event()
        self._owner = asyncio.create_task(self._own(), name="rondo-mcp-connection")
        await self._ready

    async def _own(self) -> None:
        assert self._ready is not None
        assert self._stop is not None
        client_cls = _import_client()
        try:
            async with client_cls(self._server, **self._options) as client:
                self._client = client
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
                return
            raise
        finally:
            self._client = None

    async def close(self) -> None:
        owner = self._owner
        if owner is None:
            return
        assert self._stop is not None
        self._stop.set()
        self._owner = None
        # A server that died while closing is closed all the same.
        with contextlib.suppress(Exception):
            await owner


def _result_payload(result: Any) -> dict[str, object]:
    structured = getattr(result, "structured_content", None)
    texts: list[str] = []
    other: list[object] = []
    blocks: list[Any] = list(getattr(result, "content", None) or [])
    for block in blocks:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            texts.append(text)
        else:
            other.append(block.model_dump(mode="json", exclude_none=True))
    if getattr(result, "is_error", False):
        raise ToolError("\n".join(texts) or "the MCP tool reported an error")
    if isinstance(structured, dict):
        return dict(structured)  # pyright: ignore[reportUnknownArgumentType]
    payload: dict[str, object] = {}
    if texts:
        joined = "\n".join(texts)
        try:
            parsed = json.loads(joined)
        except ValueError:
            payload["result"] = joined
        else:
            payload["result"] = parsed
    if other:
        payload["content"] = other
    return payload


class MCPTool(BaseTool):
    """One tool of an MCP server."""

    def __init__(self, connection: _Connection, tool: Any, name: str) -> None:
        super().__init__(name=check_tool_name(name), description=tool.description or "")
        self._connection = connection
        self.remote_name: str = tool.name
        schema: dict[str, object] = dict(tool.input_schema or {"type": "object", "properties": {}})
        schema.setdefault("properties", {})
        self._declaration = FunctionDeclaration(
            name=self.name, description=self.description, parameters=schema
        )

    def declaration(self) -> FunctionDeclaration:
        return self._declaration

    async def run(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        client = await self._connection.client()
        result = await client.call_tool(self.remote_name, args)
        return _result_payload(result)


class MCPToolset(BaseToolset):
    """The tools of an MCP server.

    `server` is a URL (streamable HTTP), `mcp.StdioServerParameters`, or an in-process
    `MCPServer`. `tool_filter` keeps a subset (names or a predicate); `prefix` renames tools
    `<prefix>_<name>` to avoid clashes. Set `relist_each_step` for servers whose tools change.
    """

    def __init__(
        self,
        server: Any,
        *,
        tool_filter: Sequence[str] | Callable[[str], bool] | None = None,
        prefix: str | None = None,
        relist_each_step: bool = False,
        client_options: dict[str, object] | None = None,
    ) -> None:
        self._connection = _Connection(server, client_options or {})
        self._filter = tool_filter
        self._prefix = prefix
        self.relist_each_step = relist_each_step

    def _wanted(self, name: str) -> bool:
        f = self._filter
        if f is None:
            return True
        if callable(f):
            return bool(f(name))
        return name in f

    async def get_tools(self, ctx: ReadonlyContext) -> list[BaseTool]:
        client = await self._connection.client()
        tools: list[BaseTool] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                if not self._wanted(tool.name):
                    continue
                name = f"{self._prefix}_{tool.name}" if self._prefix else tool.name
                tools.append(MCPTool(self._connection, tool, name))
            cursor = getattr(page, "next_cursor", None)
            if not cursor:
                return tools

    async def close(self) -> None:
        await self._connection.close()
