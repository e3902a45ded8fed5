"""The memory-service interface: add a session's events, search them (SPEC R5)."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field

from rondo.sessions.base import Session
from rondo.types import Content

__all__ = ["BaseMemoryService", "MemoryEntry", "SearchMemoryResponse"]


@dataclass
class MemoryEntry:
    """One remembered piece of a past conversation."""

    content: Content
    author: str | None = None
    timestamp: float | None = None
    session_id: str | None = None


@dataclass
class SearchMemoryResponse:
    memories: list[MemoryEntry] = field(default_factory=list[MemoryEntry])


class BaseMemoryService(abc.ABC):
    """Long-term memory. Nothing is archived unless a caller or tool asks (overview §4.4)."""

    @abc.abstractmethod
    async def add_session_to_memory(self, session: Session) -> None:
        """Remember the session's events."""

    @abc.abstractmethod
    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """Memories of this user that match `query`."""
