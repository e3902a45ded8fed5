"""A2A tasks in the sessions' database, so every replica serves every task (issue 10).

The SDK keeps tasks in memory by default: with two `rondo api-server --a2a` replicas behind a
load balancer, `GetTask` or `ListTasks` on the replica that did not run the task would find
nothing. `SqlTaskStores` puts them in the SDK's own `DatabaseTaskStore`, in one table
(`rondo_a2a_tasks`) of the database the sessions live in; a task's owner is its app and its
user, so an app lists only its own tasks and a user only theirs.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from a2a.server.models import Base, TaskMixin
from a2a.server.owner_resolver import resolve_user_scope

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext
    from a2a.server.tasks import TaskStore

    from rondo.sessions.base import BaseSessionService

__all__ = ["TASKS_TABLE", "SqlTaskStores", "task_stores_for"]

TASKS_TABLE = "rondo_a2a_tasks"


class _TaskRow(TaskMixin, Base):
    """The SDK's task columns in rondo's table (defined once: the SDK's `create_task_model`
    makes a new class per store, which SQLAlchemy warns about from the second one on)."""

    __tablename__ = TASKS_TABLE


def _async_url(url: str) -> str | None:
    """The SQLAlchemy async URL of a sessions database, None when its driver is missing."""
    if url.startswith("postgresql://"):
        return "postgresql+asyncpg://" + url.removeprefix("postgresql://")
    if url.startswith("sqlite:///") and importlib.util.find_spec("aiosqlite") is not None:
        return "sqlite+aiosqlite:///" + url.removeprefix("sqlite:///")
    if url.startswith("sqlite+aiosqlite:///"):
        return url
    return None


class SqlTaskStores:
    """One `DatabaseTaskStore` per app on a shared engine; `aclose` disposes of it."""

    def __init__(self, url: str) -> None:
        from sqlalchemy.ext.asyncio import create_async_engine

        self._engine = create_async_engine(url, pool_pre_ping=True)

    def for_app(self, app: str) -> TaskStore:
        from a2a.server.tasks import DatabaseTaskStore

        def owner(context: ServerCallContext) -> str:
            return f"{app}/{resolve_user_scope(context)}"

        store = DatabaseTaskStore(self._engine, owner_resolver=owner)
        row: Any = _TaskRow
        store.task_model = row
        return store

    async def aclose(self) -> None:
        await self._engine.dispose()


def task_stores_for(sessions: BaseSessionService) -> SqlTaskStores | None:
    """Task stores beside a SQL session store (PostgreSQL; SQLite with aiosqlite installed);
    None for other stores, whose tasks stay in memory."""
    from rondo.sessions.sql import SqlSessionService

    if not isinstance(sessions, SqlSessionService):
        return None
    url = _async_url(sessions.url)
    return SqlTaskStores(url) if url is not None else None
