"""`RemoteA2AAgent`: an agent served elsewhere over A2A, as a rondo agent.

Use it as a sub-agent (a transfer target) or as a tool (`AgentTool(RemoteA2AAgent(...))`).
On its turn it fetches the remote's agent card (once), sends the conversation's latest user
message — in the A2A context it keeps in the session state, so a second turn continues the
remote conversation — and turns the remote's messages, status updates and artifacts into
events authored by itself, streaming when the card says the remote streams.

A remote task that waits for input pauses the run (SPEC H3/H4) — directly, or through the
`AgentTool` call that reached it, listed on the top session with its path: its calls are
pending (answer them with `approve()` / `reject()` / `respond(...)`), and a question it asked
in text is one pending long-running call `a2a_input_required` (`args["question"]`), answered
with `pending.respond("text")`. The answer goes to the same A2A task (its task and context
ids are kept in the session state), which continues; a plain text message answers the
question too.

Failures never raise out of the run and never hang: an unreachable remote, a bad card, a
JSON-RPC error, a failed task or a timeout become one error event (`error_code` names the
`RemoteAgentError` subclass, `error_message` says what happened); `get_card()` raises them.
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, cast

import httpx
from a2a.client import (
    A2ACardResolver,
    A2AClientError,
    A2AClientTimeoutError,
    AgentCardResolutionError,
    ClientConfig,
    ClientFactory,
)
from a2a.types import AgentCard, Message, Role, SendMessageRequest, StreamResponse
from a2a.types import Part as A2APart
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, TransportProtocol
from a2a.utils.errors import A2AError

from rondo._frozen import ReadOnlyList
from rondo.a2a._parts import to_a2a_parts
from rondo.a2a._reader import INPUT_CALL, ResponseReader, answer_text, state_key
from rondo.agents.base import BaseAgent, Item
from rondo.errors import (
    AgentCardError,
    ConfigurationError,
    RemoteAgentError,
    RemoteAgentFailedError,
    RemoteAgentTimeoutError,
    RemoteAgentUnreachableError,
)

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.events import Event
    from rondo.hooks import AfterAgentCallback, BeforeAgentCallback
    from rondo.types import Content, FunctionResponse

__all__ = ["RemoteA2AAgent"]


class RemoteA2AAgent(BaseAgent):
    """A remote A2A agent.

    `url` is the agent's base URL (its card at `<url>/.well-known/agent-card.json`) or the
    card's own URL (ending in `.json`). `timeout` bounds each remote call as a whole (card
    fetch, and the send until its last update) and `connect_timeout` each connection.
    `headers` go with every request (`{"Authorization": "Bearer ..."}`). `streaming=False`
    asks for blocking sends even when the remote streams. Without a `description`, the
    card's is used once fetched (a parent lists targets by description: give one).
    """

    def __init__(
        self,
        *,
        name: str,
        url: str,
        description: str = "",
        streaming: bool = True,
        timeout: float = 300.0,
        connect_timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
        before_agent_callback: BeforeAgentCallback | Sequence[BeforeAgentCallback] | None = None,
        after_agent_callback: AfterAgentCallback | Sequence[AfterAgentCallback] | None = None,
    ) -> None:
        super().__init__(
            name=name,
            description=description,
            before_agent_callback=before_agent_callback,
            after_agent_callback=after_agent_callback,
        )
        if not url.startswith(("http://", "https://")):
            raise ConfigurationError(f"RemoteA2AAgent url must be http(s)://..., got {url!r}")
        if timeout <= 0 or connect_timeout <= 0:
            raise ConfigurationError("RemoteA2AAgent timeouts must be positive")
        self.url = url
        self.streaming = streaming
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.headers = dict(headers or {})
        self._card: AgentCard | None = None

    # -- the card -----------------------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            headers=self.headers,
            timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
            verify=_ssl_context(),
        )

    async def get_card(self) -> AgentCard:
        """The remote's agent card (fetched once). Raises a `RemoteAgentError` subclass."""
        if self._card is None:
            async with self._http() as http:
                self._card = await self._fetch_card(http)
            if not self.description:
                self.description = self._card.description
        return self._card

    async def _fetch_card(self, http: httpx.AsyncClient) -> AgentCard:
        base, path = self.url, AGENT_CARD_WELL_KNOWN_PATH
        if self.url.endswith(".json"):
            base, _, name = self.url.rpartition("/")
            path = "/" + name
        try:
            async with asyncio.timeout(self.timeout):
                card = await A2ACardResolver(http, base, path).get_agent_card()
        except TimeoutError as exc:
            raise self._timeout("fetching its agent card") from exc
        except AgentCardResolutionError as exc:
            raise _card_error(exc, self.name, base.rstrip("/") + path) from exc
        if not any(
            i.protocol_binding == TransportProtocol.JSONRPC.value and i.url
            for i in card.supported_interfaces
        ):
            raise AgentCardError(
                f"the agent card of remote agent {self.name!r} at {self.url} offers no "
                "JSON-RPC interface (supportedInterfaces with protocolBinding JSONRPC)",
                url=self.url,
            )
        return card

    def _timeout(self, doing: str) -> RemoteAgentTimeoutError:
        return RemoteAgentTimeoutError(
            f"remote agent {self.name!r} at {self.url} did not answer within "
            f"{self.timeout:g} s ({doing})",
            url=self.url,
        )

    # -- a turn -------------------------------------------------------------------------------

    async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        try:
            async with aclosing(self._converse(ctx)) as events:
                async for event in events:
                    yield event
        except RemoteAgentError as exc:
            yield self._error_event(ctx, exc)

    async def _converse(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        card = await self.get_card()
        previous = _previous(ctx, self.name)
        message = self._outgoing(ctx, previous)
        asked = str(previous.get("asked") or "")
        if asked and not _answers(_latest_user_content(ctx), asked):
            # A text message to a task that asked a question answers it: the question's call
            # is answered by that text (it no longer waits).
            yield self._answered(ctx, asked, _text_of(message))
        reader = ResponseReader(ctx, self.name, message.message_id, previous)
        async with self._http() as http:
            config = ClientConfig(streaming=self.streaming, httpx_client=http)
            client = ClientFactory(config).create(card)
            # Declared an AsyncIterator, it is an async generator (closed when we stop).
            stream = cast(
                AsyncGenerator[StreamResponse, None],
                client.send_message(SendMessageRequest(message=message)),
            )
            async with aclosing(stream):
                deadline = asyncio.get_running_loop().time() + self.timeout
                while True:
                    response = await self._next(stream, deadline)
                    if response is None:
                        break
                    for event in reader.read(response):
                        yield event
                    if reader.failure is not None:
                        break
        for event in reader.finish():
            yield event
        if reader.failure is not None:
            raise reader.failure

    async def _next(
        self, stream: AsyncGenerator[StreamResponse, None], deadline: float
    ) -> StreamResponse | None:
        """The next response, or None at the end; the whole call shares one deadline.

        The timeout wraps only the await, never a yield: the consumer's own time between
        events is not the remote's.
        """
        try:
            async with asyncio.timeout_at(deadline):
                return await anext(stream)
        except StopAsyncIteration:
            return None
        except (TimeoutError, A2AClientTimeoutError) as exc:
            raise self._timeout("sending the message") from exc
        except A2AClientError as exc:
            raise self._transport_error(exc) from exc
        except A2AError as exc:
            raise RemoteAgentFailedError(
                f"remote agent {self.name!r} refused the message: {type(exc).__name__}: {exc}",
                url=self.url,
            ) from exc

    def _transport_error(self, exc: A2AClientError) -> RemoteAgentError:
        cause = exc.__cause__
        if isinstance(cause, httpx.HTTPStatusError):
            code = cause.response.status_code
            return RemoteAgentFailedError(
                f"remote agent {self.name!r} answered HTTP {code} to the message"
                + _credentials_hint(code),
                url=self.url,
            )
        return RemoteAgentUnreachableError(
            f"remote agent {self.name!r} at {self.url} cannot be reached: {exc}", url=self.url
        )

    def _outgoing(self, ctx: InvocationContext, previous: dict[str, object]) -> Message:
        """The latest user message, in the remote context and (when it answers) task."""
        content = _latest_user_content(ctx)
        asked = str(previous.get("asked") or "")
        answer = _answers(content, asked) if asked else None
        if answer is not None:
            # The answer to the task's question in text (H4) goes to the task as text.
            parts = [A2APart(text=answer_text(dict(answer.response)))]
        else:
            parts = to_a2a_parts(
                content.model_copy(
                    update={"parts": ReadOnlyList([p for p in content.parts if not p.thought])}
                )
            )
        if not parts:
            raise RemoteAgentError(
                f"there is no user message to send to remote agent {self.name!r}", url=self.url
            )
        message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=parts)
        if previous.get("context_id"):
            message.context_id = str(previous["context_id"])
        task_id = previous.get("task_id")
        answers = all(p.function_response is not None for p in content.parts)
        # A waiting task takes the answers to its calls, or any reply to its question;
        # other text to a task waiting on calls starts a new task in the same context.
        if task_id and (answers or not previous.get("waits_on_calls")):
            message.task_id = str(task_id)
        return message

    def _answered(self, ctx: InvocationContext, call_id: str, text: str) -> Event:
        from rondo.types import Content, FunctionResponse, Part

        response = FunctionResponse(name=INPUT_CALL, id=call_id, response={"text": text})
        return ctx.new_event(
            self.name, content=Content(role="user", parts=[Part(function_response=response)])
        )

    def _error_event(self, ctx: InvocationContext, exc: RemoteAgentError) -> Event:
        return ctx.new_event(
            self.name,
            error_code=type(exc).__name__,
            error_message=str(exc),
        )


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Building one costs ~200 ms (loading the CA bundle): once per process, not per call.
    return httpx.create_ssl_context()


