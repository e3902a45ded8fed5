"""Session history → model contents (SPEC C1–C9).

History is not copied, it is rebuilt — but incrementally. `ContentsView` lives next to the
session's shared `EventLog` (one per agent/branch/scope) and converts each event once: the
visibility filters (C1, C2, C4), foreign-agent conversion (C3), part normalization and
client-id stripping (C7). The function-call/response repair of C6 is maintained incrementally
for the regular case (a response right after its call); an irregular history (late or repeated
responses) is repaired by a full pass, once, when it appears. Building contents for step k+1
therefore costs O(new events) (C9).

A call of an earlier invocation that never got a response (the process died, the consumer
stopped, the append was refused) and does not wait for one (long-running) is answered in the
request by a synthetic error response (G2): every provider rejects a call left unanswered. The
stored history is not rewritten; the answer lives in the view only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import cast

from rondo._frozen import replaced
from rondo._ids import CLIENT_CALL_ID_PREFIX
from rondo.errors import ContentsError
from rondo.events import NESTED_PAUSE, NO_ACTIONS, Event
from rondo.sessions.base import EventLog, EventsView, LazyEventLog
from rondo.types import Content, FunctionCall, FunctionResponse, Part

__all__ = [
    "NUDGE_TEXT",
    "ContentsView",
    "build_contents",
    "build_tail_contents",
    "is_visible_branch",
    "newest_summary",
    "summarized_head",
]

logger = logging.getLogger("rondo.contents")

NUDGE_TEXT = (
    "Continue processing previous requests as instructed. "
    "Exit or provide a summary if no more outputs are needed."
)
INTERRUPTED_CALL_ERROR = "the call was interrupted before it returned"
HIDDEN_FUNCTIONS = frozenset({"adk_request_confirmation", "adk_request_credential"})


def is_visible_branch(invocation_branch: str, event_branch: str) -> bool:
    """C1: `a.b` sees events of `a` and `a.b`, not of `a.bc`; empty branches see everything."""
    return (
        not invocation_branch
        or not event_branch
        or invocation_branch == event_branch
        or invocation_branch.startswith(event_branch + ".")
    )


def _sees(event: Event, branch: str, scope: str) -> bool:
    return event.isolation_scope == scope and (
        not branch or is_visible_branch(branch, event.branch)
    )


def newest_summary(
    log: EventLog, start: int, stop: int, branch: str, scope: str
) -> tuple[int, Event] | None:
    """The newest compaction record in `[start, stop)` a reader on `branch` and `scope` sees,
    with its index; found without decoding the records that cannot be one."""
    for index in log.compaction_candidates(start, stop):
        event = log[index]
        if event.actions.compaction is not None and _sees(event, branch, scope):
            return index, event
    return None


def summarized_head(log: EventLog, start: int, stop: int, branch: str, scope: str) -> int:
    """K3: where a reader of `[start, stop)` that applies compaction records (C5, K2) may
    begin — past the records the newest summary it sees provably replaces — else `start`.

    That summary replaces, when it is applied, every item with a timestamp in its
    `[start_timestamp, end_timestamp]`. A head of the log can be left unread when each of its
    records has such a timestamp and every record between it and the summary is newer than
    `end_timestamp` and no summary: whatever the head held (any branch, any older summary,
    whose covered events are in the head too), the summary removes it, and nothing the reader
    keeps moves. Otherwise (timestamps out of order) the whole log is read, as before."""
    found = newest_summary(log, start, stop, branch, scope)
    if found is None:
        return start
    index, event = found
    compaction = event.actions.compaction
    assert compaction is not None
    first, last = compaction.start_timestamp, compaction.end_timestamp
    stamps = log.timestamps(start, index)
    cut = len(stamps)
    while cut and stamps[cut - 1] > last:
        cut -= 1
    if cut and (min(stamps[:cut]) < first or max(stamps[:cut]) > last):
        return start
    # A summary between the head and the newest one goes where the items it replaces were —
    # possibly ahead of head items, which moves where the newest summary lands: read it all.
    for between in log.compaction_candidates(start + cut, index):
        record = log[between]
        if record.actions.compaction is not None and _sees(record, branch, scope):
            return start
    # An older summary in the head leaves an item at its own end timestamp: covered too?
    for older in log.compaction_candidates(start, start + cut):
        record = log[older]
        covered = record.actions.compaction
        if (
            covered is not None
            and _sees(record, branch, scope)
            and not first <= covered.end_timestamp <= last
        ):
            return start
    return start + cut


class _Item:
    """One visible event, converted once: its model content and its call/response ids."""

    __slots__ = ("call_ids", "content", "response_ids", "responses", "timestamp", "turn_start")

    def __init__(
        self,
        content: Content,
        call_ids: tuple[str, ...] | None,
        response_ids: tuple[str, ...] | None,
        turn_start: bool,
        timestamp: float = 0.0,
        responses: tuple[tuple[str, Part], ...] | None = None,
    ) -> None:
        self.content = content
        self.call_ids = call_ids  # in call order
        self.response_ids = response_ids
        self.responses = responses  # (call id, model-ready part) per identified response
        self.turn_start = turn_start
        self.timestamp = timestamp


# What a view holds per visible event: an `_Item`, or — for a text-only event when the view
# applies no compaction (which needs each entry's timestamp) — the record's `Content`
# itself, so that converting a long history allocates no object per event (a fresh view of
# 5,000 events added 5,000 objects for the collector to walk, issue 25.5). Such an entry
# starts a turn exactly when its role is "user" (the view only stores it so when that is
# who wrote it).
_Entry = _Item | Content


def _calls(entry: _Entry) -> tuple[str, ...] | None:
    return entry.call_ids if type(entry) is _Item else None


def _answered(entry: _Entry) -> tuple[str, ...] | None:
    return entry.response_ids if type(entry) is _Item else None


def _pairs(entry: _Entry) -> tuple[tuple[str, Part], ...] | None:
    return entry.responses if type(entry) is _Item else None


def _content(entry: _Entry) -> Content:
    return entry.content if type(entry) is _Item else entry  # pyright: ignore[reportReturnType]


def _strip_part(part: Part) -> Part:
    fc = part.function_call
    if fc is not None and fc.id and fc.id.startswith(CLIENT_CALL_ID_PREFIX):
        return replaced(part, function_call=FunctionCall(name=fc.name, args=fc.args))
    fr = part.function_response
    if fr is not None and fr.id and fr.id.startswith(CLIENT_CALL_ID_PREFIX):
        return replaced(
            part, function_response=FunctionResponse(name=fr.name, response=fr.response)
        )
    return part


def _is_hidden(part: Part) -> bool:
    fc = part.function_call
    if fc is not None:
        return fc.name in HIDDEN_FUNCTIONS
    fr = part.function_response
    return fr is not None and fr.name in HIDDEN_FUNCTIONS


def _foreign_content(event: Event) -> Content | None:
    """C3: another agent's event, retold as user-role context."""
    assert event.content is not None
    author = event.author
    parts = [Part(text="For context:")]
    for part in event.content.parts:
        if part.thought or _is_hidden(part):
            continue  # C4: whoever wrote them, protocol calls never reach the model
        if part.text:
            parts.append(Part(text=f"[{author}] said: {part.text}"))
        elif part.function_call is not None:
            fc = part.function_call
            parts.append(
                Part(text=f"[{author}] called tool `{fc.name}` with parameters: {fc.args}")
            )
        elif part.function_response is not None:
            fr = part.function_response
            parts.append(Part(text=f"[{author}] `{fr.name}` tool returned result: {fr.response}"))
        elif not part.is_empty():
            parts.append(part)
    return Content(role="user", parts=parts) if len(parts) > 1 else None


