"""Session services: in-memory and SQL (SQLite by default, PostgreSQL at scale)."""

from typing import TYPE_CHECKING, Any

from rondo.sessions.base import BaseSessionService, ListSessionsResponse, Session
from rondo.sessions.memory import InMemorySessionService

if TYPE_CHECKING:
    from rondo.sessions.sql import SqlSessionService

__all__ = [
    "BaseSessionService",
    "InMemorySessionService",
    "ListSessionsResponse",
    "Session",
    "SqlSessionService",
]


def __getattr__(name: str) -> Any:
    if name == "SqlSessionService":  # imports SQLAlchemy: only for code that uses it
        from rondo.sessions.sql import SqlSessionService

        return SqlSessionService
    raise AttributeError(f"module 'rondo.sessions' has no attribute {name!r}")
