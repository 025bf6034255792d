"""Named, ordered migrations of the evidence ledger (the same registry and loop as the artifact
store's, `store/migrations.py`: each runs once, in its own transaction). Append only."""
from __future__ import annotations

from typing import TYPE_CHECKING

from synix_resources.store.migrations import MigrationRegistry

if TYPE_CHECKING:  # sqlite_utils loads only when a migration runs
    from sqlite_utils import Database

LEDGER_MIGRATIONS = MigrationRegistry()


@LEDGER_MIGRATIONS
def ledger001_events(db: Database) -> None:
    # events: Syke's L1 (design 003). `seq` orders appends (the synthesis schedule's high-water
    # mark); `id` is content-addressed (ledger/ids.py), so appending the same evidence twice is
    # one row and a citation stays valid on every machine the ledger is copied to.
    db.execute("""CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, user_id TEXT,
        source TEXT NOT NULL, event_type TEXT NOT NULL, timestamp TEXT, title TEXT NOT NULL DEFAULT '',
        content TEXT NOT NULL, external_id TEXT, conversation_id TEXT,
        metadata TEXT NOT NULL DEFAULT '{}', ingested_at TEXT NOT NULL)""")
    db.execute("CREATE INDEX events_by_time ON events(timestamp)")
    db.execute("CREATE INDEX events_by_conversation ON events(conversation_id)")
    db.execute("CREATE INDEX events_by_source ON events(source, timestamp)")
    # forgotten: the only door through which an event may leave. A conversation named here is
    # deleted (the trigger below allows it) and never appended again.
    db.execute("""CREATE TABLE forgotten (
        conversation_id TEXT PRIMARY KEY, forgotten_at TEXT NOT NULL)""")
    # Append-only, enforced by SQLite itself so no code path (nor a hand-run UPDATE) can edit the
    # evidence everything else is derived from.
    db.execute("""CREATE TRIGGER events_no_update BEFORE UPDATE ON events
        BEGIN SELECT RAISE(ABORT, 'evidence events are append-only'); END""")
    db.execute("""CREATE TRIGGER events_delete_only_forgotten BEFORE DELETE ON events
        WHEN OLD.conversation_id IS NULL
             OR OLD.conversation_id NOT IN (SELECT conversation_id FROM forgotten)
        BEGIN SELECT RAISE(ABORT, 'evidence events are append-only; only forget removes them'); END""")
    # Full-text search over title and content (external content: the text is stored once).
    db.execute("""CREATE VIRTUAL TABLE events_fts USING fts5(
        title, content, content='events', content_rowid='seq', tokenize='porter unicode61')""")
    db.execute("""CREATE TRIGGER events_fts_insert AFTER INSERT ON events BEGIN
        INSERT INTO events_fts(rowid, title, content) VALUES (new.seq, new.title, new.content); END""")
    db.execute("""CREATE TRIGGER events_fts_delete AFTER DELETE ON events BEGIN
        INSERT INTO events_fts(events_fts, rowid, title, content)
        VALUES ('delete', old.seq, old.title, old.content); END""")
    # feeds: what a feeder already appended (an export file's digest, an inbox's last turn), so
    # re-reading evidence costs one lookup; and marks (the last synthesised seq).
    db.execute("""CREATE TABLE marks (
        name TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TEXT NOT NULL)""")
