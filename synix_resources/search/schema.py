"""The search index's SQLite schema, and the upgrade of files written by older versions.

Units of searchable artifacts and units of hidden leaves (transcripts kept only for drill-down)
live in two FTS5 tables over the same `units` rows. An ordinary search then scores only what it
may return — in a typical memory most units are hidden transcript messages — needs no join to
drop hidden rows, and computes BM25's IDF over the searchable text alone.

Filters are SQL (`filters.Filters`): a document's period is a column of `docs`, and
`doc_conversations` holds, per document, every conversation it was built from (its sources),
indexed by conversation.
"""
from __future__ import annotations

import sqlite_utils

from synix_resources.errors import SearchError

SCHEMA_VERSION = "3"
TOKENIZER = "porter unicode61 remove_diacritics 2"
SEARCHABLE_FTS = "units_fts"
HIDDEN_FTS = "hidden_fts"
_FTS_COLUMNS = ("body", "context", "title")
# Which FTS table holds a unit, by the condition on its `searchable` column.
_TABLE_OF = ((SEARCHABLE_FTS, "= 1"), (HIDDEN_FTS, "IS NOT 1"))


def create(db: sqlite_utils.Database, unit_title_format: str) -> None:
    """Create every table of an empty index file (the caller holds the transaction)."""
    db["docs"].create({
        "id": int, "artifact_id": str, "collection": str, "layer": str, "level": int,
        "title": str, "date": str, "source": str, "content": str, "content_hash": str,
        "meta_hash": str, "metadata": str, "parent_ids": str, "leaf_ids": str,
        "ancestry": str, "sources": str, "searchable": int, "period": str,
    }, pk="id")
    db["docs"].create_index(["artifact_id"], unique=True)
    db["docs"].create_index(["collection"])
    _create_filter_tables(db)
    db["units"].create({
        "id": int, "doc_id": int, "ord": int, "first_msg": int, "last_msg": int,
        "msg_ids": str, "body": str, "context": str, "title": str, "vec_key": str,
        "level": int, "layer": str, "searchable": int, "date": str, "source": str,
    }, pk="id")
    db["units"].create_index(["doc_id"])
    _create_unit_fts(db)
    # Trigram side index over leaf content: `exact=True` substring search uses it to find
    # candidates without scanning every transcript.
    db.execute("CREATE VIRTUAL TABLE leaf_trigram USING fts5(content, tokenize='trigram')")
    db["vectors"].create({"key": str, "model": str, "vec": bytes}, pk="key")
    db["meta"].create({"key": str, "value": str}, pk="key")
    db["meta"].insert_all([{"key": "schema", "value": SCHEMA_VERSION},
                           {"key": "generation", "value": "0"},
                           {"key": "unit_titles", "value": unit_title_format}])


def upgrade(db: sqlite_utils.Database) -> bool:
    """Bring an existing index file to SCHEMA_VERSION in one transaction; True if it changed.
    Nothing is recomputed from the documents' texts and no vector is: version 1 kept every unit
    in one FTS table, whose units are re-indexed into two; version 2 had no filter columns,
    which are filled from each document's stored metadata and sources."""
    row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row is not None and row[0] == SCHEMA_VERSION:
        return False
    with db.conn:
        db.execute("BEGIN IMMEDIATE")
        row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None and row[0] == SCHEMA_VERSION:  # another process upgraded it first
            return False
        version = int(row[0]) if row is not None else 1
        if version > int(SCHEMA_VERSION):
            raise SearchError(f"this search index has schema {version}, newer than this synix "
                              f"reads ({SCHEMA_VERSION})", hint="upgrade synix, or delete the "
                              "index file and run `synix run` to rebuild it")
        if version < 2:
            _split_unit_fts(db)
        if version < 3:
            if "period" not in db["docs"].columns_dict:
                db.execute("ALTER TABLE docs ADD COLUMN period TEXT")
            db.execute("UPDATE docs SET period = json_extract(metadata, '$.\"meta.time.period\"')")
            _create_filter_tables(db)
            db.execute("INSERT OR IGNORE INTO doc_conversations(doc_id, conversation_id) "
                       "SELECT d.id, json_extract(s.value, '$.conversation_id') "
                       "FROM docs d, json_each(d.sources) s "
                       "WHERE json_extract(s.value, '$.conversation_id') IS NOT NULL")
            db.execute("INSERT OR IGNORE INTO doc_conversations(doc_id, conversation_id) "
                       "SELECT id, json_extract(metadata, '$.\"meta.chat.conversation_id\"') "
                       "FROM docs WHERE json_extract(metadata, "
                       "'$.\"meta.chat.conversation_id\"') IS NOT NULL")
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema', ?)",
                   [SCHEMA_VERSION])
        db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
    return True


def _split_unit_fts(db: sqlite_utils.Database) -> None:
    """Version 1 → 2: one FTS table over every unit becomes a searchable and a hidden one."""
    for trigger in ("units_ai", "units_ad", "units_au"):
        db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    db.execute(f"DROP TABLE IF EXISTS {SEARCHABLE_FTS}")
    _create_unit_fts(db)
    cols = ", ".join(_FTS_COLUMNS)
    for table, flag in _TABLE_OF:
        db.execute(f"INSERT INTO {table}(rowid, {cols}) "
                   f"SELECT id, {cols} FROM units WHERE searchable {flag}")


def _create_filter_tables(db: sqlite_utils.Database) -> None:
    """What period and conversation filters read: an index on `docs.period`, and the
    conversations of each document (a rollup has many) indexed by conversation id."""
    db.execute("CREATE INDEX IF NOT EXISTS docs_period ON docs(period)")
    db.execute("CREATE TABLE IF NOT EXISTS doc_conversations (doc_id INTEGER NOT NULL, "
               "conversation_id TEXT NOT NULL, PRIMARY KEY (conversation_id, doc_id)) "
               "WITHOUT ROWID")
    db.execute("CREATE INDEX IF NOT EXISTS doc_conversations_doc ON doc_conversations(doc_id)")


def _create_unit_fts(db: sqlite_utils.Database) -> None:
    cols = ", ".join(_FTS_COLUMNS)
    new = ", ".join(f"new.{c}" for c in _FTS_COLUMNS)
    old = ", ".join(f"old.{c}" for c in _FTS_COLUMNS)
    for table in (SEARCHABLE_FTS, HIDDEN_FTS):
        db.execute(f"CREATE VIRTUAL TABLE {table} USING fts5({cols}, tokenize='{TOKENIZER}', "
                   f"content='units', content_rowid='id')")

    add = "\n".join(f"INSERT INTO {t}(rowid, {cols}) SELECT new.id, {new} "
                     f"WHERE new.searchable {flag};" for t, flag in _TABLE_OF)
    drop = "\n".join(f"INSERT INTO {t}({t}, rowid, {cols}) SELECT 'delete', old.id, {old} "
                      f"WHERE old.searchable {flag};" for t, flag in _TABLE_OF)
    db.execute(f"CREATE TRIGGER units_fts_ai AFTER INSERT ON units BEGIN\n{add}\nEND")
    db.execute(f"CREATE TRIGGER units_fts_ad AFTER DELETE ON units BEGIN\n{drop}\nEND")
    db.execute(f"CREATE TRIGGER units_fts_au AFTER UPDATE ON units BEGIN\n{drop}\n{add}\nEND")
