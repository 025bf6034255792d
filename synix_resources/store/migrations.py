"""Named, ordered schema migrations for the artifact store, and the one loop that applies them.

Same idea as simonw's `llm`: a `_migrations(name, applied_at)` table records what ran, and
every registered function runs once, in registration order. Each migration runs in its own
`BEGIN IMMEDIATE` transaction together with its `_migrations` row, so a crash or a second
process opening the same fresh file can never apply one twice or leave one half-applied.
`apply_pending` is that loop for every database Synix migrates (the store, the LLM cache, the
live inbox and the tenant registry, on SQLite here and on PostgreSQL through
`postgres.PostgresDriver`). Never edit or reorder a released migration: add a new one at the end.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Iterable, Protocol

if TYPE_CHECKING:  # sqlite_utils (and the numpy it imports) loads only when a migration runs
    from sqlite_utils import Database

MIGRATIONS_TABLE = "_migrations"

MigrationFn = Callable[["Database"], None]


@dataclass(frozen=True)
class Migration:
    name: str
    apply: MigrationFn


class MigrationRegistry:
    """An ordered list of migrations; use an instance as a decorator to register one."""

    def __init__(self, migrations: Iterable[Migration] = ()):
        self._migrations: list[Migration] = []
        for item in migrations:
            self._add(item)

    def __call__(self, fn: MigrationFn) -> MigrationFn:
        """Register `fn` under its function name, after every migration registered so far."""
        self._add(Migration(fn.__name__, fn))
        return fn

    def _add(self, item: Migration) -> None:
        if item.name in self.names:
            raise ValueError(f"Migration {item.name!r} is registered twice")
        self._migrations.append(item)

    def extended(self, *fns: MigrationFn) -> "MigrationRegistry":
        """A copy of this registry with `fns` appended (used by tests and plugins)."""
        registry = MigrationRegistry(self._migrations)
        for fn in fns:
            registry(fn)
        return registry

    @property
    def migrations(self) -> list[Migration]:
        """The registered migrations in the order they are applied."""
        return list(self._migrations)

    @property
    def names(self) -> list[str]:
        """Migration names in the order they are applied."""
        return [m.name for m in self._migrations]

    def applied(self, db: Database | sqlite3.Connection) -> list[str]:
        """Names recorded in the database's `_migrations` table, in the order they ran."""
        return SqliteDriver(db).applied()

    def pending(self, db: Database | sqlite3.Connection) -> list[str]:
        """Names of registered migrations that this database has not run yet."""
        done = set(self.applied(db))
        return [name for name in self.names if name not in done]

    def apply(self, db: Database | sqlite3.Connection) -> list[str]:
        """Run every pending migration in order and return the names that ran now.

        The connection must be in autocommit mode (`isolation_level=None`) with no open
        transaction. Opening an up-to-date database takes no write lock, so read-only files and
        busy stores can still be opened.
        """
        return apply_pending(self, SqliteDriver(db))


