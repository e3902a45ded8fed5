"""Memory services: remember sessions, search them (SPEC R5). Nothing is archived or
injected unless a caller or tool asks."""

from typing import TYPE_CHECKING, Any

from rondo.memory.base import BaseMemoryService, MemoryEntry, SearchMemoryResponse
from rondo.memory.memory import InMemoryMemoryService

if TYPE_CHECKING:
    from rondo.memory.sql import SqlMemoryService

__all__ = [
    "BaseMemoryService",
    "InMemoryMemoryService",
    "MemoryEntry",
    "SearchMemoryResponse",
    "SqlMemoryService",
]


def __getattr__(name: str) -> Any:
    if name == "SqlMemoryService":  # imports SQLAlchemy: only for code that uses it
        from rondo.memory.sql import SqlMemoryService

        return SqlMemoryService
    raise AttributeError(f"module 'rondo.memory' has no attribute {name!r}")
