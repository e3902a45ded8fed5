"""Runs that outlive their request (SPEC W7): start a run detached, subscribe to its frames.

Starting a run makes the checks every run route makes, in one order: app named (400) →
caller may act as the body's user (403) → app exists (404) → session exists (404; google-adk
does not create it on a run either) → no other run on it here or on any replica sharing the
store (409, SPEC W5; `multitask` says what to do instead). The claim (`rondo.server.claims`)
is held from before the run's first append until the run ends.

Then the run belongs to the server, not to the request: a `DetachedRun` is an asyncio task
that owns the runner's iterator, keeps every item it yields (records and lifecycle events)
in a journal and wakes its subscribers. A client that goes away only ends its subscription;
the run goes on and stores its records as usual — unless it asked `onDisconnect: "cancel"`.

The API other faces build on (AG-UI, AI SDK, OpenAI-compatible projections):

    run_request = await start_run(state, who, body)        # checks + claim
    run = await launch(state, run_request, observe=True)   # detached; raises a refusal (4xx)
    async for frame_id, item in run.items(after=None):     # journal, then the live tail
        ...                                                # records and lifecycle events
    run.cancel("why")                                      # stop at the next stop point

`run.subscribe(fmt, after)` is the same as SSE bytes with ids (`rondo.server.frames`);
`state.detached.get(app, user, session, run_id)` finds a run this process runs or ran lately.

A deliberate stop (`cancel`) is written to the log: each call it cut gets a stored answer
naming the cancellation, then a `CANCELLED` marker record (`rondo.sessions.run_log`), so the
next message never re-runs a cut call and the run's status reads `cancelled` on any replica.
A server that stops (or dies) writes nothing: SPEC G2's synthetic answer and D1's resume cover
that case.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import Field
from starlette.responses import Response

from rondo.events import Event
from rondo.lifecycle import RunEnd
from rondo.run_config import RunConfig
from rondo.runner import Runner
from rondo.server.auth import authorize, check_shared_state
from rondo.server.errors import BadRequestError, NotFoundError
from rondo.server.files import check_files, has_files
from rondo.server.frames import Format, FrameId, Numbering, adk_frame_count
from rondo.server.multitask import Multitask, take_with
from rondo.server.session_runs import SessionRuns
from rondo.server.streams import REFUSALS, dumps, event_stream
from rondo.server.wire import RunAgentRequest
from rondo.sessions.run_frames import RunFrames
from rondo.sessions.run_log import CANCELLED, RunStatus, cut_calls, run_records
from rondo.types import Content, FunctionResponse, Part

if TYPE_CHECKING:
    from rondo.server.discovery import AppRegistry

__all__ = [
    "DetachedRun",
    "DetachedRunRequest",
    "RunHost",
    "RunRegistry",
    "RunRequest",
    "collect",
    "launch",
    "respond",
    "start_run",
]

logger = logging.getLogger("rondo.server")


class RunHost(SessionRuns, Protocol):
    """What starting a run reads of the server state (`ServerState`): the apps, and the
    registry it adds the run to."""

    @property
    def apps(self) -> AppRegistry: ...
    @property
    def detached(self) -> RunRegistry: ...


class DetachedRunRequest(RunAgentRequest):
    """A run route's body: google-adk's fields, and rondo's for runs that outlive the
    request (ADK clients do not send them; they change nothing when absent)."""

    background: bool = Field(
        default=False,
        description="Answer 202 `{runId}` at once; stream the run later from "
        "`…/sessions/{id}/runs/{runId}/stream`.",
    )
    on_disconnect: Literal["continue", "cancel"] = Field(
        default="continue",
        description="What a client that leaves mid-run does to it: nothing (it goes on and "
        "stores its records), or stop it at its next stop point.",
    )
    multitask: Multitask = Field(
        default="reject",
        description="When another run holds the session: refuse (409), wait for it (in "
        "arrival order, in this server's memory: a restart drops a waiting message, nothing "
        "of it stored), stop it and keep what it finished (`interrupt`), or stop it and "
        "rewind it away (`rollback`).",
    )


@dataclass
class RunRequest:
    """A checked run request: its runner, its message, and how to free its session."""

    runner: Runner
    app_name: str
    user_id: str
    session_id: str
    message: Content | None
    state_delta: dict[str, object] | None
    config: RunConfig
    release: Callable[[], Awaitable[None]]
    on_disconnect: str = "continue"

    def execute(self, observe: bool) -> AsyncGenerator[Any, None]:
        return self.runner.execute(
            self.user_id,
            self.session_id,
            self.message,
            self.config,
            self.state_delta,
            observe=observe,
        )


_STREAMING = RunConfig(streaming_mode="sse")
_PLAIN = RunConfig()


async def start_run(
    state: RunHost,
    who: str | None,
    body: RunAgentRequest,
    *,
    message: Content | None = None,
) -> RunRequest:
    """Check `body` and claim its session; the run (or the caller) must `release` it."""
    if not body.app_name:
        raise BadRequestError("appName is required: the app (folder of AGENTS_DIR) to run")
    authorize(who, body.user_id)
    check_shared_state(who, body.state_delta)
    runner = await state.apps.runner(body.app_name)
    if message is None and body.new_message is not None:
        message = body.new_message.to_content()
    if message is not None and has_files(message):
        check_files(message, runner)  # refused before the session is claimed
    store = state.sessions
    # On a shared store the claim checks that the session exists, in the same statement.
    if not store.shared:
        session = await store.get_session(
            app_name=body.app_name,
            user_id=body.user_id,
            session_id=body.session_id,
            num_recent_events=0,
        )
        if session is None:
            raise NotFoundError(f"Session not found: {body.session_id}")
    multitask: Multitask = getattr(body, "multitask", "reject")
    on_disconnect: str = getattr(body, "on_disconnect", "continue")
    key = (body.app_name, body.user_id, body.session_id)
    # Should this server die mid-run, another replica resumes it — unless it was to stop
    # with its client, who went away with this server.
    resume = on_disconnect != "cancel"
    if multitask == "reject":
        release = await state.claims.take(*key, resume=resume)
    else:
        release = await take_with(state, key, multitask, resume=resume)
    config = _STREAMING if body.streaming else _PLAIN
    options = body.run_config
    if options is not None and options.save_input_blobs_as_artifacts:
        config = config.model_copy(update={"save_input_blobs_as_artifacts": True})
    return RunRequest(
        runner=runner,
        app_name=body.app_name,
        user_id=body.user_id,
        session_id=body.session_id,
        message=message,
        state_delta=body.state_delta,
        config=config,
        release=release,
        on_disconnect=on_disconnect,
    )


async def collect(state: RunHost, request: RunRequest) -> list[Event]:
    """Run to the end and return its records (for `/run`); the run is detached like the
    streamed ones, so a client that leaves does not cut it short."""
    run = await launch(state, request, observe=False)
    records = [item async for _, item in run.items() if isinstance(item, Event)]
    if run.error is not None:
        raise run.error
    return records


def _may_continue_a_run(message: Content | None) -> bool:
    """Whether the runner may continue an existing run with this message (then the run's
    earlier records are counted from the log): none, or only answers to calls."""
    if message is None:
        return True
    parts = message.parts
    return bool(parts) and all(p.function_response is not None for p in parts)


# How often a run's new lifecycle frames are written for the other replicas, at most (s): a
# statement per frame would double a run's writes; a rejoin elsewhere reads them this late.
KEEP_EVERY = 0.25


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Framed:
    """One format's frames of a run, made once from its items and shared by every reader
    (its subscribers, the writer keeping them for other replicas)."""

    __slots__ = ("ended", "frames", "made", "numbering")

    def __init__(self, numbering: Numbering) -> None:
        self.numbering = numbering
        self.frames: list[tuple[FrameId, bool, bytes]] = []  # (id, partial, frame)
        self.made = 0  # items framed
        self.ended = False  # the run has no more items (and its error frame, if any, is in)

    def catch_up(self, run: DetachedRun) -> list[tuple[FrameId, bool, bytes]]:
        items = run._items  # pyright: ignore[reportPrivateUsage]
        made = self.made
        if made < len(items):
            numbering, frames = self.numbering, self.frames
            for item in items[made:]:
                frames += numbering.frames(item)
            self.made = len(items)
        if run.finished and not self.ended:
            self.ended = True
            if run.error is not None:
                frame = self.numbering.error(run.error)
                assert self.numbering.last is not None
                self.frames.append((self.numbering.last, False, frame))
        return self.frames


class DetachedRun:
    """One run, driven by a task of the server (see the module docstring)."""

    __slots__ = (
        "_first",
        "_framed",
        "_items",
        "_keep_pause",
        "_sent_before",
        "_task",
        "_waiting",
        "_writer",
        "base",
        "done",
        "error",
        "finished",
        "format",
        "kept",
        "key",
        "observe",
        "on_done",
        "previous",
        "registry",
        "request",
        "root_name",
        "run_id",
        "started_at",
        "stop_reason",
    )

    def __init__(
        self,
        request: RunRequest,
        observe: bool,
        format: Format,
        root_name: str,
        kept: RunFrames | None = None,
        registry: RunRegistry | None = None,
    ) -> None:
        self.request = request
        self.observe = observe
        self.format: Format = format
        self.root_name = root_name
        # Where this run's lifecycle frames are kept for the other replicas (shared stores).
        self.kept = kept if observe else None
        # The server's runs: where an earlier part of this run (paused, answered) is found.
        self.registry = registry
        self.key = (request.app_name, request.user_id, request.session_id)
        self.run_id = ""
        self.started_at = time.time()
        self.error: BaseException | None = None
        self.stop_reason: str | None = None
        self.finished = False  # no more items (set before the session is freed)
        self.done = False  # ended, its session freed
        self.base = 0  # the ordinal of the run's last record before its first item
        self._items: list[Any] = []
        self._framed: dict[str, _Framed] = {}
        # Per format, the frames the run's earlier part sent under record `base` (from the
        # log or the kept frames; an earlier part on this server counts through `previous`).
        self._sent_before: dict[str, int] = {}
        # Subscribers waiting for the next item: a future each, made only when one waits.
        self._waiting: list[asyncio.Future[None]] = []
        self._first = asyncio.Event()
        # The frames writer's pause between two writes (a run that finishes cuts it short).
        self._keep_pause: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._writer: asyncio.Task[None] | None = None
        # The same run's earlier invocation on this server (it paused, this one resumes it).
        self.previous: DetachedRun | None = None
        self.on_done: Callable[[DetachedRun], None] | None = None

    @property
    def status(self) -> RunStatus | None:
        """`running`, `failed`, `cancelled`; None when the log tells the rest."""
        if not self.done:
            return "running"
        if self.stop_reason is not None:
            return "cancelled"
        return "failed" if self.error is not None else None

    def last_frame_id(self) -> FrameId | None:
        """The id of the last frame in the run's own format (for the status route)."""
        framed = self._framed.get(self.format)
        if framed is not None:
            frames = framed.catch_up(self)
            return frames[-1][0] if frames else None
        numbering = Numbering(self.format, self.base, self._start(self.format))
        for item in self._items:
            numbering.advance(item)
        return numbering.last

    def first_frame_id(self, fmt: Format) -> FrameId:
        """Where this server's frames of the run start in `fmt` (its earliest part here):
        the frames before it are in the log, or kept, or were sent by another replica."""
        run = self
        while run.previous is not None and (fmt == "adk" or run.previous.observe):
            run = run.previous
        return (run.base, run._start(fmt))  # pyright: ignore[reportPrivateUsage]

    def frames_of(self, fmt: Format) -> list[tuple[FrameId, bool, bytes]]:
        """`(id, partial, frame)` of every frame the run made so far in `fmt`."""
        framed = self._framed.get(fmt)
        if framed is None:
            framed = self._framed[fmt] = _Framed(Numbering(fmt, self.base, self._start(fmt)))
        return framed.catch_up(self)

    def _start(self, fmt: Format) -> int:
        """The `k` of this part's first frame under record `base`: after every frame an
        earlier part of the run sent under it."""
        k = self._sent_before.get(fmt, 0)
        previous = self.previous
        if previous is not None and (fmt == "adk" or previous.observe):
            frames = previous.frames_of(fmt)
            if frames and frames[-1][0][0] == self.base:
                k = max(k, frames[-1][0][1] + 1)
        return k

    # -- driving ------------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.create_task(self._drive())

    async def _drive(self) -> None:
        try:
            async with aclosing(self.request.execute(self.observe)) as items:
                async for item in items:
                    if not self._items and not self._first.is_set():
                        await self._begin(item)
                    self._publish(item)
        except asyncio.CancelledError:
            if self.stop_reason is None:
                raise
        except Exception as exc:
            self.error = exc
        finally:
            try:
                if self.stop_reason is not None and self.run_id:
                    await asyncio.shield(self._record_stop(self.stop_reason))
            finally:
                self.finished = True
                self._wake()
                pause = self._keep_pause
                if pause is not None and not pause.done():
                    pause.set_result(None)  # keep the last frames now
                try:
                    if self._writer is not None:
                        # Every frame is kept before the session is freed: a replica that
                        # sees it free reads them all.
                        await asyncio.shield(self._writer)
                finally:
                    try:
                        await self.request.release()  # shields its store call itself
                    except Exception as exc:  # the claim lapses by itself (its lease)
                        logger.warning("freeing the session of run %s failed: %s", self.run_id, exc)
                    finally:
                        # Even when freeing the claim failed (it then lapses): no subscriber
                        # may wait for a run that has ended.
                        self._end()

    def _end(self) -> None:
        self.done = True
        if self.on_done is not None:
            self.on_done(self)
        self._first.set()
        self._wake()

    async def _begin(self, item: Any) -> None:
        """The first item: the run's id, where its frame numbering starts, and the writer
        that keeps its frames for the other replicas."""
        self.run_id = run_id = getattr(item, "run_id", "") or ""
        request = self.request
        if run_id and _may_continue_a_run(request.message):
            if self.registry is not None:
                self.previous = self.registry.get(*self.key, run_id)
            store = request.runner.session_service
            session = await store.get_session(
                app_name=request.app_name, user_id=request.user_id, session_id=request.session_id
            )
            records = [] if session is None else [e for _, e in run_records(session.events, run_id)]
            self.base = base = len(records) - (
                1 if isinstance(item, Event) and not item.partial else 0
            )
            if base > 0 and records[base - 1].author != "user":
                self._sent_before["adk"] = adk_frame_count(records[base - 1])
            if self.kept is not None:
                last = await self._last_kept()
                if last is not None and last[0] == base:
                    self._sent_before["lifecycle"] = last[1] + 1
        else:
            self.base = 1  # the user's message is the new run's first record
        if run_id and self.kept is not None:
            self._writer = asyncio.create_task(self._keep(self.kept))
        self._first.set()

    async def _last_kept(self) -> FrameId | None:
        assert self.kept is not None
        try:
            return await self.kept.last((*self.key, self.run_id))
        except Exception as exc:  # then numbered as if nothing was kept
            logger.warning("reading the kept frames of run %s failed: %s", self.run_id, exc)
            return None

    async def _keep(self, kept: RunFrames) -> None:
        """Write the run's non-partial lifecycle frames to `kept` as they are made: at most
        one statement every `KEEP_EVERY` seconds with every frame made meanwhile, and the
        last ones as soon as the run has no more (before its session is freed)."""
        run = (*self.key, self.run_id)
        written = 0
        while True:
            if written < len(self.frames_of("lifecycle")):
                if not self.finished:
                    await self._pause_keeping()
                frames = self.frames_of("lifecycle")
                batch = [
                    (frame_id[0], frame_id[1], frame.decode())
                    for frame_id, partial, frame in frames[written:]
                    if not partial
                ]
                written = len(frames)
                if batch:
                    try:
                        await kept.keep(run, self.format, batch)
                    except Exception as exc:  # a rejoin elsewhere misses them; the run goes on
                        logger.warning("keeping frames of run %s failed: %s", self.run_id, exc)
            elif self._framed["lifecycle"].ended:
                return
            else:
                await self._next()

    async def _pause_keeping(self) -> None:
        loop = asyncio.get_running_loop()
        self._keep_pause = pause = loop.create_future()
        timer = loop.call_later(KEEP_EVERY, _resolve, pause)
        try:
            await pause
        finally:
            timer.cancel()
            self._keep_pause = None

    def _publish(self, item: Any) -> None:
        self._items.append(item)
        if self._waiting:
            self._wake()

    def _wake(self) -> None:
        waiting, self._waiting = self._waiting, []
        for future in waiting:
            if not future.done():
                future.set_result(None)

    async def _next(self) -> None:
        """Wait until an item is published or the run ends."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        await future

    async def _record_stop(self, reason: str) -> None:
        """Store an answer for every call the stop cut, then the `CANCELLED` marker."""
        request = self.request
        store = request.runner.session_service
        try:
            session = await store.get_session(
                app_name=request.app_name, user_id=request.user_id, session_id=request.session_id
            )
            if session is None:
                return
            invocations = dict.fromkeys(i.invocation_id for i in self._items if i.invocation_id)
            for invocation in invocations or {"": None}:
                cut = cut_calls(session.events, invocation) if invocation else []
                by_author: dict[str, list[Part]] = {}
                for author, call in cut:
                    answer = {"error": f"cancelled: {reason}; the call did not finish"}
                    by_author.setdefault(author, []).append(
                        Part(
                            function_response=FunctionResponse(
                                name=call.name, id=call.id, response=answer
                            )
                        )
                    )
                for author, parts in by_author.items():
                    answered = Event(
                        author=author,
                        invocation_id=invocation,
                        run_id=self.run_id,
                        content=Content(role="user", parts=parts),
                    )
                    self._publish(await store.append_event(session, answered))
            last_invocation = next(reversed(invocations), "")
            marker = Event(
                author=self.root_name,
                invocation_id=last_invocation,
                run_id=self.run_id,
                error_code=CANCELLED,
                error_message=f"the run was cancelled: {reason}",
            )
            self._publish(await store.append_event(session, marker))
            if self.observe:
                self._publish(
                    RunEnd(
                        run_id=self.run_id,
                        invocation_id=last_invocation,
                        agent_name=self.root_name,
                        is_abnormal=True,
                        error=f"cancelled: {reason}",
                    )
                )
        except Exception as exc:  # the stop itself stands; only its record is missing
            logger.warning("recording the cancellation of run %s failed: %s", self.run_id, exc)

    def cancel(self, reason: str) -> bool:
        """Stop the run at its next stop point (SPEC R7); False if it already ended."""
        if self.done or self._task is None:
            return False
        if self.stop_reason is None:
            self.stop_reason = reason
            self._task.cancel()
        return True

    async def wait(self) -> None:
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.shield(self._task)

    async def started(self) -> None:
        """Wait for the run's first item (or its end before one)."""
        await self._first.wait()

    # -- subscribing ------------------------------------------------------------------------

    async def items(self, after: int = 0) -> AsyncIterator[tuple[int, Any]]:
        """`(index, item)` of the journal from `after` on, then live until the run ends."""
        i = after
        while True:
            items = self._items
            while i < len(items):
                yield i, items[i]
                i += 1
            if self.done:
                return
            await self._next()

    async def subscribe(self, fmt: Format) -> AsyncGenerator[bytes, None]:
        """This invocation's SSE frames in `fmt`, live to the end (a failed run's stream
        ends with an error frame)."""
        i = 0
        while True:
            frames = self.frames_of(fmt)
            if i < len(frames):
                new = frames[i:]
                i += len(new)
                for _frame_id, _partial, frame in new:
                    yield frame
                continue  # more may have come while these went out
            if self.done:
                return
            await self._next()

    async def frames_after(
        self, fmt: Format, after: FrameId
    ) -> AsyncGenerator[tuple[FrameId, bytes], None]:
        """`(id, frame)` of the run's frames in `fmt` after `after` this server has, its
        earlier invocations' first, live to the end."""
        if fmt == "lifecycle" and not self.observe:
            return
        if self.previous is not None:  # the run's frames from before its pause
            async for frame_id, frame in self.previous.frames_after(fmt, after):
                yield frame_id, frame
        i = 0
        while True:
            frames = self.frames_of(fmt)
            if i < len(frames):
                new = frames[i:]
                i += len(new)
                for frame_id, _partial, frame in new:
                    if frame_id > after:
                        yield frame_id, frame
                continue  # more may have come while these went out
            if self.done:
                return
            await self._next()


