"""Session services: in-memory and SQL (SQLite by default, PostgreSQL at scale)."""

from rondo.sessions.base import BaseSessionService, ListSessionsResponse, Session
from rondo.sessions.memory import InMemorySessionService

__all__ = [
    "BaseSessionService",
    "InMemorySessionService",
    "ListSessionsResponse",
    "Session",
]
