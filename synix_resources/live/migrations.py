"""Named, ordered migrations of a live inbox (same registry as the artifact store's: each runs
once, in its own transaction with its `_migrations` row). Append only."""
from __future__ import annotations

from typing import TYPE_CHECKING

from synix_resources.store.migrations import MigrationRegistry

if TYPE_CHECKING:  # sqlite_utils (and the numpy it imports) loads only when a migration runs
    from sqlite_utils import Database

LIVE_MIGRATIONS = MigrationRegistry()


@LIVE_MIGRATIONS
def live001_inbox(db: Database) -> None:
    # sessions: one row per session; `version` counts how often it was (re)opened.
    db.execute("""CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY, user_id TEXT, state TEXT NOT NULL, version INTEGER NOT NULL,
        turns INTEGER NOT NULL DEFAULT 0, opened_at TEXT NOT NULL, last_seen REAL NOT NULL,
        closed_at TEXT, close_reason TEXT)""")
    # turns: append-only; `n` numbers a session's turns from 1 across versions.
    db.execute("""CREATE TABLE turns (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, turn_id TEXT NOT NULL UNIQUE,
        session_id TEXT NOT NULL REFERENCES sessions(session_id), version INTEGER NOT NULL,
        n INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, ts TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}', received_at TEXT NOT NULL)""")
    db.execute("CREATE INDEX turns_by_session ON turns(session_id, n)")
    # requests: what an idempotency key answered, so a retry gets the same answer.
    db.execute("""CREATE TABLE requests (
        idempotency_key TEXT PRIMARY KEY, request_hash TEXT NOT NULL, response TEXT NOT NULL,
        created_at TEXT NOT NULL)""")
    # outbox: one row per closed session version, handed to the build exactly once.
    db.execute("""CREATE TABLE outbox (
        session_id TEXT NOT NULL, version INTEGER NOT NULL, state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL NOT NULL, last_error TEXT,
        batch TEXT, claimed_at REAL, closed_at TEXT NOT NULL, built_at TEXT, run_id TEXT,
        PRIMARY KEY (session_id, version))""")
    db.execute("CREATE INDEX outbox_by_state ON outbox(state, next_attempt_at)")
    db.execute("CREATE INDEX outbox_by_batch ON outbox(batch)")


@LIVE_MIGRATIONS
def live002_working_window(db: Database) -> None:
    # summaries: a session's rolling summary, one row per fold (the newest is current); each
    # names the turns it folded, so the summary's provenance is the turns themselves.
    db.execute("""CREATE TABLE summaries (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, text TEXT NOT NULL,
        turn_ids TEXT NOT NULL, folded_at TEXT NOT NULL, how TEXT NOT NULL,
        PRIMARY KEY (session_id, seq))""")
    # folded: the exactly-once guard — a turn can be folded into a summary once (primary key),
    # and it is written in the same transaction as the summary that folds it.
    db.execute("""CREATE TABLE folded (
        turn_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, seq INTEGER NOT NULL)""")
