"""The session-service interface and the pieces every store shares.

A `Session` is a *handle* read at a version: getting one never copies the history (records are
shared and immutable), and appending through a handle older than the store raises
`StaleSessionError` (no lost update).
"""

from __future__ import annotations

import abc
import hashlib
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, SupportsIndex, cast, overload

from pydantic_core import PydanticSerializationError, to_json

from rondo._frozen import ReadOnlyDict
from rondo.errors import InvalidIdError, InvalidMessageError
from rondo.events import Event, NestedPauseEntry, PendingCall
from rondo.types import FunctionCall

if TYPE_CHECKING:
    from rondo.sessions.run_frames import RunFrames

__all__ = [
    "APP_PREFIX",
    "MAX_ID_LENGTH",
    "TEMP_PREFIX",
    "USER_PREFIX",
    "BaseSessionService",
    "ClaimResult",
    "EventLog",
    "EventsView",
    "LazyEventLog",
    "ListSessionsResponse",
    "Session",
    "apply_pending",
    "check_event_text",
    "check_ids",
    "check_scope",
    "check_session_id",
    "nested_session_id",
    "split_state_delta",
    "strip_temp_state",
    "waiting_calls",
]

APP_PREFIX = "app:"
USER_PREFIX = "user:"
TEMP_PREFIX = "temp:"

CONFIRMATION_FUNCTION_NAME = "adk_request_confirmation"

# What `claim_run` found: the session is now the caller's, another owner's, or does not exist.
ClaimResult = Literal["claimed", "busy", "missing"]

# -- what an app name, a user id and a session id may be -------------------------------------
# The same rules in every store, checked before the store is asked. 128 characters is
# google-adk's key length in its database store. A session id is a URL path segment as it is
# (`/apps/{app}/users/{user}/sessions/{id}`): RFC 3986's unreserved characters plus `:` and `@`,
# nothing a server or proxy would decode, split or normalise (`/`, `%`, `.` and `..` alone).
# App names and user ids (e-mail addresses, `auth0|123`...) may hold any printable text.

MAX_ID_LENGTH = 128
_SESSION_ID = re.compile(r"[A-Za-z0-9._~:@-]+")
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


# Names and session ids that passed their checks lately: a store checks the key of every
# get and append, and a server sees the same few again and again (issue 25.5). Bounded.
_VALID_NAMES: set[str] = set()
_VALID_IDS: set[str] = set()
_REMEMBERED = 4096


def _remember(valid: set[str], value: str) -> None:
    if len(valid) >= _REMEMBERED:
        valid.clear()
    valid.add(value)


def check_session_id(session_id: object) -> str:
    """The session id, or `InvalidIdError` saying what is wrong with it."""
    if type(session_id) is str and session_id in _VALID_IDS:
        return session_id
    if not isinstance(session_id, str):
        raise InvalidIdError(f"a session id must be a str, not {type(session_id).__name__}")
    if not session_id:
        raise InvalidIdError("the session id is empty; pass None to have one generated")
    if len(session_id) > MAX_ID_LENGTH:
        raise InvalidIdError(
            f"session id {session_id[:32]!r}… is {len(session_id)} characters long; "
            f"at most {MAX_ID_LENGTH}"
        )
    if not _SESSION_ID.fullmatch(session_id) or session_id in (".", ".."):
        raise InvalidIdError(
            f"session id {session_id!r} may hold only letters, digits and . _ ~ : @ - "
            "(it is used in URLs as it is), and may not be . or .."
        )
    _remember(_VALID_IDS, session_id)
    return session_id


def _check_name(what: str, value: object) -> None:
    if type(value) is str and value in _VALID_NAMES:
        return
    if not isinstance(value, str):
        raise InvalidIdError(f"{what} must be a str, not {type(value).__name__}")
    if not value or value.isspace():
        raise InvalidIdError(f"the {what} is empty")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidIdError(
            f"{what} {value[:32]!r}… is {len(value)} characters long; at most {MAX_ID_LENGTH}"
        )
    if _UNPRINTABLE.search(value):
        raise InvalidIdError(f"{what} {value!r} holds a control character or a lone surrogate")
    if value != value.strip():
        raise InvalidIdError(f"{what} {value!r} starts or ends with whitespace")
    _remember(_VALID_NAMES, value)


