"""The in-memory memory service: keyword search over remembered sessions (SPEC R5)."""

from __future__ import annotations

from dataclasses import dataclass

from rondo.memory._text import event_text, words
from rondo.memory.base import BaseMemoryService, MemoryEntry, SearchMemoryResponse
from rondo.sessions.base import Session

__all__ = ["InMemoryMemoryService"]


@dataclass(frozen=True, slots=True)
class _Remembered:
    entry: MemoryEntry
    words: frozenset[str]


class InMemoryMemoryService(BaseMemoryService):
    """Remembers sessions in a dict. A memory matches when it shares a word with the query;
    the best matches (most shared words, then newest) come first, at most `max_results`."""

    def __init__(self, *, max_results: int = 20) -> None:
        self.max_results = max_results
        self._by_user: dict[tuple[str, str], dict[str, list[_Remembered]]] = {}

    async def add_session_to_memory(self, session: Session) -> None:
        remembered: list[_Remembered] = []
        for event in session.events:
            text = event_text(event)
            if text and event.content is not None:
                entry = MemoryEntry(
                    content=event.content,
                    author=event.author,
                    timestamp=event.timestamp,
                    session_id=session.id,
                )
                remembered.append(_Remembered(entry, frozenset(words(text))))
        # Adding a session again replaces what was remembered of it.
        self._by_user.setdefault((session.app_name, session.user_id), {})[session.id] = remembered

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        wanted = set(words(query))
        if not wanted:
            return SearchMemoryResponse()
        scored: list[tuple[int, float, MemoryEntry]] = []
        for memories in self._by_user.get((app_name, user_id), {}).values():
            for memory in memories:
                hits = len(wanted & memory.words)
                if hits:
                    scored.append((hits, memory.entry.timestamp or 0.0, memory.entry))
        scored.sort(key=lambda s: (-s[0], -s[1]))
        return SearchMemoryResponse(memories=[s[2] for s in scored[: self.max_results]])
