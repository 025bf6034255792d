"""The LLM response cache's schema: named, ordered, append-only migrations for SQLite
(`CACHE_MIGRATIONS`) and PostgreSQL (`PG_CACHE_MIGRATIONS`), applied by the store's one migration
loop (`synix_resources.store.migrations.apply_pending`), so existing cache files upgrade on open."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from synix_resources.store.migrations import MigrationRegistry

if TYPE_CHECKING:  # sqlite_utils (and the numpy it imports) loads only when a migration runs
    from sqlite_utils import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    prompt_hash TEXT NOT NULL,
    system_hash TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    temperature REAL,
    max_tokens INTEGER NOT NULL,
    label TEXT NOT NULL,
    prompt TEXT NOT NULL,
    system TEXT NOT NULL,
    response_json TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS batches_fingerprint ON batches(fingerprint, status);
CREATE TABLE IF NOT EXISTS batch_items (
    batch_id TEXT NOT NULL,
    custom_id TEXT NOT NULL,
    request_key TEXT NOT NULL,
    label TEXT NOT NULL,
    PRIMARY KEY (batch_id, custom_id)
);
"""


# One row per source of a cached request, in request order (what its input derived from).
SOURCES_SCHEMA = """
CREATE TABLE IF NOT EXISTS response_sources (
    key TEXT NOT NULL,
    position INTEGER NOT NULL,
    source_id TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    PRIMARY KEY (key, position)
);
CREATE INDEX IF NOT EXISTS response_sources_id ON response_sources(source_id);
CREATE INDEX IF NOT EXISTS response_sources_text ON response_sources(text_hash);
"""

# Named, ordered, append-only (see synix_resources/store/migrations.py for the mechanism).
CACHE_MIGRATIONS = MigrationRegistry()


@CACHE_MIGRATIONS
def c001_responses_and_batches(db: Database) -> None:
    _statements(db, SCHEMA)


@CACHE_MIGRATIONS
def c002_response_sources(db: Database) -> None:
    """Entries written before this migration have no rows here; forget falls back to matching
    their text (`keys_mentioning`)."""
    _statements(db, SOURCES_SCHEMA)


def _statements(db: Database, script: str) -> None:
    # Not executescript(): it COMMITs first, and each migration must stay atomic with its
    # _migrations row. The schema scripts hold no ';' inside a statement.
    for statement in script.split(";"):
        if statement.strip():
            db.conn.execute(statement)


def migrate_file(path: Path) -> None:
    """Bring the cache file at `path` up to date (WAL, then `CACHE_MIGRATIONS`)."""
    conn = sqlite3.connect(str(path), timeout=30, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        CACHE_MIGRATIONS.apply(conn)  # sqlite_utils loads only when a migration runs
    finally:
        conn.close()


_PG_TEXT = 'TEXT COLLATE "C"'
PG_CACHE_SCHEMA = f"""
CREATE TABLE responses (
    key {_PG_TEXT} PRIMARY KEY,
    prompt_hash {_PG_TEXT} NOT NULL,
    system_hash {_PG_TEXT} NOT NULL,
    provider {_PG_TEXT} NOT NULL,
    model {_PG_TEXT} NOT NULL,
    temperature DOUBLE PRECISION,
    max_tokens BIGINT NOT NULL,
    label TEXT NOT NULL,
    prompt TEXT NOT NULL,
    system TEXT NOT NULL,
    response_json TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX responses_prompt_hash ON responses (prompt_hash);
CREATE TABLE batches (
    batch_id {_PG_TEXT} PRIMARY KEY,
    fingerprint {_PG_TEXT} NOT NULL,
    provider {_PG_TEXT} NOT NULL,
    model {_PG_TEXT} NOT NULL,
    status {_PG_TEXT} NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX batches_fingerprint ON batches (fingerprint, status);
CREATE TABLE batch_items (
    batch_id {_PG_TEXT} NOT NULL,
    custom_id {_PG_TEXT} NOT NULL,
    request_key {_PG_TEXT} NOT NULL,
    label TEXT NOT NULL,
    PRIMARY KEY (batch_id, custom_id)
);
CREATE TABLE response_sources (
    key {_PG_TEXT} NOT NULL,
    position BIGINT NOT NULL,
    source_id {_PG_TEXT} NOT NULL,
    text_hash {_PG_TEXT} NOT NULL,
    PRIMARY KEY (key, position)
);
CREATE INDEX response_sources_id ON response_sources (source_id);
CREATE INDEX response_sources_text ON response_sources (text_hash)
"""

PG_CACHE_MIGRATIONS = MigrationRegistry()


@PG_CACHE_MIGRATIONS
def pc001_cache_schema(conn) -> None:
    """The SQLite cache's schema as of c002, in one step."""
    from synix_resources.store.postgres_schema import run_ddl

    run_ddl(conn, PG_CACHE_SCHEMA)