class RunRegistry:
    """The runs this process runs, and the ones it ran lately (for rejoin and status)."""

    KEEP = 256  # finished runs kept for rejoins on this process (the log keeps the rest)

    def __init__(self) -> None:
        self._runs: OrderedDict[tuple[str, str, str, str], DetachedRun] = OrderedDict()
        self._current: dict[tuple[str, str, str], DetachedRun] = {}

    def add(self, run: DetachedRun) -> None:
        key = (*run.key, run.run_id)
        self._runs.pop(key, None)  # an earlier part of the run: `run.previous` keeps it
        self._runs[key] = run
        self._current[run.key] = run
        run.on_done = self._ended
        if run.done:
            self._ended(run)
        excess = len(self._runs) - self.KEEP
        if excess > 0:
            # The oldest ended runs, found from the front: once full, each add drops about
            # one, so this stops early instead of scanning every kept run per run.
            ended: list[tuple[str, str, str, str]] = []
            for k, r in self._runs.items():
                if r.done:
                    ended.append(k)
                    if len(ended) == excess:
                        break
            for k in ended:
                del self._runs[k]

    def _ended(self, run: DetachedRun) -> None:
        if self._current.get(run.key) is run:
            del self._current[run.key]

    def get(self, app_name: str, user_id: str, session_id: str, run_id: str) -> DetachedRun | None:
        return self._runs.get((app_name, user_id, session_id, run_id))

    def current(self, app_name: str, user_id: str, session_id: str) -> DetachedRun | None:
        """The session's run going on in this process, if any."""
        run = self._current.get((app_name, user_id, session_id))
        return run if run is not None and not run.done else None

    def of_session(self, key: tuple[str, str, str]) -> list[DetachedRun]:
        return [run for k, run in self._runs.items() if k[:3] == key]

    async def close(self) -> None:
        """The server stops: runs end as in a crash (nothing written; D1 resumes them)."""
        running = [run for run in self._runs.values() if not run.done and run._task]  # pyright: ignore[reportPrivateUsage]
        for run in running:
            assert run._task is not None  # pyright: ignore[reportPrivateUsage]
            run._task.cancel()  # pyright: ignore[reportPrivateUsage]
        for run in running:
            await run.wait()