def _convert(event: Event, agent_name: str) -> _Item | None:
    content = event.content
    if content is None or not content.parts:
        # C4: transcription-only events become text parts.
        if event.input_transcription:
            return _Item(Content.user(event.input_transcription), None, None, True, event.timestamp)
        if event.output_transcription:
            text = event.output_transcription
            return _Item(Content.model(text), None, None, False, event.timestamp)
        return None
    author = event.author
    if author != "user" and author != agent_name:
        foreign = _foreign_content(event)
        if foreign is None:
            return None
        return _Item(foreign, None, None, True, event.timestamp)
    parts: list[Part] = []
    call_ids: list[str] = []
    responses: list[tuple[str, Part]] = []
    changed = False
    for part in content.parts:
        if part.text:  # the common case: plain text needs no repair
            parts.append(part)
            continue
        fc = part.function_call
        fr = part.function_response
        if _is_hidden(part):
            changed = True  # C4: confirmation/credential protocol never reaches the model.
            continue
        if fc is None and fr is None:
            if part.is_empty() and not part.thought_signature:
                changed = True
                continue
            parts.append(part)
            continue
        stripped = _strip_part(part)
        if fc is not None and fc.id:
            call_ids.append(fc.id)
        if fr is not None and fr.id:
            responses.append((fr.id, stripped))
        changed = changed or stripped is not part
        parts.append(stripped)
    if not parts:
        return None
    model_content = Content(role=content.role, parts=parts) if changed else content
    return _Item(
        model_content,
        tuple(call_ids) if call_ids else None,
        tuple(cid for cid, _ in responses) if responses else None,
        author == "user",
        event.timestamp,
        tuple(responses) if responses else None,
    )


