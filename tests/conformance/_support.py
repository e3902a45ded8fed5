"""Shared helpers for the conformance tests (SPEC ids): run a runner, fake services, models."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from typing import Any

from rondo import Content, Event, FunctionCall, FunctionResponse, Part, Runner
from rondo.artifacts.base import BaseArtifactService
from rondo.lifecycle import RunEnd
from rondo.memory.base import BaseMemoryService, MemoryEntry, SearchMemoryResponse
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
    session = await service.get_session(
        app_name=runner.app_name, user_id=user_id, session_id=session_id
    )
    if session is None:
        session = await service.create_session(
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


# -- in-memory services the core does not ship yet ------------------------------------------


class MemoryArtifacts(BaseArtifactService):
    """Versioned artifacts in a dict (for tests of the artifact paths)."""

    def __init__(self) -> None:
        self.data: dict[tuple[str, str, str, str], list[Part]] = {}

    async def save_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part
    ) -> int:
        versions = self.data.setdefault((app_name, user_id, session_id, filename), [])
        versions.append(artifact)
        return len(versions) - 1

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        filename: str,
        version: int | None = None,
    ) -> Part | None:
        versions = self.data.get((app_name, user_id, session_id, filename))
        if not versions:
            return None
        return versions[-1 if version is None else version]

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> list[str]:
        return sorted(k[3] for k in self.data if k[:3] == (app_name, user_id, session_id))

    async def delete_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> None:
        self.data.pop((app_name, user_id, session_id, filename), None)

    async def list_versions(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> list[int]:
        return list(range(len(self.data.get((app_name, user_id, session_id, filename), []))))


class MemoryStore(BaseMemoryService):
    """Remembers text of added sessions; search is a substring match."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, str, MemoryEntry]] = []

    async def add_session_to_memory(self, session: Session) -> None:
        for event in session.events:
            if event.content is not None:
                self.entries.append(
                    (
                        session.app_name,
                        session.user_id,
                        MemoryEntry(content=event.content, author=event.author),
                    )
                )

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        return SearchMemoryResponse(
            memories=[
                e
                for a, u, e in self.entries
                if a == app_name and u == user_id and query in e.content.text
            ]
        )
