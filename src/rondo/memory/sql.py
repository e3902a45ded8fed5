"""`SqlMemoryService`: memory searched by the database's own full-text index (SPEC R5).

SQLite indexes the remembered text with FTS5 (ranked by bm25), PostgreSQL with a `tsvector`
column and a GIN index (ranked by `ts_rank`); both use a language-neutral tokenizer (no
stemming), so a memory matches when it shares a word with the query, as in the in-memory
service. Memories live in the same kind of database as sessions, possibly the same one.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import URL

from rondo.memory._text import event_text, words
from rondo.memory.base import BaseMemoryService, MemoryEntry, SearchMemoryResponse
from rondo.sessions._sqlengine import (
    Executor,
    Sql,
    VersionedSchema,
    default_sqlite_url,
    open_database,
    version_table,
)
from rondo.sessions.base import Session
from rondo.types import Content

__all__ = ["SqlMemoryService"]

SCHEMA_VERSION = 1

_CONTENT = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


class _MemoryTables:
    def __init__(self, prefix: str) -> None:
        md = self.metadata = sa.MetaData()
        self.prefix = prefix
        self.version = version_table(md, f"{prefix}schema")
        self.memories = sa.Table(
            f"{prefix}memories",
            md,
            # On SQLite an INTEGER PRIMARY KEY is the rowid the FTS5 index points at.
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("app_name", sa.String(), nullable=False),
            sa.Column("user_id", sa.String(), nullable=False),
            sa.Column("session_id", sa.String(), nullable=False),
            sa.Column("event_id", sa.String(), nullable=False),
            sa.Column("author", sa.String(), nullable=False),
            sa.Column("timestamp", sa.Float, nullable=False),
            sa.Column("text", sa.Text, nullable=False),
            sa.Column("content", _CONTENT, nullable=False),
            sa.Index(f"{prefix}memories_by_session", "app_name", "user_id", "session_id"),
        )
        self.fts = f"{prefix}memories_fts"
        self.schema = VersionedSchema(
            "memory", md, SCHEMA_VERSION, version_table=self.version, extra_ddl=self._ddl
        )

    async def _ddl(self, ex: Executor) -> None:
        """The full-text index, in each database's own dialect."""
        t, fts = self.memories.name, self.fts
        if ex.dialect == "postgresql":
            await ex.script(
                f"ALTER TABLE {t} ADD COLUMN tsv tsvector "
                "GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED"
            )
            await ex.script(f"CREATE INDEX {t}_tsv ON {t} USING GIN (tsv)")
            return
        # An external-content FTS5 index over `text`, kept in step by triggers.
        await ex.script(
            f"CREATE VIRTUAL TABLE {fts} USING fts5(text, content='{t}', content_rowid='id', "
            "tokenize='unicode61')"
        )
        await ex.script(
            f"CREATE TRIGGER {t}_ai AFTER INSERT ON {t} BEGIN "
            f"INSERT INTO {fts}(rowid, text) VALUES (new.id, new.text); END"
        )
        await ex.script(
            f"CREATE TRIGGER {t}_ad AFTER DELETE ON {t} BEGIN "
            f"INSERT INTO {fts}({fts}, rowid, text) VALUES ('delete', old.id, old.text); END"
        )


def _fts5_query(terms: Sequence[str]) -> str:
    # Each word a quoted FTS5 string: no query syntax can come from the user's text.
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class SqlMemoryService(BaseMemoryService):
    """Memories in SQLite (FTS5) or PostgreSQL (tsvector); same URLs as `SqlSessionService`.

    `add_session_to_memory` replaces what was remembered of that session; `search_memory`
    returns the `max_results` best matches of any query word, most relevant first.
    """

    def __init__(
        self,
        url: str | URL | os.PathLike[str] | None = None,
        *,
        max_results: int = 20,
        migrate: bool = False,
        table_prefix: str = "rondo_",
        pool_size: int = 10,
        connect_args: Mapping[str, object] | None = None,
    ) -> None:
        self._db = open_database(
            url if url is not None else default_sqlite_url(),
            pool_size=pool_size,
            connect_args=connect_args,
        )
        self._tables = _MemoryTables(table_prefix)
        self._migrate = migrate
        self.max_results = max_results
        t, fts = self._tables.memories.name, self._tables.fts
        pg = self._db.postgres
        self._delete = Sql(
            f"DELETE FROM {t} WHERE app_name = :app AND user_id = :user AND session_id = :sid"
        )
        self._insert = Sql(
            f"INSERT INTO {t} (app_name, user_id, session_id, event_id, author, timestamp, "
            "text, content) VALUES (:app_name, :user_id, :session_id, :event_id, :author, "
            f":timestamp, :text, :content{'::jsonb' if pg else ''})"
        )
        columns = f"{t}.session_id, {t}.author, {t}.timestamp, {t}.content"
        if pg:
            query = "to_tsquery('simple', :q)"
            self._search = Sql(
                f"SELECT {columns} FROM {t} WHERE app_name = :app AND user_id = :user "
                f"AND tsv @@ {query} ORDER BY ts_rank(tsv, {query}) DESC, timestamp DESC "
                "LIMIT :limit"
            )
        else:
            self._search = Sql(
                f"SELECT {columns} FROM {fts} JOIN {t} ON {t}.id = {fts}.rowid "
                f"WHERE {fts} MATCH :q AND {t}.app_name = :app AND {t}.user_id = :user "
                f"ORDER BY bm25({fts}), {t}.timestamp DESC LIMIT :limit"
            )

    async def migrate(self) -> None:
        """Upgrade an older database schema to this version of rondo."""
        await self._tables.schema.ready(self._db, migrate=True)

    async def close(self) -> None:
        await self._db.close()

    async def _ready(self) -> None:
        await self._tables.schema.ready(self._db, migrate=self._migrate)

    async def _replace(
        self, ex: Executor, params: dict[str, Any], rows: list[dict[str, Any]]
    ) -> None:
        await ex.execute(self._delete, params)
        for row in rows:
            await ex.execute(self._insert, row)

    async def _find(self, ex: Executor, params: dict[str, Any]) -> Sequence[Sequence[Any]]:
        return await ex.fetch(self._search, params)

    async def add_session_to_memory(self, session: Session) -> None:
        await self._ready()
        rows: list[dict[str, Any]] = []
        for event in session.events:
            text = event_text(event)
            if text and event.content is not None:
                rows.append(
                    {
                        "app_name": session.app_name,
                        "user_id": session.user_id,
                        "session_id": session.id,
                        "event_id": event.id or uuid.uuid4().hex,
                        "author": event.author,
                        "timestamp": event.timestamp,
                        "text": text,
                        "content": event.content.model_dump_json(),
                    }
                )
        params = {"app": session.app_name, "user": session.user_id, "sid": session.id}
        await self._db.write(partial(self._replace, params=params, rows=rows))

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        await self._ready()
        terms = words(query)
        if not terms:
            return SearchMemoryResponse()
        q = " | ".join(terms) if self._db.postgres else _fts5_query(terms)
        params = {"app": app_name, "user": user_id, "q": q, "limit": self.max_results}
        rows = await self._db.read(partial(self._find, params=params))
        return SearchMemoryResponse(
            memories=[
                MemoryEntry(
                    content=Content.model_validate_json(content),
                    author=author,
                    timestamp=timestamp,
                    session_id=session_id,
                )
                for session_id, author, timestamp, content in rows
            ]
        )
