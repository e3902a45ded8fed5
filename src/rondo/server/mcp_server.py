"""Agents as MCP tools (SPEC W8): `rondo api-server --mcp` serves each app as one tool over
streamable HTTP at `/mcp` (behind the server's bearer tokens), `rondo mcp AGENT_PATH` one
agent over stdio, both on the official `mcp` SDK's `MCPServer` (the `mcp` extra).

A tool takes `message` and an optional `session_id` (a new session when omitted) and answers
with the agent's reply as text; its structured content holds `answer`, `session_id` (pass it
back to continue the conversation) and `pending`. When the run pauses for a confirmation the
tool asks the client with MCP elicitation if the client supports it, and continues the run
with the answer; otherwise it returns the pending call, and calling the tool again with the
`session_id` and `decision` ("approve" or "reject") answers it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, cast

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field
from starlette.routing import BaseRoute

from rondo._version import __version__
from rondo.errors import RondoError
from rondo.events import PendingCall
from rondo.lifecycle import RunEnd
from rondo.run_config import RunConfig
from rondo.runner import Runner
from rondo.server.auth import USER_KEY
from rondo.server.discovery import AppLoadError
from rondo.server.errors import describe
from rondo.server.front_end import DEFAULT_USER, lifecycle, open_session, start_front_run
from rondo.server.state import ServerState
from rondo.types import Content, Part

__all__ = ["AgentRuns", "Approval", "McpEndpoint", "stdio_server"]

Decision = Literal["approve", "reject"]
# The MCP revision from which a server asks the client by returning `InputRequiredResult`.
INPUT_REQUIRED_VERSION = "2026-07-28"


class Approval(BaseModel):
    """What an elicitation asks the user about a paused call."""

    approve: bool = Field(description="Run the call?")
    comment: str = Field(default="", description="Why not (told to the agent).")


@dataclass
class AgentRuns:
    """How one transport runs an app's agent: the session's pending calls, and a run of it
    to its end."""

    pending: Callable[[Context[Any, Any], str], Awaitable[list[PendingCall]]]
    run: Callable[[Context[Any, Any], str, Content], Awaitable[RunEnd]]


async def _drain(events: AsyncGenerator[Any, None]) -> RunEnd:
    end: RunEnd | None = None
    async with aclosing(events) as items:
        async for item in items:
            if isinstance(item, RunEnd):
                end = item
    if end is None:
        raise ToolError("the run ended without an answer")
    return end


def _describe(call: PendingCall) -> str:
    return f"{call.tool_name}({json.dumps(dict(call.args), ensure_ascii=False, default=str)})"


def _decisions(pending: list[PendingCall], decision: Decision, comment: str | None) -> list[Part]:
    confirmations = [p for p in pending if p.kind == "confirmation"]
    if not confirmations:
        raise ToolError("`decision` answers a paused call, and this session has none")
    if decision == "approve":
        return [p.approve() for p in confirmations]
    return [p.reject(comment) for p in confirmations]


def _can_elicit(ctx: Context[Any, Any]) -> bool:
    capabilities = ctx.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


def _asks_by_result(ctx: Context[Any, Any]) -> bool:
    """Whether this connection asks with an `InputRequiredResult` (MCP 2026-07-28 and later)
    rather than with a request of its own back to the client."""
    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, INPUT_REQUIRED_VERSION)


def _prompt(call: PendingCall) -> str:
    return f"{call.hint or 'Approve this call?'} {_describe(call)}"


def _decide(call: PendingCall, action: str, content: Any) -> Part:
    answer = Approval.model_validate(content or {}) if action == "accept" else None
    if answer is not None and answer.approve:
        return call.approve()
    comment = answer.comment if answer is not None else f"the user chose {action}"
    return call.reject(comment or None)


async def _elicit(ctx: Context[Any, Any], calls: list[PendingCall]) -> list[Part]:
    """Ask the client about each paused call with its own request (MCP before 2026-07-28)."""
    parts: list[Part] = []
    for call in calls:
        answer = await ctx.elicit(_prompt(call), Approval)
        data = answer.data.model_dump() if answer.action == "accept" else None
        parts.append(_decide(call, answer.action, data))
    return parts


def _input_required(calls: list[PendingCall], session_id: str) -> InputRequiredResult:
    schema = Approval.model_json_schema()
    requests: dict[str, Any] = {
        call.call_id: ElicitRequest(
            params=ElicitRequestFormParams(message=_prompt(call), requested_schema=schema)
        )
        for call in calls
    }
    return InputRequiredResult(
        input_requests=requests, request_state=json.dumps({"session_id": session_id})
    )


def _answered(ctx: Context[Any, Any], pending: list[PendingCall]) -> list[Part]:
    """The client's answers (an `InputRequiredResult` retry) to the session's paused calls."""
    responses = ctx.input_responses or {}
    parts: list[Part] = []
    for call in pending:
        response = responses.get(call.call_id)
        if isinstance(response, ElicitResult):
            parts.append(_decide(call, response.action, response.content))
    return parts


def _result(end: RunEnd, session_id: str) -> CallToolResult:
    pending = [p.model_dump(mode="json") for p in end.pending]
    text = end.text
    if end.pending:
        waits = "; ".join(_describe(p) for p in end.pending)
        text = (text + "\n" if text else "") + (
            f"The agent waits on {waits}. Call this tool again with session_id "
            f"{session_id!r} and decision 'approve' or 'reject'."
        )
    structured = {"answer": end.text, "session_id": session_id, "pending": pending}
    return CallToolResult(
        content=[TextContent(text=text or "(no answer)")],
        structured_content=structured,
        is_error=end.error is not None,
    )


def _resumed_session(ctx: Context[Any, Any]) -> str | None:
    state = ctx.request_state
    if not state:
        return None
    try:
        value: Any = json.loads(state)
    except ValueError:
        return None
    sid: Any = cast(dict[str, object], value).get("session_id") if isinstance(value, dict) else None
    return sid if isinstance(sid, str) else None


async def _first_message(
    runs: AgentRuns, ctx: Context[Any, Any], sid: str, message: str, decision: Decision | None
) -> list[Part]:
    if ctx.input_responses and _resumed_session(ctx) == sid:
        answers = _answered(ctx, await runs.pending(ctx, sid))
        if answers:
            return answers
    if decision is not None:
        return _decisions(await runs.pending(ctx, sid), decision, message or None)
    return [Part(text=message)]


def _tool(runs: AgentRuns) -> Callable[..., Awaitable[CallToolResult | InputRequiredResult]]:
    async def ask_agent(
        message: str,
        ctx: Context[Any, Any],
        session_id: str | None = None,
        decision: Decision | None = None,
    ) -> CallToolResult | InputRequiredResult:
        sid = session_id or _resumed_session(ctx) or uuid.uuid4().hex
        try:
            parts = await _first_message(runs, ctx, sid, message, decision)
            end = await runs.run(ctx, sid, Content(role="user", parts=parts))
            while True:
                asked = [p for p in end.pending if p.kind == "confirmation"]
                if not asked or not _can_elicit(ctx):
                    return _result(end, sid)
                if _asks_by_result(ctx):
                    return _input_required(asked, sid)
                answers = await _elicit(ctx, asked)
                end = await runs.run(ctx, sid, Content(role="user", parts=answers))
        except RondoError as exc:
            raise ToolError(describe(exc)) from exc

    return ask_agent


def _add(server: MCPServer, name: str, description: str, runs: AgentRuns) -> None:
    server.add_tool(
        _tool(runs),
        name=name,
        description=description or f"Ask the {name} agent.",
        structured_output=False,
    )


_PLAIN = RunConfig()


def stdio_server(runner: Runner, user_id: str = DEFAULT_USER) -> MCPServer:
    """One agent as one MCP tool, for `rondo mcp AGENT_PATH` (run it with `run("stdio")`)."""

    async def pending(_: Context[Any, Any], session_id: str) -> list[PendingCall]:
        session = await runner.session_service.get_session(
            app_name=runner.app_name, user_id=user_id, session_id=session_id, num_recent_events=0
        )
        return session.pending if session is not None else []

    async def run(_: Context[Any, Any], session_id: str, message: Content) -> RunEnd:
        return await _drain(
            runner.stream_async(
                user_id=user_id, session_id=session_id, new_message=message, run_config=_PLAIN
            )
        )

    server = MCPServer(name=runner.app_name, version=__version__)
    _add(server, runner.agent.name, runner.agent.description, AgentRuns(pending, run))
    return server


def _caller(ctx: Context[Any, Any]) -> str | None:
    request = ctx.request_context.request
    scope: Any = getattr(request, "scope", None)
    if not isinstance(scope, dict):
        return None
    user: Any = cast(dict[str, object], scope).get(USER_KEY)
    return user if isinstance(user, str) else None


def _http_runs(state: ServerState, app_name: str) -> AgentRuns:
    async def pending(ctx: Context[Any, Any], session_id: str) -> list[PendingCall]:
        user = _caller(ctx) or DEFAULT_USER
        return (await open_session(state, app_name, user, session_id)).pending

    async def run(ctx: Context[Any, Any], session_id: str, message: Content) -> RunEnd:
        who = _caller(ctx)
        user = who or DEFAULT_USER
        await open_session(state, app_name, user, session_id)
        started = await start_front_run(
            state,
            who,
            app_name=app_name,
            user_id=user,
            session_id=session_id,
            message=message,
            streaming=False,
        )
        return await _drain(lifecycle(state, started))

    return AgentRuns(pending, run)


class McpEndpoint:
    """Every app of the server as an MCP tool at `/mcp` (`create_app(..., mcp=True)`).

    Its routes join the server's app; `running()` belongs in the server's lifespan: it loads
    the apps (those that fail to load are left out) and runs the SDK's session manager.
    """

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.server = MCPServer(name="rondo", version=__version__)
        # rondo's own guard checks Host and Origin on every request, /mcp included.
        app = self.server.streamable_http_app(
            streamable_http_path="/mcp",
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.routes: list[BaseRoute] = list(app.routes)

    async def _load(self) -> None:
        for name in self.state.apps.names():
            try:
                runner = await self.state.apps.runner(name)
            except AppLoadError:
                continue
            _add(self.server, name, runner.agent.description, _http_runs(self.state, name))

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        await self._load()
        async with self.server.session_manager.run():
            yield