def _without_orphans(item: _Item, orphans: set[str]) -> _Item:
    """C6: the item without its responses to calls this view never saw (dropped)."""
    parts = [
        p
        for p in item.content.parts
        if p.function_response is None or p.function_response.id not in orphans
    ]
    pairs = tuple((cid, part) for cid, part in item.responses or () if cid not in orphans)
    return _Item(
        Content(role=item.content.role, parts=parts),
        item.call_ids,
        tuple(cid for cid, _ in pairs),
        item.turn_start,
        item.timestamp,
        pairs,
    )


def _answer(pairs: list[tuple[str, Part]]) -> _Item:
    """A response record holding exactly these (call id, response part) pairs."""
    return _Item(
        Content(role="user", parts=[part for _, part in pairs]),
        None,
        tuple(cid for cid, _ in pairs),
        False,
        responses=tuple(pairs),
    )


def _latest_answers(items: Iterable[_Entry]) -> dict[str, tuple[int, Part]]:
    """call id → (index, part) of its latest response: a later response replaces older ones."""
    latest: dict[str, tuple[int, Part]] = {}
    for index, item in enumerate(items):
        for cid, part in _pairs(item) or ():
            latest[cid] = (index, part)
    return latest


def _rearrange_latest(items: list[_Entry]) -> list[_Entry]:
    """C6: move the latest response's call/response pair to the end of the history.

    Unrelated tool exchanges between the call and the response are kept; other events in
    between are skipped, as the seed describes. A latest response that answers calls of
    several model turns cannot be paired: that is an error (ContentsError).
    """
    if len(items) < 2:
        return items
    rids = _answered(items[-1])
    if not rids:
        return items
    prev_calls = _calls(items[-2])
    if prev_calls and all(r in prev_calls for r in rids):
        return items
    call_idx = -1
    for idx in range(len(items) - 2, -1, -1):
        cids = _calls(items[idx])
        if cids and any(r in cids for r in rids):
            call_idx = idx
            break
    if call_idx < 0:
        return items
    call_ids = _calls(items[call_idx]) or ()
    if not all(r in call_ids for r in rids):
        raise ContentsError(
            f"the latest function responses {list(rids)} answer calls from more than one "
            "model turn; they cannot be paired"
        )
    between = items[call_idx + 1 : -1]
    related: list[_Entry] = []
    unrelated: list[_Entry] = []
    for it in between:
        rids_between = _answered(it)
        if rids_between and any(r in call_ids for r in rids_between):
            related.append(it)
            # Answers it holds for other calls stay with those calls.
            others = [(cid, part) for cid, part in _pairs(it) or () if cid not in call_ids]
            if others:
                unrelated.append(_answer(others))
        elif _calls(it) or rids_between:
            unrelated.append(it)
    latest = _latest_answers([*related, items[-1]])
    pairs = [(cid, latest[cid][1]) for cid in call_ids if cid in latest]
    return [*items[:call_idx], *unrelated, items[call_idx], _answer(pairs)]