async def launch(
    state: RunHost, request: RunRequest, *, observe: bool, fmt: Format | None = None
) -> DetachedRun:
    """Start `request` as a detached run and wait for its first item. A run that cannot
    start (a refusal: gone session, busy session…) raises its error; one that fails later
    is a run with `error` set."""
    root = request.runner.agent.name
    run = DetachedRun(
        request=request,
        observe=observe,
        format=fmt or ("lifecycle" if observe else "adk"),
        root_name=root,
        kept=state.sessions.run_frames if observe else None,
        registry=state.detached,
    )
    run.start()
    try:
        await run.started()
        if run.run_id:
            state.detached.add(run)
    except BaseException:
        run.cancel("the request was cancelled before the run started")
        raise
    if not run.run_id and run.error is not None and isinstance(run.error, REFUSALS):
        raise run.error
    return run


async def respond(
    state: RunHost, request: RunRequest, fmt: Format, *, background: bool = False
) -> Response:
    """A run route's answer: the run's SSE stream in `fmt`, or with `background` a 202
    `{"runId": ...}` as soon as the run has started (it then runs with the lifecycle view
    built, so it can be streamed in either format)."""
    run = await launch(state, request, observe=background or fmt == "lifecycle", fmt=fmt)
    if background:
        if not run.run_id and run.error is not None:
            raise run.error
        body = {"runId": run.run_id, "sessionId": request.session_id, "status": "running"}
        return Response(dumps(body), status_code=202, media_type="application/json")

    def leave() -> None:
        if not run.done:
            run.cancel("the client disconnected")

    on_leave = leave if request.on_disconnect == "cancel" else None
    return event_stream(run.subscribe(fmt), on_leave=on_leave)