def check_scope(app_name: object, user_id: object = None) -> None:
    """Refuse (`InvalidIdError`) an app name, or a user id when one is given, that is empty,
    longer than `MAX_ID_LENGTH`, or holds a character it may not have."""
    _check_name("app name", app_name)
    if user_id is not None:
        _check_name("user id", user_id)


def check_ids(app_name: object, user_id: object, session_id: object) -> None:
    """`check_scope` and `check_session_id`: the key of one session."""
    _check_name("app name", app_name)
    _check_name("user id", user_id)
    check_session_id(session_id)


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_event_text(event: Event) -> None:
    """Refuse (`InvalidMessageError`) an event whose text — a part's, or any string of a
    function call's arguments or a function response — holds a lone surrogate: it is not
    UTF-8, so no store could write it or answer it as JSON, and a session holding it could
    never be read again. Every store calls it before writing (issue 26)."""
    content = event.content
    if content is None:
        return
    for part in content.parts:
        text = part.text
        if text is not None and not text.isascii():
            _check_text(f"the {content.role or 'message'} text", text)
        response = part.function_response
        if response is not None and response.response:
            _check_json(f"the response of {response.name!r}", response.response)
        call = part.function_call
        if call is not None and call.args:
            _check_json(f"the arguments of {call.name!r}", call.args)


def _check_json(where: str, value: object) -> None:
    """One C call when the value encodes as UTF-8 JSON (the common case: an append checks
    each call's arguments and each tool result, issue 25.5); else find the string to blame."""
    try:
        to_json(value, serialize_unknown=True)
    except PydanticSerializationError:
        _check_strings(where, value)  # raises for a lone surrogate; anything else is left
        # to the store's own checks (SPEC G3)


def _check_text(where: str, text: str) -> None:
    found = None if text.isascii() else _SURROGATE.search(text)
    if found is not None:
        raise InvalidMessageError(
            f"{where} holds a lone surrogate (at character {found.start()}), which is not "
            "UTF-8; send the text as valid Unicode"
        )