def _rearrange_history(items: list[_Entry]) -> list[_Entry]:
    """C6: every call event is followed by its latest responses; orphans are dropped, and a
    response record answering several call events is split between them."""
    latest = _latest_answers(items)
    out: list[_Entry] = []
    for item in items:
        if type(item) is not _Item:
            out.append(item)  # text: nothing to pair
            continue
        if item.response_ids:
            continue
        out.append(item)
        cids = item.call_ids
        if not cids:
            continue
        pairs = [(cid, latest[cid][1]) for cid in cids if cid in latest]
        if not pairs:
            continue
        sources = {latest[cid][0] for cid, _ in pairs}
        if len(sources) == 1:
            source = items[sources.pop()]
            if _answered(source) == tuple(cid for cid, _ in pairs):
                out.append(source)  # the common case: reuse the record as it is
                continue
        out.append(_answer(pairs))
    return out


def _repair(items: list[_Entry]) -> list[Content]:
    return [_content(item) for item in _rearrange_history(_rearrange_latest(items))]


class ContentsView:
    """The incrementally maintained model contents of one agent on one branch and scope."""

    __slots__ = (
        "_agent",
        "_all_calls",
        "_branch",
        "_compaction",
        "_foreign_calls",
        "_items",
        "_out",
        "_out_valid",
        "_responded",
        "_scope",
        "_sealed",
        "_turn_start",
        "_unanswered",
        "upto",
    )

    def __init__(
        self, agent_name: str, branch: str, scope: str, start: int, compaction: bool = False
    ) -> None:
        self._agent = agent_name
        self._branch = branch
        self._scope = scope
        self._compaction = compaction
        self._items: list[_Entry] = []
        self._out: list[Content] = []
        self._out_valid = True
        self._all_calls: set[str] = set()
        # Calls other agents made (this view shows them as context): an answer to one is
        # theirs — a long-running result a user sent back in a sequence — and is left out
        # without a warning.
        self._foreign_calls: set[str] = set()
        self._responded: set[str] = set()
        # G2: call id → (invocation id, tool name) of calls no response answered yet.
        self._unanswered: dict[str, tuple[str, str]] = {}
        # G2: call id → the synthetic answer standing in for it, until a real one arrives.
        self._sealed: dict[str, _Item] = {}
        self._turn_start = -1
        self.upto = start

    def advance(self, log: EventLog | list[Event], stop: int) -> None:
        """Convert the events `[upto, stop)` of the log."""
        if type(log) is LazyEventLog and self.upto < stop:
            log.decode(self.upto, stop)  # in one go, not one by one below
        branch = self._branch
        scope = self._scope
        agent = self._agent
        items = self._items
        for i in range(self.upto, stop):
            event = log[i]
            # The record's fields straight from its dict: a fresh replica converts a whole
            # history at once, and a pydantic attribute read costs several dict reads.
            values = event.__dict__
            if values["isolation_scope"] != scope:
                continue
            if branch and not is_visible_branch(branch, values["branch"]):
                continue
            actions = values["actions"]
            if actions is not NO_ACTIONS and actions.compaction is not None:
                # C5: a summary replaces the events it covers — only while compaction is
                # on; otherwise a stored record must not delete anybody's history.
                if self._compaction:
                    compaction = actions.compaction
                    self._apply_compaction(
                        compaction.start_timestamp,
                        compaction.end_timestamp,
                        compaction.compacted_content,
                    )
                    items = self._items
                continue
            metadata = values["custom_metadata"]
            if metadata is not None and NESTED_PAUSE in metadata:
                # H4: the calls a nested run waits on, listed for the session: never the
                # model's, and their answers are that run's (left out without a warning).
                self._foreign_calls.update(c.id for c in event.get_function_calls() if c.id)
                continue
            content = values["content"]
            author = values["author"]
            if content is not None and (author == "user" or author == agent):
                parts = content.__dict__["parts"]
                for part in parts:
                    if not part.__dict__["text"]:
                        break
                else:
                    if parts:
                        # The common case, text only: the record's content as it is (what
                        # `_convert` and `_add` would do, in line).
                        turn_start = author == "user"
                        if turn_start:
                            self._turn_start = len(items)
                        if self._compaction or turn_start != (content.role == "user"):
                            entry = _Item(content, None, None, turn_start, values["timestamp"])
                            items.append(entry)
                        else:
                            items.append(content)
                        if self._out_valid:
                            self._out.append(content)
                        continue
            if event.author != "user" and event.author != agent:
                for call in event.get_function_calls():
                    if call.id:
                        self._foreign_calls.add(call.id)
            item = _convert(event, agent)
            if item is None:
                continue
            if item.call_ids is not None:
                waiting = event.long_running_tool_ids
                for call in event.get_function_calls():
                    if call.id and call.id not in waiting and call.name not in HIDDEN_FUNCTIONS:
                        self._unanswered[call.id] = (event.invocation_id, call.name)
            self._add(item)
        self.upto = stop

    def _apply_compaction(self, start: float, end: float, summary: Content) -> None:
        """Replace the items in [start, end] by the summary, once (then incremental again)."""
        # (A view that applies compaction holds `_Item`s only.)
        entries = cast(list[_Item], self._items)
        kept: list[_Entry] = []
        position = -1
        for item in entries:
            if start <= item.timestamp <= end:
                if position < 0:
                    position = len(kept)
                continue
            kept.append(item)
        items = cast(list[_Item], kept)
        if position < 0:
            position = sum(1 for item in items if item.timestamp < start)
        items.insert(position, _Item(summary, None, None, False, end))
        self._items = kept
        self._all_calls = {c for it in items for c in it.call_ids or ()}
        self._responded = {r for it in items for r in it.response_ids or ()}
        self._unanswered = {c: v for c, v in self._unanswered.items() if c in self._all_calls}
        self._sealed = {c: it for c, it in self._sealed.items() if any(it is k for k in kept)}
        self._turn_start = max((i for i, it in enumerate(items) if it.turn_start), default=-1)
        self._out_valid = False

    def _add(self, item: _Item) -> None:
        items = self._items
        rids = item.response_ids
        if rids:
            known = [r for r in rids if r in self._all_calls]
            if len(known) < len(rids):
                orphans = [r for r in rids if r not in self._all_calls]
                unknown = [r for r in orphans if r not in self._foreign_calls]
                if unknown:
                    logger.warning("dropping function responses without a call: %s", unknown)
                if not known:
                    return
                item = _without_orphans(item, set(orphans))
                rids = item.response_ids
            assert rids is not None
            if self._sealed:
                self._unseal(rids)
            prev = items[-1] if items else None
            # Regular: right after its calls, each answered once, in call order (a record
            # answering in another order is rebuilt in call order, like any irregular one).
            prev_calls = _calls(prev) if prev is not None else None
            regular = (
                prev_calls is not None
                and not any(r in self._responded for r in rids)
                and rids == tuple(c for c in prev_calls if c in rids)
            )
            self._responded.update(known)
            unanswered = self._unanswered
            if unanswered:
                for r in known:
                    unanswered.pop(r, None)
            items.append(item)
            if regular and self._out_valid:
                self._out.append(item.content)
            else:
                self._out_valid = False
            return
        if item.call_ids:
            self._all_calls.update(item.call_ids)
        if item.turn_start:
            self._turn_start = len(items)
        items.append(item)
        if self._out_valid:
            self._out.append(item.content)

    def _unseal(self, rids: tuple[str, ...]) -> None:
        """A real answer arrived for a call answered as interrupted: the synthetic answer
        goes, so the view is what it would be had the call never been sealed."""
        for rid in rids:
            synthetic = self._sealed.pop(rid, None)
            if synthetic is None:
                continue
            at = next(i for i, it in enumerate(self._items) if it is synthetic)
            del self._items[at]
            if at < self._turn_start:
                self._turn_start -= 1
            self._responded.discard(rid)
            self._out_valid = False

    def _answer_interrupted(self, invocation_id: str) -> None:
        """G2: answer the calls of earlier invocations that never got a response, right after
        their call, with an error the model can act on. Each such call is answered once; the
        answer stays in the view for every later request."""
        stale = [
            (cid, name) for cid, (inv, name) in self._unanswered.items() if inv != invocation_id
        ]
        if not stale:
            return
        items = self._items
        for cid, name in stale:
            del self._unanswered[cid]
            at = next(i for i in range(len(items) - 1, -1, -1) if cid in (_calls(items[i]) or ()))
            part = _strip_part(
                Part(
                    function_response=FunctionResponse(
                        name=name, response={"error": INTERRUPTED_CALL_ERROR}, id=cid
                    )
                )
            )
            synthetic = _answer([(cid, part)])
            call = items[at]
            if type(call) is _Item:  # compaction keeps it with its call
                synthetic.timestamp = call.timestamp
            items.insert(at + 1, synthetic)
            self._sealed[cid] = synthetic
            if at + 1 <= self._turn_start:
                self._turn_start += 1
            self._responded.add(cid)
        self._out_valid = False

    def contents(
        self, *, current_turn_only: bool = False, invocation_id: str | None = None
    ) -> list[Content]:
        """A fresh list (callers may edit it); items are shared records. With `invocation_id`,
        unanswered calls of other invocations are answered as interrupted (G2)."""
        if self._unanswered and invocation_id is not None:
            self._answer_interrupted(invocation_id)
        items = self._items
        last = items[-1] if items else None
        answers = last.response_ids if type(last) is _Item else None
        if current_turn_only and self._turn_start >= 0:
            result = _repair(items[self._turn_start :])
        elif (
            answers
            and len(items) >= 2
            and not ((calls := _calls(items[-2])) and any(r in calls for r in answers))
        ):
            # The latest answers are not right after their calls: C6 moves them there.
            result = _repair(items)
        else:
            if not self._out_valid:
                self._out = [_content(it) for it in _rearrange_history(items)]
                self._out_valid = True
            result = list(self._out)
        if result and result[-1].role != "user":
            result.append(Content(role="user", parts=[Part(text=NUDGE_TEXT)]))
        return result


