"""The index schema: searchable and hidden units in separate FTS tables; old files upgrade."""
import sqlite3

import sqlite_utils

from synix_resources.search import schema
from synix_resources.search.index import SearchIndex

from tests.search.test_index import corpus


def _fts_ids(path, table):
    """Rows an FTS5 table has indexed (its docsize shadow table has one row per indexed row)."""
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute(f"SELECT id FROM {table}_docsize")}


def _unit_ids(path, searchable):
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT id FROM units WHERE searchable = ?",
                                           [searchable])}


def test_hidden_leaves_are_indexed_apart_from_searchable_units(tmp_path):
    path = tmp_path / "s.sqlite"
    index = SearchIndex(path, embeddings=False)
    index.sync("memory", corpus(searchable_leaves=False).values())
    index.close()
    assert _fts_ids(path, schema.SEARCHABLE_FTS) == _unit_ids(path, 1) != set()
    assert _fts_ids(path, schema.HIDDEN_FTS) == _unit_ids(path, 0) != set()


def test_drill_down_with_a_query_still_reaches_hidden_leaves(tmp_path):
    index = SearchIndex(tmp_path / "d.sqlite", embeddings=False)
    index.sync("memory", corpus(searchable_leaves=False).values())
    assert "t-c1" not in {h.artifact_id for h in index.search("borrow checker")}
    below = index.drill_down("e-c1", "borrow checker")
    assert [h.artifact_id for h in below] == ["t-c1"]
    assert below[0].message_range == (0, 0)
    index.close()


def test_a_resynced_document_leaves_no_stale_rows_in_either_table(tmp_path):
    path = tmp_path / "r.sqlite"
    index = SearchIndex(path, embeddings=False)
    docs = corpus(searchable_leaves=False)
    index.sync("memory", docs.values())
    index.sync("memory", corpus(searchable_leaves=True).values())  # leaves become searchable
    index.close()
    assert _fts_ids(path, schema.HIDDEN_FTS) == set()
    assert _fts_ids(path, schema.SEARCHABLE_FTS) == _unit_ids(path, 1)
    with sqlite3.connect(path) as conn:  # FTS5's own consistency check
        for table in (schema.SEARCHABLE_FTS, schema.HIDDEN_FTS):
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")


def _downgrade_to_version_1(path):
    """Rewrite a current file into the version-1 layout: one sqlite-utils FTS table for all
    units, kept in step by sqlite-utils' triggers."""
    db = sqlite_utils.Database(sqlite3.connect(path))
    with db.conn:
        for name in ("units_fts_ai", "units_fts_ad", "units_fts_au"):
            db.execute(f"DROP TRIGGER {name}")
        db.execute(f"DROP TABLE {schema.SEARCHABLE_FTS}")
        db.execute(f"DROP TABLE {schema.HIDDEN_FTS}")
        db["units"].enable_fts(["body", "context", "title"], create_triggers=True,
                               tokenize=schema.TOKENIZER)
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
    db.execute("INSERT INTO units_fts(units_fts) VALUES ('rebuild')")
    db.conn.commit()
    db.conn.close()


def test_a_version_1_index_is_upgraded_in_place_when_opened(tmp_path):
    path = tmp_path / "old.sqlite"
    index = SearchIndex(path, embeddings=False)
    index.sync("memory", corpus(searchable_leaves=False).values())
    expected = [h.to_dict() for h in index.search("rust ownership")]
    index.close()
    _downgrade_to_version_1(path)
    assert len(_fts_ids(path, "units_fts")) == len(_unit_ids(path, 0) | _unit_ids(path, 1))

    index = SearchIndex(path, embeddings=False)
    assert index.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == schema.SCHEMA_VERSION
    assert [h.to_dict() for h in index.search("rust ownership")] == expected
    assert [h.artifact_id for h in index.drill_down("e-c1", "borrow checker")] == ["t-c1"]
    assert index.sync("memory", corpus(searchable_leaves=False).values()).unchanged == 8
    index.close()
    assert _fts_ids(path, schema.HIDDEN_FTS) == _unit_ids(path, 0)
    with sqlite3.connect(path) as conn:
        assert not conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                                "AND name IN ('units_ai', 'units_ad', 'units_au')").fetchall()
