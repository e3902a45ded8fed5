"""`SqlMemoryService`: memory searched by the database's own full-text index (SPEC R5).

SQLite indexes the remembered text with FTS5 (ranked by bm25), PostgreSQL with a `tsvector`
column and a GIN index (ranked by `ts_rank`); both use a language-neutral tokenizer (no
stemming), so a memory matches when it shares a word with the query, as in the in-memory
service. Memories live in the same kind of database as sessions, possibly the same one.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import partial
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import URL, Connection

from rondo.memory._text import event_text, words
from rondo.memory.base import BaseMemoryService, MemoryEntry, SearchMemoryResponse
from rondo.sessions._sqlengine import Database, Executor, VersionedSchema, version_table
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

    def _ddl(self, conn: Connection) -> None:
        """The full-text index, in each database's own dialect."""
        t, fts = self.memories.name, self.fts
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(
                f"ALTER TABLE {t} ADD COLUMN tsv tsvector "
                "GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED"
            )
            conn.exec_driver_sql(f"CREATE INDEX {t}_tsv ON {t} USING GIN (tsv)")
            return
        # An external-content FTS5 index over `text`, kept in step by triggers.
        conn.exec_driver_sql(
            f"CREATE VIRTUAL TABLE {fts} USING fts5(text, content='{t}', content_rowid='id', "
            "tokenize='unicode61')"
        )
        conn.exec_driver_sql(
            f"CREATE TRIGGER {t}_ai AFTER INSERT ON {t} BEGIN "
            f"INSERT INTO {fts}(rowid, text) VALUES (new.id, new.text); END"
        )
        conn.exec_driver_sql(
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
        url: str | URL | None = None,
        *,
        max_results: int = 20,
        migrate: bool = False,
        table_prefix: str = "rondo_",
        **engine_kwargs: Any,
    ) -> None:
        from rondo.sessions._sqlengine import default_sqlite_url

        self._db = Database(url if url is not None else default_sqlite_url(), **engine_kwargs)
        self._tables = _MemoryTables(table_prefix)
        self._migrate = migrate
        self.max_results = max_results
        m = self._tables.memories
        app, user = sa.bindparam("app", type_=sa.String()), sa.bindparam("user", type_=sa.String())
        self._delete = m.delete().where(
            m.c.app_name == app,
            m.c.user_id == user,
            m.c.session_id == sa.bindparam("sid", type_=sa.String()),
        )
        self._insert = m.insert()
        columns = (m.c.session_id, m.c.author, m.c.timestamp, m.c.content)
        limit = sa.bindparam("limit", type_=sa.Integer())
        if self._db.postgres:
            query = sa.func.to_tsquery("simple", sa.bindparam("q", type_=sa.String()))
            tsv = sa.column("tsv", type_=sa.Text())
            self._search = (
                sa.select(*columns)
                .where(m.c.app_name == app, m.c.user_id == user, tsv.op("@@")(query))
                .order_by(sa.func.ts_rank(tsv, query).desc(), m.c.timestamp.desc())
                .limit(limit)
            )
        else:
            fts = sa.table(self._tables.fts, sa.column("rowid"), sa.column(self._tables.fts))
            match = fts.c[self._tables.fts].op("MATCH")(sa.bindparam("q", type_=sa.String()))
            self._search = (
                sa.select(*columns)
                .select_from(fts.join(m, m.c.id == fts.c.rowid))
                .where(match, m.c.app_name == app, m.c.user_id == user)
                .order_by(sa.func.bm25(sa.literal_column(self._tables.fts)), m.c.timestamp.desc())
                .limit(limit)
            )

    async def migrate(self) -> None:
        """Upgrade an older database schema to this version of rondo."""
        await self._tables.schema.ready(self._db, migrate=True)

    async def close(self) -> None:
        await self._db.close()

    async def _ready(self) -> None:
        await self._tables.schema.ready(self._db, migrate=self._migrate)

    def _replace(self, conn: Executor, params: dict[str, Any], rows: list[dict[str, Any]]) -> None:
        conn.execute(self._delete, params)
        for row in rows:
            conn.execute(self._insert, row)

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
                        "content": event.content.model_dump(mode="json"),
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
        rows = (await self._db.read(lambda conn: conn.execute(self._search, params))).rows
        return SearchMemoryResponse(
            memories=[
                MemoryEntry(
                    content=Content.model_validate(content),
                    author=author,
                    timestamp=timestamp,
                    session_id=session_id,
                )
                for session_id, author, timestamp, content in rows
            ]
        )
