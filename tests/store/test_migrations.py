"""Named, ordered migrations of the artifact store schema."""
from __future__ import annotations

import multiprocessing
import sqlite3

import pytest
from sqlite_utils import Database

from synix_resources.store.artifact_store import ArtifactStore
from synix_resources.store.migrations import MIGRATIONS, MigrationRegistry, migrate

TABLES = {"_migrations", "artifacts", "edges", "audit", "runs", "checkpoints", "meta",
          "failures"}


def open_db(path) -> Database:
    return Database(sqlite3.connect(str(path), isolation_level=None), execute_plugins=False)


def applied_rows(path):
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT name, applied_at FROM _migrations ORDER BY rowid").fetchall()


def test_fresh_empty_file_is_migrated_up(tmp_path):
    path = tmp_path / "synix.db"
    path.touch()  # zero bytes, like a file created by another tool
    ArtifactStore(path).close()
    db = open_db(path)
    assert TABLES <= set(db.table_names())
    assert [name for name, _ in applied_rows(path)] == MIGRATIONS.names


def test_reopening_a_migrated_store_is_a_no_op(tmp_path):
    path = tmp_path / "synix.db"
    ArtifactStore(path).close()
    before = applied_rows(path)
    ArtifactStore(path).close()
    assert applied_rows(path) == before
    assert migrate(open_db(path)) == []


def test_migration_added_later_is_applied_once(tmp_path):
    path = tmp_path / "synix.db"
    ArtifactStore(path).close()
    calls = []

    def m999_add_pins(db):
        calls.append(1)
        db["pins"].create({"artifact_id": str}, pk="artifact_id")

    later = MIGRATIONS.extended(m999_add_pins)
    ArtifactStore(path, migrations=later).close()
    ArtifactStore(path, migrations=later).close()
    assert migrate(open_db(path), later) == []
    assert calls == [1]
    assert [name for name, _ in applied_rows(path)] == MIGRATIONS.names + ["m999_add_pins"]
    assert "pins" in open_db(path).table_names()


def test_migrations_run_in_registration_order(tmp_path):
    order = []
    registry = MigrationRegistry()

    @registry
    def b_second(db):
        order.append("b")

    @registry
    def a_first_registered_last(db):
        order.append("a")

    assert registry.apply(open_db(tmp_path / "x.db")) == ["b_second", "a_first_registered_last"]
    assert order == ["b", "a"]


def test_failed_migration_is_rolled_back_and_not_recorded(tmp_path):
    path = tmp_path / "synix.db"
    registry = MigrationRegistry()

    @registry
    def m1_ok(db):
        db["ok"].create({"id": int}, pk="id")

    @registry
    def m2_half_done(db):
        db["half"].create({"id": int}, pk="id")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        registry.apply(open_db(path))
    db = open_db(path)
    assert "ok" in db.table_names() and "half" not in db.table_names()
    assert registry.pending(db) == ["m2_half_done"]


def test_registering_a_name_twice_is_refused():
    registry = MigrationRegistry()

    def m1(db):
        """A migration that changes nothing: only its name matters here."""

    registry(m1)
    with pytest.raises(ValueError, match="m1"):
        registry(m1)


def test_store_migrations_have_ordered_unique_names():
    names = MIGRATIONS.names
    assert len(names) == len(set(names))
    assert names == sorted(names)  # mNNN_ prefixes keep code order and name order in step


def test_opening_an_up_to_date_store_needs_no_write_lock(tmp_path):
    path = tmp_path / "synix.db"
    ArtifactStore(path).close()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        with ArtifactStore(path, busy_timeout_ms=50) as s:
            assert s.layers() == {}
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def _open_store(path):
    ArtifactStore(path, busy_timeout_ms=20000).close()


def test_processes_opening_a_fresh_file_together_migrate_it_once(tmp_path):
    path = str(tmp_path / "synix.db")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_open_store, args=(path,)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]  # a child's traceback is in stderr
    assert [name for name, _ in applied_rows(path)] == MIGRATIONS.names


def test_processes_opening_a_fresh_postgres_store_together_migrate_it_once(postgres_url):
    from synix_resources.store.postgres import (
        PG_MIGRATIONS, applied_migrations, apply_migrations, connect,
    )

    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_open_store, args=(postgres_url,)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]  # a child's traceback is in stderr
    conn = connect(postgres_url, busy_timeout_ms=1000)
    try:
        assert applied_migrations(conn, "_migrations") == PG_MIGRATIONS.names
        assert apply_migrations(conn, PG_MIGRATIONS, "_migrations") == []  # reopening: no-op
        tables = {r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema()")}
    finally:
        conn.close()
    assert tables >= TABLES | {"refs", "branches"}


def test_a_postgres_migration_added_later_is_applied_once_in_order(postgres_url):
    from synix_resources.store.postgres import PG_MIGRATIONS, applied_migrations, connect

    ArtifactStore(postgres_url).close()

    def p900_add_note_column(conn):
        conn.execute("ALTER TABLE artifacts ADD COLUMN note TEXT")

    later = PG_MIGRATIONS.extended(p900_add_note_column)
    with ArtifactStore(postgres_url, migrations=later) as s:
        s.put(layer="t", group_key="g", content="x", materialization_key="k")
    ArtifactStore(postgres_url, migrations=later).close()  # not applied twice (would fail)
    conn = connect(postgres_url, busy_timeout_ms=1000)
    try:
        assert applied_migrations(conn, "_migrations") == [*PG_MIGRATIONS.names,
                                                           "p900_add_note_column"]
    finally:
        conn.close()