def _check_strings(where: str, value: object, depth: int = 0) -> None:
    if isinstance(value, str):
        _check_text(where, value)
    elif depth > 64:
        return  # deeper than any JSON a store keeps (SPEC G3); the store's own check refuses it
    elif isinstance(value, Mapping):
        for key, item in cast(Mapping[object, object], value).items():
            _check_strings(where, key, depth + 1)
            _check_strings(where, item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in cast(Sequence[object], value):
            _check_strings(where, item, depth + 1)


class EventLog(list[Event]):
    """An append-only list of a session's events, shared by every handle of that session.

    `derived` holds incremental views computed from the log (the model-contents view of SPEC
    C9); they live exactly as long as the log does. A store may hand out a `LazyEventLog`,
    which decodes its stored records on first access; readers that can skip records ask
    `timestamps` and `compaction_candidates` first (SPEC K3: a fresh replica decodes only what
    the model request needs).
    """

    __slots__ = ("_stored", "derived")
    _stored: _Stored  # a LazyEventLog's records still to decode; never set on a plain log

    def __init__(self, events: Sequence[Event] = ()) -> None:
        super().__init__(events)
        self.derived: dict[Any, Any] = {}

    def timestamps(self, start: int, stop: int) -> list[float]:
        """The timestamps of the records `[start, stop)`, without decoding any."""
        return [e.timestamp for e in super().__getitem__(slice(start, stop))]

    def compaction_candidates(self, start: int, stop: int) -> Iterator[int]:
        """Newest first, the indexes in `[start, stop)` that may hold a compaction record (a
        superset: the caller reads each and checks)."""
        return iter(range(stop - 1, start - 1, -1))

    def decode(self, start: int, stop: int) -> None:
        """Make sure the records `[start, stop)` are decoded (nothing to do here)."""


# What a stored record's JSON holds when its actions carry a compaction: pydantic writes the
# key exactly like this, and a quote inside a string value is escaped, so a record without
# this text holds no compaction (one with it may still be something else: it is checked).
_COMPACTION_KEY = '"compaction":{'


class _Stored:
    """What a `LazyEventLog` still has to decode: how, and the stored timestamps."""

    __slots__ = ("decode_many", "decode_one", "left", "stamps")

    def __init__(
        self,
        decode_one: Callable[[str], Event],
        decode_many: Callable[[list[str]], list[Event]],
        stamps: list[float],
        left: int,
    ) -> None:
        self.decode_one = decode_one
        self.decode_many = decode_many
        self.stamps = stamps
        self.left = left


# The list's own methods, below a LazyEventLog's (which decode). Called as functions: a
# lazy log becomes a plain EventLog mid-way once its last record is decoded.
_get = cast(Callable[[list[Any], Any], Any], list.__getitem__)  # pyright: ignore[reportUnknownMemberType]
_set = cast(Callable[[list[Any], Any, Any], None], list.__setitem__)  # pyright: ignore[reportUnknownMemberType]
_iter = cast(Callable[[list[Event]], Iterator[Event]], list.__iter__)  # pyright: ignore[reportUnknownMemberType]


def _decoding_first(name: str) -> Any:
    """A list method of a `LazyEventLog` that needs every record decoded first."""
    method = getattr(list, name)

    def call(self: LazyEventLog, *args: Any, **kwargs: Any) -> Any:
        self.decode(0, len(self))
        return method(self, *args, **kwargs)

    call.__name__ = name
    return call


class LazyEventLog(EventLog):
    """An `EventLog` of stored records, each decoded on first access (SPEC K3).

    A fresh replica's first request reads only what it needs of a long history — the newest
    summary and what follows it — so the store hands out the records' stored JSON and their
    timestamps, and a record is decoded when something reads it (`log[i]`, iteration, any
    list method). Once every record is decoded the object turns into a plain `EventLog`, so
    a warm log costs nothing extra on any access.
    """

    __slots__ = ()

    def __init__(
        self,
        payloads: list[str],
        stamps: list[float],
        decode_one: Callable[[str], Event],
        decode_many: Callable[[list[str]], list[Event]],
    ) -> None:
        super().__init__(cast(list[Event], payloads))
        self._stored = _Stored(decode_one, decode_many, stamps, len(payloads))
        if not payloads:
            self.__class__ = EventLog  # pyright: ignore[reportAttributeAccessIssue]

    def _one(self, index: int) -> Event:
        item: Any = _get(self, index)
        if type(item) is not str:
            return item  # (also whenever the log has become a plain EventLog)
        stored = self._stored
        event = stored.decode_one(item)
        _set(self, index, event)
        stored.left -= 1
        if not stored.left:
            self._done()
        return event

    def _done(self) -> None:
        del self._stored
        self.__class__ = EventLog  # pyright: ignore[reportAttributeAccessIssue]

    def decode(self, start: int, stop: int) -> None:
        start, stop, _ = slice(start, stop).indices(len(self))
        stored = self._stored
        items: list[Any] = _get(self, slice(start, stop))
        raw = [i for i, item in enumerate(items) if type(item) is str]
        if not raw:
            return
        if len(raw) == len(items):
            _set(self, slice(start, stop), stored.decode_many(items))
        else:
            events = stored.decode_many([items[i] for i in raw])
            for i, event in zip(raw, events, strict=True):
                _set(self, start + i, event)
        stored.left -= len(raw)
        if not stored.left:
            self._done()

    def timestamps(self, start: int, stop: int) -> list[float]:
        stamps = self._stored.stamps
        if stop <= len(stamps):
            return stamps[start:stop]
        tail = [e.timestamp for e in _get(self, slice(max(start, len(stamps)), stop))]
        return stamps[start:stop] + tail

    def compaction_candidates(self, start: int, stop: int) -> Iterator[int]:
        # Reads the list's items as they are (a lazy log may become plain on the way).
        for index in range(stop - 1, start - 1, -1):
            item: Any = _get(self, index)
            if type(item) is not str or _COMPACTION_KEY in item:
                yield index

    @overload
    def __getitem__(self, index: SupportsIndex) -> Event: ...
    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...
    def __getitem__(self, index: SupportsIndex | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            if index.step is None or index.step == 1:
                start, stop, _ = index.indices(len(self))
                self.decode(start, stop)
            else:
                self._all()
            return _get(self, index)
        return self._one(index.__index__())

    def _all(self) -> None:
        self.decode(0, len(self))

    def __iter__(self) -> Iterator[Event]:
        self._all()
        return _iter(self)

    def __reversed__(self) -> Iterator[Event]:
        one = LazyEventLog._one  # pyright: ignore[reportPrivateUsage]
        for index in range(len(self) - 1, -1, -1):
            yield one(self, index)

    # Everything else reads every record, or changes the list: decode them all first.
    __contains__ = _decoding_first("__contains__")
    __eq__ = _decoding_first("__eq__")
    __ne__ = _decoding_first("__ne__")
    __repr__ = _decoding_first("__repr__")
    __add__ = _decoding_first("__add__")
    __mul__ = _decoding_first("__mul__")
    copy = _decoding_first("copy")
    index = _decoding_first("index")
    count = _decoding_first("count")
    __setitem__ = _decoding_first("__setitem__")
    __delitem__ = _decoding_first("__delitem__")
    insert = _decoding_first("insert")
    pop = _decoding_first("pop")
    remove = _decoding_first("remove")
    sort = _decoding_first("sort")
    reverse = _decoding_first("reverse")
    clear = _decoding_first("clear")
    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> Any:
        return (EventLog, (list(self),))


class EventsView(Sequence[Event]):
    """The events a handle can see: a window `[start, stop)` of a shared `EventLog`."""

    __slots__ = ("_log", "_start", "_stop")

    def __init__(self, log: EventLog, start: int = 0, stop: int | None = None) -> None:
        self._log = log
        self._start = start
        self._stop = len(log) if stop is None else stop

    @property
    def log(self) -> EventLog:
        return self._log

    @property
    def start(self) -> int:
        return self._start

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> Event: ...
    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...
    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            return self._log[self._start : self._stop][index]
        n = self._stop - self._start
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("event index out of range")
        return self._log[self._start + index]

    def __iter__(self) -> Iterator[Event]:
        log = self._log
        for i in range(self._start, self._stop):
            yield log[i]

    def __reversed__(self) -> Iterator[Event]:
        log = self._log
        for i in range(self._stop - 1, self._start - 1, -1):
            yield log[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventsView | list):
            return list(self) == list(other)  # pyright: ignore[reportUnknownArgumentType]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"EventsView({len(self)} events)"

    def _extend_to(self, stop: int) -> None:
        self._stop = stop


@dataclass(eq=False)
class Session:
    """A session handle: id, merged state (`app:`, `user:` and session keys), visible events,
    the calls the last run waits on (`pending`), and the store version it was read at."""

    id: str
    app_name: str
    user_id: str
    state: dict[str, object] = field(default_factory=dict[str, object])
    events: EventsView = field(default_factory=lambda: EventsView(EventLog()))
    pending: list[PendingCall] = field(default_factory=list[PendingCall])
    version: int = 0
    last_update_time: float = 0.0
    # Issue 21.5: the records rewinds hide from `events` (the rewind records included), in
    # log order — stored, never deleted, readable for audit.
    rewound: list[Event] = field(default_factory=list[Event])

    def __post_init__(self) -> None:
        if not isinstance(self.events, EventsView):  # pyright: ignore[reportUnnecessaryIsInstance]
            self.events = EventsView(EventLog(list(self.events)))

    def _after_rewind(
        self, event: Event, target: str, version: int, pending: list[PendingCall]
    ) -> None:
        """A rewind record was committed: the handle shows the history before `target`."""
        shown = list(self.events)
        cut = next((i for i, e in enumerate(shown) if e.invocation_id == target), 0)
        self.rewound = [*self.rewound, *shown[cut:], event]
        self.events = EventsView(EventLog(shown[:cut]))
        for key, value in event.actions.state_delta.items():
            if value is None:
                self.state.pop(key, None)
            elif not key.startswith(TEMP_PREFIX):
                self.state[key] = value
        self.pending = pending
        self.version = version
        self.last_update_time = event.timestamp

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready projection of the handle."""
        data: dict[str, object] = {
            "id": self.id,
            "app_name": self.app_name,
            "user_id": self.user_id,
            "state": self.state,
            "events": [e.model_dump(mode="json") for e in self.events],
            "pending": [p.model_dump(mode="json") for p in self.pending],
            "version": self.version,
            "last_update_time": self.last_update_time,
        }
        if self.rewound:
            data["rewound"] = [e.model_dump(mode="json") for e in self.rewound]
        return data

    def _after_append(self, event: Event, version: int, pending: list[PendingCall]) -> None:
        """Advance the handle past an event the store just committed."""
        target = event.actions.rewind_before_invocation_id
        if target is not None:
            self._after_rewind(event, target, version, pending)
            return
        self.events._stop += 1  # pyright: ignore[reportPrivateUsage]
        delta = event.actions.state_delta
        if delta:
            for key, value in delta.items():
                if not key.startswith(TEMP_PREFIX):
                    self.state[key] = value
        self.pending = pending
        self.version = version
        self.last_update_time = event.timestamp


@dataclass
class ListSessionsResponse:
    """One page of sessions (without events) and the token of the next page, if any."""

    sessions: list[Session]
    next_page_token: str | None = None


def split_state_delta(
    delta: Mapping[str, object],
) -> tuple[dict[str, object], dict[str, object], dict[str, object]]:
    """Split a delta into (app, user, session) parts; `temp:` keys are dropped (SPEC R3)."""
    app: dict[str, object] = {}
    user: dict[str, object] = {}
    sess: dict[str, object] = {}
    for key, value in delta.items():
        if key.startswith(APP_PREFIX):
            app[key] = value
        elif key.startswith(USER_PREFIX):
            user[key] = value
        elif not key.startswith(TEMP_PREFIX):
            sess[key] = value
    return app, user, sess


def strip_temp_state(event: Event) -> Event:
    """The event as it is stored: without the `temp:` keys of its delta, which are never
    persisted (the same object when it has none)."""
    actions = event.actions
    delta = actions.state_delta
    if delta and any(k.startswith(TEMP_PREFIX) for k in delta):
        kept = {k: v for k, v in delta.items() if not k.startswith(TEMP_PREFIX)}
        return event.model_copy(
            update={"actions": actions.model_copy(update={"state_delta": ReadOnlyDict(kept)})}
        )
    return event


def _pending_for_call(event: Event, call: FunctionCall) -> PendingCall:
    if call.name == CONFIRMATION_FUNCTION_NAME:
        original_raw: Any = call.args.get("originalFunctionCall") or {}
        confirmation: Any = call.args.get("toolConfirmation") or {}
        original = FunctionCall.model_validate(original_raw) if original_raw else None
        return PendingCall(
            call_id=call.id or "",
            tool_name=original.name if original else call.name,
            args=dict(original.args) if original else {},
            kind="confirmation",
            hint=str(confirmation.get("hint") or ""),
            run_id=event.run_id,
            invocation_id=event.invocation_id,
            agent_name=event.author,
            original_call=original,
            original_call_id=original.id if original else None,
        )
    return PendingCall(
        call_id=call.id or "",
        tool_name=call.name,
        args=dict(call.args),
        kind="long_running",
        run_id=event.run_id,
        invocation_id=event.invocation_id,
        agent_name=event.author,
    )


def apply_pending(pending: list[PendingCall], event: Event) -> list[PendingCall]:
    """The pending calls after `event`: new long-running calls join, answered calls leave.

    Returns the same list object when nothing changed (the common case costs no copy).
    """
    content = event.content
    if content is None:
        return pending
    answered = {p.function_response.id for p in content.parts if p.function_response is not None}
    if answered and pending:
        kept = [p for p in pending if p.call_id not in answered]
        if len(kept) != len(pending):
            pending = kept
    if event.long_running_tool_ids:
        waiting = event.nested_pause
        if waiting is not None:
            added = _nested_pending(event, waiting)
        else:
            added = [
                _pending_for_call(event, p.function_call)
                for p in content.parts
                if p.function_call is not None and p.function_call.id in event.long_running_tool_ids
            ]
        if added:
            # H4: a call already listed (a task sub-agent's own request, listed again with
            # its path by the nested-pause record) is listed once, as the newer record says.
            ids = {p.call_id for p in added}
            pending = [*(p for p in pending if p.call_id not in ids), *added]
    return pending


def _nested_pending(event: Event, waiting: list[NestedPauseEntry]) -> list[PendingCall]:
    """H4: what a nested-pause record lists on its session: each call the nested run waits
    on, under the top run's ids, with the path through the call that waits on it."""
    listed: list[PendingCall] = []
    for entry in waiting:
        via = str(entry.get("call_id") or "")
        for raw in entry.get("pending") or ():
            inner = PendingCall.model_validate(raw)
            below = inner.path or (inner.agent_name,)
            listed.append(
                inner.model_copy(
                    update={
                        "run_id": event.run_id,
                        "invocation_id": event.invocation_id,
                        "path": (event.author, f"{below[0]}@{via}", *below[1:]),
                    }
                )
            )
    return listed


_UNSAFE = re.compile(r"[^A-Za-z0-9._~:@-]")


def nested_session_id(parent_session_id: str, call_id: str, index: int | None = None) -> str:
    """The id of the session a call's nested run lives in: the caller's session id, the call
    id (and the task's index for a multitask), so the API lists it next to its parent; a
    digest when that would be too long for a session id."""
    key = _UNSAFE.sub("_", call_id) + (f".{index}" if index is not None else "")
    candidate = f"{parent_session_id}~{key}"
    if len(candidate) <= MAX_ID_LENGTH:
        return candidate
    digest = hashlib.sha256(f"{parent_session_id}\0{call_id}\0{index}".encode()).hexdigest()
    return f"{parent_session_id[: MAX_ID_LENGTH - 42]}~{digest[:40]}"


def waiting_calls(events: list[Event], pending: list[PendingCall]) -> list[FunctionCall]:
    """The records of the calls in `pending`, the latest of each, in `pending`'s order."""
    wanted = {p.call_id for p in pending}
    found: dict[str, FunctionCall] = {}
    for event in reversed(events):
        for call in event.get_function_calls():
            if call.id in wanted and call.id not in found:
                found[call.id] = call
        if len(found) == len(wanted):
            break
    return [found[p.call_id] for p in pending if p.call_id in found]


class BaseSessionService(abc.ABC):
    """Stores sessions, their events and their state."""

    @abc.abstractmethod
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str | None = None,
        state: Mapping[str, object] | None = None,
    ) -> Session:
        """Create a session; `app:`/`user:` keys of `state` go to their scopes."""

    @abc.abstractmethod
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        num_recent_events: int | None = None,
        after_timestamp: float | None = None,
    ) -> Session | None:
        """A handle on the session, or None. The bounds limit which events it shows."""

    @abc.abstractmethod
    async def append_event(self, session: Session, event: Event) -> Event:
        """Store `event` and apply its state delta in one step; advances `session`.

        Partial events are returned unstored. Raises `StaleSessionError` when `session` is
        older than the stored session.
        """

    @abc.abstractmethod
    async def list_sessions(
        self,
        *,
        app_name: str,
        user_id: str | None = None,
        limit: int | None = None,
        page_token: str | None = None,
    ) -> ListSessionsResponse:
        """One page of sessions, newest first, without events."""

    @abc.abstractmethod
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete a session and its events (a missing session is not an error)."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the default does nothing."""

    async def get_or_create_session(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> Session:
        """The session, created empty when there is none (as a run's first step does)."""
        session = await self.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
        if session is None:
            session = await self.create_session(
                app_name=app_name, user_id=user_id, session_id=session_id
            )
        return session

    async def created_state(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> dict[str, object] | None:
        """The session-scope state the session was created with (a rewind restores it), or
        None when this store does not keep it."""
        return None

    async def copy_history(
        self,
        source: Session,
        *,
        new_session_id: str | None,
        before_event_id: str | None,
        state: Mapping[str, Any],
        pending: Sequence[PendingCall],
    ) -> Session | None:
        """For a fork (issue 21.5): a new session of `source`'s app and user whose log is
        `source`'s up to the record `before_event_id` (not included; all of it, as read,
        without one), with `state` (its session scope) and `pending`, copied by the store
        itself in one transaction. None when the store has no such copy: the fork then
        appends the records one by one."""
        return None

    # -- one run per session across processes (SPEC W5) --------------------------------------

    @property
    def shared(self) -> bool:
        """Whether other processes may write to this store at the same time (PostgreSQL).

        Only then do `claim_run` / `renew_runs` / `release_run` do anything: within one
        process the server already runs one invocation per session at a time."""
        return False

    async def claim_run(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        owner: str,
        ttl: float,
        resume: bool = False,
    ) -> ClaimResult:
        """Claim the session for one run by `owner` for `ttl` seconds, across every process
        on this store: `"claimed"`, `"busy"` (another owner's live claim holds it) or, on a
        shared store, `"missing"` (no such session). With `resume`, should the owner die
        with the claim held, another process may take it over (`take_lapsed_run`) and resume
        the run. The default (a store no other process writes to) grants every claim
        without looking."""
        return "claimed"

    async def renew_runs(self, owners: Sequence[str], ttl: float) -> int:
        """Extend the claims of `owners` by `ttl` seconds (one statement for all); returns
        how many were still theirs."""
        return len(owners)

    async def release_run(  # noqa: B027 - optional hook
        self, *, app_name: str, user_id: str, session_id: str, owner: str
    ) -> None:
        """Free the session `owner` claimed (nothing when it no longer holds it)."""

    async def run_claimed(
        self, *, app_name: str, user_id: str, session_id: str, lapsed_within: float = 0.0
    ) -> bool:
        """Whether a live claim holds the session (a run goes on in some process) — or,
        with `lapsed_within`, the claim of a run to be resumed that lapsed less than that
        many seconds ago (its process died; another is about to take the run over). A
        store of one process does not know: its server does (False)."""
        return False

    async def take_lapsed_run(
        self, *, owner: str, ttl: float, app_names: Sequence[str]
    ) -> tuple[tuple[str, str, str], int] | None:
        """Take over, for `owner` and `ttl` seconds, one claim taken with `resume` whose owner
        stopped renewing it (its process died mid-run), on a session of `app_names`: the
        session's key and its version when it was claimed (the records after it are the
        dead owner's), or None when there is none. A store of one process has none: its
        runs die with it."""
        return None

    @property
    def run_frames(self) -> RunFrames | None:
        """Where the frames of runs are kept for the other processes sharing this store
        (`rondo.sessions.run_frames`); None for a store of one process."""
        return None

    async def notify(self, channel: str, payload: str) -> None:  # noqa: B027 - optional hook
        """Send `payload` to the processes listening on `channel` (shared stores only)."""

    async def listen(
        self, channel: str, callback: Callable[[str], None]
    ) -> Callable[[], Awaitable[None]] | None:
        """Call `callback(payload)` for each notice on `channel`; returns how to stop
        listening, or None when the store has no notices (one process)."""
        return None


def now() -> float:
    return time.time()