def build_contents(
    events: EventsView,
    *,
    agent_name: str,
    branch: str,
    isolation_scope: str,
    current_turn_only: bool = False,
    compaction: bool = False,
    invocation_id: str | None = None,
) -> list[Content]:
    """The model contents for an agent, reusing the view cached on the session's log.

    `invocation_id` is the invocation the request is for: calls of earlier invocations that
    never got a response are answered as interrupted (G2)."""
    log = events.log
    start = events.start
    stop = start + len(events)
    key = ("contents", agent_name, branch, isolation_scope, start, compaction)
    view: ContentsView | None = log.derived.get(key)
    if view is None or view.upto > stop:
        fresh = ContentsView(agent_name, branch, isolation_scope, start, compaction)
        if compaction:  # K3: what the newest summary replaces is never read
            fresh.upto = summarized_head(log, start, stop, branch, isolation_scope)
        if view is None:
            log.derived[key] = fresh
        view = fresh
    view.advance(log, stop)
    return view.contents(current_turn_only=current_turn_only, invocation_id=invocation_id)


# -- reading only the newest records (K3: a sliding window on a fresh replica) -------------------

# How many of the newest records a tail read starts with, per turn the window keeps (a turn is
# usually a user message and an answer, with a tool exchange or two); doubled until enough.
_TAIL_RECORDS_PER_TURN = 8
_TAIL_MIN_RECORDS = 64


