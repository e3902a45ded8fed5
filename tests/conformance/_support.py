"""Shared helpers for the conformance tests (SPEC ids): run a runner, fake services, models."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from typing import Any

from rondo import Content, Event, FunctionCall, FunctionResponse, Part, Runner
from rondo.lifecycle import RunEnd
from rondo.models import ModelRequest, ModelResponse
from rondo.run_config import RunConfig
from rondo.sessions.base import Session
from rondo.testing import check_stream

APP = "conformance"
USER = "u1"
SESSION = "s1"


async def collect(
    runner: Runner,
    message: Any = "hi",
    *,
    session_id: str = SESSION,
    user_id: str = USER,
    run_config: RunConfig | None = None,
    state_delta: dict[str, Any] | None = None,
) -> list[Event]:
    """All records one invocation yields, in order."""
    out: list[Event] = []
    async with aclosing(
        runner.run_async(
            user_id=user_id,
            session_id=session_id,
            new_message=message,
            run_config=run_config,
            state_delta=state_delta,
        )
    ) as events:
        async for event in events:
            out.append(event)
    return out


async def lifecycle(
    runner: Runner,
    message: Any = "hi",
    *,
    session_id: str = SESSION,
    user_id: str = USER,
    run_config: RunConfig | None = None,
    completed: bool = True,
    check: bool = True,
) -> list[Any]:
    """The lifecycle stream of one invocation, checked with `check_stream` (unless the test
    checks it itself, after its own assertions)."""
    out: list[Any] = []
    async with aclosing(
        runner.stream_async(
            user_id=user_id, session_id=session_id, new_message=message, run_config=run_config
        )
    ) as events:
        async for event in events:
            out.append(event)
    if check:
        check_stream(out, completed=completed)
    return out


async def stored(runner: Runner, session_id: str = SESSION, user_id: str = USER) -> Session:
    session = await runner.session_service.get_session(
        app_name=runner.app_name, user_id=user_id, session_id=session_id
    )
    assert session is not None
    return session


async def seed_session(
    runner: Runner, events: Sequence[Event], session_id: str = SESSION, user_id: str = USER
) -> Session:
    """Create a session holding `events` (a pre-existing history)."""
    service = runner.session_service
    session = await service.get_or_create_session(
        app_name=runner.app_name, user_id=user_id, session_id=session_id
    )
    for event in events:
        await service.append_event(session, event)
    return session


def types_of(events: Sequence[Any]) -> list[str]:
    return [e.type for e in events]


def run_end(events: Sequence[Any]) -> RunEnd:
    last = events[-1]
    assert isinstance(last, RunEnd)
    return last


# -- record builders -------------------------------------------------------------------------


def user_text(text: str, **kw: Any) -> Event:
    return Event(author="user", content=Content.user(text), **kw)


def agent_text(author: str, text: str, **kw: Any) -> Event:
    return Event(author=author, content=Content.model(text), **kw)


def agent_call(author: str, name: str, args: dict[str, Any], call_id: str, **kw: Any) -> Event:
    return Event(
        author=author,
        content=Content(
            role="model", parts=[Part(function_call=FunctionCall(name=name, args=args, id=call_id))]
        ),
        **kw,
    )


def agent_response(
    author: str, name: str, response: dict[str, Any], call_id: str, **kw: Any
) -> Event:
    return Event(
        author=author,
        content=Content(
            role="user",
            parts=[
                Part(function_response=FunctionResponse(name=name, response=response, id=call_id))
            ],
        ),
        **kw,
    )


def response_message(name: str, response: dict[str, Any], call_id: str) -> Content:
    """A user message that answers a call (e.g. a long-running tool's late result)."""
    return Content(
        role="user",
        parts=[Part(function_response=FunctionResponse(name=name, response=response, id=call_id))],
    )


def thought(text: str) -> ModelResponse:
    return ModelResponse(content=Content(role="model", parts=[Part(text=text, thought=True)]))


def chunk(text: str, *, thought: bool = False, **kw: Any) -> ModelResponse:
    """A partial streamed response carrying one text (or thought) part."""
    return ModelResponse(
        content=Content(role="model", parts=[Part(text=text, thought=thought)]), partial=True, **kw
    )


def texts(content: Content) -> list[str]:
    return [p.text for p in content.parts if p.text is not None]


def calls_in(request: ModelRequest) -> list[FunctionCall]:
    return [p.function_call for c in request.contents for p in c.parts if p.function_call]


def responses_in(request: ModelRequest) -> list[FunctionResponse]:
    return [p.function_response for c in request.contents for p in c.parts if p.function_response]


# -- hand-written models for what ScriptedModel cannot express --------------------------------


class StreamModel:
    """A model whose every call runs `script(request, stream)` — an async generator factory."""

    def __init__(
        self,
        script: Callable[[ModelRequest, bool], AsyncIterator[ModelResponse]],
        name: str = "hand-model",
    ) -> None:
        self.name = name
        self._script = script
        self.requests: list[ModelRequest] = []

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        self.requests.append(request)
        async for response in self._script(request, stream):
            yield response