class SqliteDriver:
    """How `apply_pending` speaks to a SQLite file: `BEGIN IMMEDIATE` takes the file's write
    lock, and each migration is given the connection as a sqlite_utils `Database`."""

    def __init__(self, db: Database | sqlite3.Connection):
        self.db = db
        self.conn = db if isinstance(db, sqlite3.Connection) else db.conn

    def applied(self) -> list[str]:
        if self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                             (MIGRATIONS_TABLE,)).fetchone() is None:
            return []
        rows = self.conn.execute(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY rowid")
        return [row[0] for row in rows]

    def prepare(self) -> None:
        if isinstance(self.db, sqlite3.Connection):
            from sqlite_utils import Database

            self.db = Database(self.db, execute_plugins=False)
        self.conn.execute(
            f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
            "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )

    def begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def seen(self, name: str) -> bool:
        return self.conn.execute(
            f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE name = ?", (name,)
        ).fetchone() is not None

    def run(self, migration: Migration) -> None:
        migration.apply(self.db)

    def record(self, name: str) -> None:
        self.conn.execute(
            f"INSERT INTO {MIGRATIONS_TABLE} (name, applied_at) VALUES (?, ?)",
            (name, datetime.now(timezone.utc).isoformat()),
        )

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


class MigrationDriver(Protocol):
    """One database engine's part of `apply_pending`: what ran already, one transaction per
    migration (`begin` takes the engine's write lock) and the row that records it."""

    def applied(self) -> list[str]: ...
    def prepare(self) -> None: ...
    def begin(self) -> None: ...
    def seen(self, name: str) -> bool: ...
    def run(self, migration: Migration) -> None: ...
    def record(self, name: str) -> None: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...


def apply_pending(registry: MigrationRegistry, driver: MigrationDriver) -> list[str]:
    """Run `registry`'s pending migrations through `driver` and return the names that ran now.

    Each migration runs in its own transaction together with its record, and is re-checked
    under the write lock (another process may have applied it meanwhile). An up-to-date
    database is left without taking any lock."""
    done = set(driver.applied())
    if not [name for name in registry.names if name not in done]:
        return []
    driver.prepare()
    ran: list[str] = []
    for migration in registry.migrations:
        try:
            driver.begin()
            if not driver.seen(migration.name):
                driver.run(migration)
                driver.record(migration.name)
                ran.append(migration.name)
            driver.commit()
        except BaseException:
            driver.rollback()
            raise
    return ran


MIGRATIONS = MigrationRegistry()
migration = MIGRATIONS


def migrate(db: Database | sqlite3.Connection, registry: MigrationRegistry | None = None) -> list[str]:
    """Bring `db` up to date with `registry` (default: the store's migrations)."""
    return (registry or MIGRATIONS).apply(db)


# --- migrations: append only -------------------------------------------------------------


@migration
def m001_artifacts(db: Database) -> None:
    db["artifacts"].create(
        {
            "artifact_id": str,
            "layer": str,
            "group_key": str,
            "level": int,
            "content": str,
            "content_hash": str,
            "materialization_key": str,
            "metadata": str,
            "run_id": str,
            "created_at": str,
            "superseded_at": str,
        },
        pk="artifact_id",
        not_null={"layer", "group_key", "level", "content", "content_hash",
                  "materialization_key", "metadata", "created_at"},
        defaults={"level": 0, "metadata": "{}"},
    )
    # At most one current artifact per (layer, group_key): this is what stops two processes
    # from both publishing a "current" version of the same group.
    db.execute(
        "CREATE UNIQUE INDEX idx_artifacts_current ON artifacts (layer, group_key) "
        "WHERE superseded_at IS NULL"
    )
    db["artifacts"].create_index(["layer", "group_key", "created_at"],
                                 index_name="idx_artifacts_history")


@migration
def m002_edges(db: Database) -> None:
    # Ordered parent edges; the position keeps e.g. a fold's inputs in sequence order.
    db.execute(
        """
        CREATE TABLE edges (
            child_id TEXT NOT NULL REFERENCES artifacts (artifact_id),
            parent_id TEXT NOT NULL REFERENCES artifacts (artifact_id),
            position INTEGER NOT NULL,
            PRIMARY KEY (child_id, position)
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE INDEX idx_edges_parent ON edges (parent_id, child_id)")


@migration
def m003_audit(db: Database) -> None:
    db["audit"].create(
        {
            "artifact_id": str,
            "prompt_template_hash": str,
            "rendered_prompt_hash": str,
            "provider": str,
            "model": str,
            "temperature": float,
            "max_tokens": int,
            "raw_response": str,
            "input_tokens": int,
            "output_tokens": int,
            "cache_read_tokens": int,
            "cache_write_tokens": int,
            "cost_usd": float,
            "latency_s": float,
            "attempts": int,
            "flags": str,
            "extra": str,
        },
        pk="artifact_id",
        foreign_keys=[("artifact_id", "artifacts", "artifact_id")],
    )


@migration
def m004_runs(db: Database) -> None:
    db["runs"].create(
        {
            "run_id": str,
            "pipeline": str,
            "steps": str,
            "status": str,
            "dagster_run_id": str,
            "started_at": str,
            "finished_at": str,
            "stats": str,
        },
        pk="run_id",
        not_null={"pipeline", "steps", "status", "started_at", "stats"},
    )
    db["runs"].create_index(["started_at"], index_name="idx_runs_started")


@migration
def m005_checkpoints(db: Database) -> None:
    db["checkpoints"].create(
        {
            "step": str,
            "version": str,
            "position": int,
            "prefix_fingerprint": str,
            "state": str,
            "created_at": str,
        },
        pk=("step", "version", "position"),
        not_null={"prefix_fingerprint", "state", "created_at"},
    )


@migration
def m006_meta(db: Database) -> None:
    db["meta"].create(
        {"key": str, "value": str, "updated_at": str},
        pk="key",
        not_null={"value", "updated_at"},
    )


@migration
def m007_failures(db: Database) -> None:
    # Keyed by partition: a later failure of the same partition replaces the earlier record.
    db["failures"].create(
        {
            "layer": str,
            "group_key": str,
            "run_id": str,
            "error": str,
            "recorded_at": str,
        },
        pk=("layer", "group_key"),
        not_null={"error", "recorded_at"},
    )
    db["failures"].create_index(["run_id"], index_name="idx_failures_run")


@migration
def m008_branches(db: Database) -> None:
    # A branch is a named set of current-artifact pointers over the one shared artifacts table;
    # main's pointers stay in artifacts.superseded_at. Deleting an artifact (forget, gc) drops
    # every branch's pointer to it.
    db.execute(
        """
        CREATE TABLE refs (
            branch TEXT NOT NULL,
            layer TEXT NOT NULL,
            group_key TEXT NOT NULL,
            artifact_id TEXT NOT NULL REFERENCES artifacts (artifact_id) ON DELETE CASCADE,
            PRIMARY KEY (branch, layer, group_key)
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE INDEX idx_refs_artifact ON refs (artifact_id)")
    db["branches"].create(
        {"name": str, "parent": str, "created_at": str, "info": str},
        pk="name",
        not_null={"created_at", "info"},
        defaults={"info": "{}"},
    )


@migration
def m009_branch_of_runs_and_failures(db: Database) -> None:
    db["runs"].add_column("branch", str, not_null_default="main")
    db["runs"].create_index(["branch", "started_at"], index_name="idx_runs_branch")
    db["failures"].add_column("branch", str, not_null_default="main")
    db["failures"].transform(pk=("branch", "layer", "group_key"))
    db["failures"].create_index(["run_id"], index_name="idx_failures_run", if_not_exists=True)



@migration
def m010_current_refs_index(db: Database) -> None:
    # Planning reads (group key, id, materialization key, content hash, date) of every current
    # artifact of a layer. Those columns follow the content in a row, so for long texts SQLite
    # walked each row's overflow pages to reach them (10,000 transcripts: 44 ms per read, ~26
    # reads in a build). This index holds them, so the read never touches the rows. The
    # PostgreSQL store keeps long texts out of line (TOAST) and needs no such index.
    db.execute(
        "CREATE INDEX idx_artifacts_current_refs ON artifacts (layer, group_key, artifact_id, "
        "materialization_key, content_hash, created_at, superseded_at) WHERE superseded_at IS NULL"
    )


@migration
def m011_partition_names(db: Database) -> None:
    # The readable name of each conversation's partitions (partition_names.py): assigned once,
    # unique, never recomputed, so a re-export that renames a conversation keeps its name.
    db.execute("CREATE TABLE partition_names (group_key TEXT PRIMARY KEY, name TEXT NOT NULL "
               "UNIQUE, assigned_at TEXT NOT NULL)")


__all__ = ["MIGRATIONS", "MIGRATIONS_TABLE", "Migration", "MigrationDriver", "MigrationRegistry",
           "SqliteDriver", "apply_pending", "migrate", "migration"]