class _Tail:
    """A contents view of the log's newest records `[head, ...)` and the call ids those
    records hold (any author, branch or scope), kept on the log like the full view; no view:
    the whole history is read (`build_contents`)."""

    __slots__ = ("calls", "head", "view")

    def __init__(self, view: ContentsView | None, head: int, calls: set[str]) -> None:
        self.view = view
        self.head = head
        self.calls = calls


def _self_contained(log: EventLog, start: int, stop: int, calls: set[str]) -> bool:
    """Whether every function response in `[start, stop)` answers a call in `calls` or in
    those records (adding theirs to `calls`): then the contents of those records are exactly
    the end of the whole history's contents (C6 pairs nothing across the boundary)."""
    for index in range(start, stop):
        content = log[index].content
        if content is None:
            continue
        for part in content.parts:
            call, response = part.function_call, part.function_response
            if call is not None and call.id:
                calls.add(call.id)
            elif response is not None and response.id and response.id not in calls:
                return False  # (a response without an id pairs with nothing)
    return True


def _first_content(
    log: EventLog, start: int, stop: int, agent: str, branch: str, scope: str
) -> Content | None:
    """The first content the whole history's view holds, reading from its start only until
    it finds one (None: none visible)."""
    view = ContentsView(agent, branch, scope, start)
    step = 1
    while view.upto < stop and not view._items:  # pyright: ignore[reportPrivateUsage]
        view.advance(log, min(stop, view.upto + step))
        step *= 2
    items = view._items  # pyright: ignore[reportPrivateUsage]
    return _content(items[0]) if items else None


