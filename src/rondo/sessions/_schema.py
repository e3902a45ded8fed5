"""The session store's tables (schema version 1), declared once for both dialects.

    rondo_app_states   (app_name)                       state
    rondo_user_states  (app_name, user_id)              state
    rondo_sessions     (app_name, user_id, id)          state, pending, version, times
    rondo_events       (app_name, user_id, session_id, seq)  payload = the Event as JSON

An event's `seq` is the session version it was appended at (0, 1, 2...), so the events of a
handle read at version v are exactly those with `seq < v`, whatever else was committed since.
States are JSONB on PostgreSQL, so a scope's delta merges atomically (`state || delta`).
SQLAlchemy writes the DDL; the statements that read and write these tables are in
`_statements.py`.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from rondo.sessions._sqlengine import Migration, VersionedSchema, version_table

__all__ = ["SCHEMA_VERSION", "SessionTables"]

SCHEMA_VERSION = 1

# Upgrades from version n to n + 1, run inside one transaction by `store.migrate()`.
MIGRATIONS: dict[int, Migration] = {}

_STATE = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
# Events: JSON text on SQLite, written and read by pydantic directly (no dict in between);
# plain JSON (not JSONB) on PostgreSQL, which keeps the text as written.
_PAYLOAD = sa.Text().with_variant(postgresql.JSON(), "postgresql")


class SessionTables:
    """The table objects of one session store."""

    def __init__(self, prefix: str = "rondo_") -> None:
        self.prefix = prefix
        md = self.metadata = sa.MetaData()
        self.version = version_table(md, f"{prefix}schema")
        self.app_states = sa.Table(
            f"{prefix}app_states",
            md,
            sa.Column("app_name", sa.String(), primary_key=True),
            sa.Column("state", _STATE, nullable=False),
            sa.Column("update_time", sa.Float, nullable=False),
        )
        self.user_states = sa.Table(
            f"{prefix}user_states",
            md,
            sa.Column("app_name", sa.String(), primary_key=True),
            sa.Column("user_id", sa.String(), primary_key=True),
            sa.Column("state", _STATE, nullable=False),
            sa.Column("update_time", sa.Float, nullable=False),
        )
        self.sessions = sa.Table(
            f"{prefix}sessions",
            md,
            sa.Column("app_name", sa.String(), primary_key=True),
            sa.Column("user_id", sa.String(), primary_key=True),
            sa.Column("id", sa.String(), primary_key=True),
            sa.Column("state", _STATE, nullable=False),
            sa.Column("pending", _STATE, nullable=False),
            sa.Column("version", sa.Integer, nullable=False),
            sa.Column("create_time", sa.Float, nullable=False),
            sa.Column("update_time", sa.Float, nullable=False),
            sa.Index(f"{prefix}sessions_by_app_time", "app_name", "update_time"),
            sa.Index(f"{prefix}sessions_by_user_time", "app_name", "user_id", "update_time"),
            # Clustered on the key: one B-tree fewer to write per append.
            sqlite_with_rowid=False,
        )
        self.events = sa.Table(
            f"{prefix}events",
            md,
            sa.Column("app_name", sa.String(), primary_key=True),
            sa.Column("user_id", sa.String(), primary_key=True),
            sa.Column("session_id", sa.String(), primary_key=True),
            sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("id", sa.String(), nullable=False),
            sa.Column("invocation_id", sa.String(), nullable=False),
            sa.Column("author", sa.String(), nullable=False),
            sa.Column("timestamp", sa.Float, nullable=False),
            sa.Column("payload", _PAYLOAD, nullable=False),
            sqlite_with_rowid=False,
        )
        self.schema = VersionedSchema(
            "sessions", md, SCHEMA_VERSION, version_table=self.version, migrations=MIGRATIONS
        )
