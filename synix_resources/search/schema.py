"""The search index's SQLite schema, and the upgrade of files written by older versions.

Units of searchable artifacts and units of hidden leaves (transcripts kept only for drill-down)
live in two FTS5 tables over the same `units` rows. An ordinary search then scores only what it
may return — in a typical memory most units are hidden transcript messages — needs no join to
drop hidden rows, and computes BM25's IDF over the searchable text alone.
"""
from __future__ import annotations

import sqlite_utils

SCHEMA_VERSION = "2"
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
        "ancestry": str, "sources": str, "searchable": int,
    }, pk="id")
    db["docs"].create_index(["artifact_id"], unique=True)
    db["docs"].create_index(["collection"])
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
    Version 1 kept every unit in one FTS table; its units are re-indexed into two (no text or
    vector is recomputed)."""
    row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row is not None and row[0] == SCHEMA_VERSION:
        return False
    with db.conn:
        db.execute("BEGIN IMMEDIATE")
        row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None and row[0] == SCHEMA_VERSION:  # another process upgraded it first
            return False
        for trigger in ("units_ai", "units_ad", "units_au"):
            db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        db.execute(f"DROP TABLE IF EXISTS {SEARCHABLE_FTS}")
        _create_unit_fts(db)
        cols = ", ".join(_FTS_COLUMNS)
        for table, flag in _TABLE_OF:
            db.execute(f"INSERT INTO {table}(rowid, {cols}) "
                       f"SELECT id, {cols} FROM units WHERE searchable {flag}")
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema', ?)",
                   [SCHEMA_VERSION])
        db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
    return True


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