def _previous(ctx: InvocationContext, name: str) -> dict[str, object]:
    value = ctx.state.get(state_key(name))
    return dict(cast(dict[str, object], value)) if isinstance(value, dict) else {}


def _answers(content: Content, call_id: str) -> FunctionResponse | None:
    """The response among `content`'s parts to the call `call_id`, if any."""
    for part in content.parts:
        response = part.function_response
        if response is not None and response.id == call_id:
            return response
    return None


def _text_of(message: Message) -> str:
    return "".join(p.text for p in message.parts if p.WhichOneof("content") == "text")


def _latest_user_content(ctx: InvocationContext) -> Content:
    from rondo.types import Content

    if ctx.user_content is not None:
        return ctx.user_content
    for event in reversed(ctx.session.events):
        if event.author == "user" and event.content is not None:
            return event.content
    return Content(role="user", parts=[])


def _credentials_hint(status: int) -> str:
    if status in (401, 403):
        return ": it needs credentials (RemoteA2AAgent(headers={'Authorization': ...}))"
    return ""


def _card_error(exc: AgentCardResolutionError, name: str, card_url: str) -> RemoteAgentError:
    cause = exc.__cause__
    if isinstance(cause, httpx.TimeoutException):
        return RemoteAgentTimeoutError(
            f"remote agent {name!r} did not send its agent card ({card_url}) in time",
            url=card_url,
        )
    if isinstance(cause, httpx.RequestError):
        return RemoteAgentUnreachableError(
            f"remote agent {name!r} cannot be reached at {card_url}: "
            f"{type(cause).__name__}: {cause}",
            url=card_url,
        )
    if exc.status_code is not None:
        return AgentCardError(
            f"remote agent {name!r} has no agent card at {card_url} (HTTP {exc.status_code})"
            + _credentials_hint(exc.status_code),
            url=card_url,
        )
    if isinstance(cause, json.JSONDecodeError):
        detail = "not JSON"
    elif cause is not None:
        detail = f"not a valid agent card: {cause}"
    else:
        detail = exc.message
    return AgentCardError(
        f"the agent card of remote agent {name!r} at {card_url} is {detail}", url=card_url
    )