def build_tail_contents(
    events: EventsView,
    *,
    agent_name: str,
    branch: str,
    isolation_scope: str,
    invocation_id: str | None,
    covers: Callable[[list[Content]], bool],
    turns: int,
    front: Callable[[Content], bool] | None = None,
    first_read: int | None = None,
) -> list[Content]:
    """K3: the model contents built from the newest records only, for a view that keeps the
    end of the history (a sliding window): what `build_contents` gives, minus a head the
    window provably drops, so a fresh replica decodes only the tail of a long session.

    `covers(contents)` says whether the window, applied to the contents of a tail, keeps
    exactly what it keeps of the whole history's contents (it cuts inside the tail, past its
    first turn); `turns` sizes the first read (`first_read`: its number of records, for
    tests); `front(content)` is True when the window
    treats the history's first content specially (a summary it keeps in front), and then the
    tail must not start with such a content either. A tail is used only when it is
    self-contained (no response in it answers a call before it, so C6 pairs nothing across
    the cut); otherwise, or when the window would reach before it, a tail twice as long is
    read, up to the whole history (`build_contents`)."""
    log = events.log
    start = events.start
    stop = start + len(events)
    key = ("tail_contents", agent_name, branch, isolation_scope, start)
    tail: _Tail | None = log.derived.get(key)
    # A handle that sees fewer records than the cached tail's view (an older handle, a
    # rewind) gets contents of its own, leaving the cache to the others, as the full view does.
    keep = tail is None or tail.view is None or tail.view.upto <= stop
    if not keep:
        tail = None
    elif tail is not None and tail.view is not None:
        view = tail.view
        if type(log) is LazyEventLog and view.upto < stop:
            log.decode(view.upto, stop)
        if _self_contained(log, view.upto, stop, tail.calls):
            view.advance(log, stop)
            contents = view.contents(invocation_id=invocation_id)
            if covers(contents) and (front is None or not front(contents[0])):
                return contents
        tail = None  # the window reaches before this tail now: read again
    size = first_read or max(_TAIL_MIN_RECORDS, turns * _TAIL_RECORDS_PER_TURN)
    if tail is None and stop - size > start and front is not None:
        first = _first_content(log, start, stop, agent_name, branch, isolation_scope)
        if first is not None and front(first):
            size = stop - start  # the window keeps the history's first content: read it all
    while tail is None and stop - size > start:
        head = stop - size
        size *= 2
        if type(log) is LazyEventLog:
            log.decode(head, stop)
        calls: set[str] = set()
        if not _self_contained(log, head, stop, calls):
            continue
        view = ContentsView(agent_name, branch, isolation_scope, head)
        view.advance(log, stop)
        contents = view.contents(invocation_id=invocation_id)
        if covers(contents) and (front is None or not front(contents[0])):
            if keep:
                log.derived[key] = _Tail(view, head, calls)
            return contents
    if keep:
        # The whole history, from now on for this log (its records are decoded by now, and
        # the full view is incremental): a window that never fits a tail does not retry.
        log.derived[key] = _Tail(None, start, set())
    return build_contents(
        events,
        agent_name=agent_name,
        branch=branch,
        isolation_scope=isolation_scope,
        invocation_id=invocation_id,
    )
