"""The store's PostgreSQL connection: the counterpart of `connection.StoreConnection`.

Same contract as the SQLite one, so the domain mixins (artifacts, branches, provenance, runs)
run unchanged on either: one connection per store object shared by threads under a re-entrant
lock; every write is one transaction that first takes a transaction-scoped advisory lock, so
writers from any number of processes and hosts are serialised exactly as SQLite's
`BEGIN IMMEDIATE` serialises them (the store's read-then-write steps, e.g. superseding the current
artifact, rely on that); a writer waits at most `busy_timeout_ms` (`lock_timeout`) and then fails
cleanly with `StoreLockedError`. Reads run in autocommit and never wait for writers.

The connection speaks the store's `?`-placeholder SQL (`PgConnection`); what cannot be written
once for both engines is in `dialect.py`.
"""
from __future__ import annotations

import functools
import logging
import threading
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Self
from urllib.parse import urlsplit, urlunsplit

from synix_resources.errors import DiskFullError, StoreError, StoreLockedError
from synix_resources.store.connection import ClosingConnection
from synix_resources.store.dialect import POSTGRES
from synix_resources.store.migrations import Migration, MigrationRegistry, apply_pending
from synix_resources.store.postgres_schema import PG_MIGRATIONS

log = logging.getLogger(__name__)

# Advisory lock keys: one per purpose and schema (advisory locks are per database, so two
# projects kept in two schemas of one database do not wait on each other).
ADVISORY_KEY = "hashtextextended('synix:' || ? || ':' || current_schema(), 0)"
STORE_WRITE_LOCK = "store-write"
MIGRATION_LOCK = "migration"
BUILD_LOCK = "build"


def display_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[-1]}"))


def _import_psycopg():
    try:
        import psycopg
    except ImportError as err:
        raise StoreError("the store URL names PostgreSQL but psycopg is not installed",
                         hint="pip install 'synix[postgres]'") from err
    return psycopg


@functools.lru_cache(maxsize=512)
def pg_sql(sql: str) -> str:
    """The store's `?` placeholders as psycopg's `%s` (a literal `%` doubled first)."""
    return sql.replace("%", "%%").replace("?", "%s")


class PgConnection:
    """A psycopg connection (autocommit) that runs the store's `?`-placeholder SQL."""

    def __init__(self, raw):
        self.raw = raw

    def execute(self, sql: str, params: Iterable[Any] = ()):
        return self.raw.execute(pg_sql(sql), tuple(params))

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]):
        cur = self.raw.cursor()
        rows = [tuple(r) for r in rows]
        if rows:
            cur.executemany(pg_sql(sql), rows)
        return cur

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.raw.info.transaction_status != TransactionStatus.IDLE

    @property
    def closed(self) -> bool:
        return self.raw.closed

    def close(self) -> None:
        self.raw.close()


def connect(url: str, *, busy_timeout_ms: int, read_only: bool = False,
            what: str = "the artifact store") -> PgConnection:
    """Open an autocommit connection with bounded lock waits; StoreError naming the URL."""
    psycopg = _import_psycopg()
    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as err:
        raise StoreError(f"Cannot connect to {what} at {display_url(url)}: "
                         f"{' '.join(str(err).split())}",
                         hint="check that PostgreSQL is running and the URL's user, host, port "
                              "and database are right (docs/postgres.md)") from err
    conn = PgConnection(raw)
    conn.execute("SELECT set_config('lock_timeout', ?, false)", (f"{int(busy_timeout_ms)}ms",))
    if read_only:
        conn.execute("SET default_transaction_read_only = on")
    return conn


def table_exists(conn: PgConnection, name: str) -> bool:
    return conn.execute("SELECT to_regclass(?) IS NOT NULL", (name,)).fetchone()[0]


class PostgresDriver:
    """How `migrations.apply_pending` speaks to PostgreSQL: each migration's transaction first
    takes an advisory lock (so processes opening a fresh database together apply each once) and
    records what ran in `table`."""

    def __init__(self, conn: PgConnection, table: str):
        self.conn, self.table = conn, table

    def applied(self) -> list[str]:
        if not table_exists(self.conn, self.table):
            return []
        return [r[0] for r in self.conn.execute(f"SELECT name FROM {self.table}")]

    def prepare(self) -> None:
        """Nothing before the first transaction: `begin` creates the table under the lock."""

    def begin(self) -> None:
        self.conn.execute("BEGIN")
        self.conn.execute(f"SELECT pg_advisory_xact_lock({ADVISORY_KEY})", (MIGRATION_LOCK,))
        self.conn.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (name TEXT COLLATE \"C\" "
                          "PRIMARY KEY, applied_at TEXT NOT NULL, seq BIGINT GENERATED ALWAYS "
                          "AS IDENTITY)")

    def seen(self, name: str) -> bool:
        return self.conn.execute(f"SELECT 1 FROM {self.table} WHERE name = ?",
                                 (name,)).fetchone() is not None

    def run(self, migration: Migration) -> None:
        migration.apply(self.conn)

    def record(self, name: str) -> None:
        self.conn.execute(f"INSERT INTO {self.table} (name, applied_at) VALUES (?, now()::text)",
                          (name,))

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


def apply_migrations(conn: PgConnection, registry: MigrationRegistry, table: str) -> list[str]:
    """Run `registry`'s pending migrations, each in its own transaction with its `table` row,
    under an advisory lock so processes opening a fresh database together apply each once."""
    return apply_pending(registry, PostgresDriver(conn, table))


def store_exists(url: str) -> bool:
    """Whether the database at `url` holds a store (its `artifacts` table)."""
    conn = connect(url, busy_timeout_ms=30000)
    try:
        return table_exists(conn, "artifacts")
    finally:
        conn.close()


def applied_migrations(conn: PgConnection, table: str) -> list[str]:
    if not table_exists(conn, table):
        return []
    return [r[0] for r in conn.execute(f"SELECT name FROM {table} ORDER BY seq")]


# --- the connection ------------------------------------------------------------------------


class PostgresConnection(ClosingConnection):
    """Owns the PostgreSQL connection of a store; `ArtifactStore` adds the domain methods."""

    dialect = POSTGRES
    MIGRATIONS_TABLE = "_migrations"

    def __init__(self, url: str, *, busy_timeout_ms: int = 30000,
                 migrations: MigrationRegistry | None = None, read_only: bool = False):
        """Connect to (and migrate) the store at `url`; `read_only=True` refuses every write
        (the server enforces it) and expects the store to exist already."""
        self.url = url
        self.path = display_url(url)  # what messages name, as the SQLite store names its file
        self.busy_timeout_ms = int(busy_timeout_ms)
        self._lock = threading.RLock()
        self._conn: PgConnection | None = None
        psycopg = _import_psycopg()
        conn = connect(url, busy_timeout_ms=self.busy_timeout_ms, read_only=read_only)
        try:
            if read_only:
                if not table_exists(conn, "artifacts"):
                    raise StoreError(f"There is no artifact store at {self.path}",
                                     hint="run `synix run` first to build the memory")
            else:
                apply_migrations(conn, migrations or PG_MIGRATIONS, self.MIGRATIONS_TABLE)
        except psycopg.Error as err:
            conn.close()
            raise self._translate(err, "opening it") from err
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    @contextmanager
    def snapshot(self) -> Iterator[Self]:
        """One read transaction: every read inside sees the same committed state."""
        with self._lock:
            conn = self._open_conn()
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield self
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    def data_version(self) -> int:
        """A number that grows when any transaction commits a write after the last call (the
        snapshot's first unassigned transaction id): readers key their caches by it."""
        with self._read("reading the data version") as conn:
            return int(conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text")
                       .fetchone()[0])

    # --- transactions -------------------------------------------------------------------

    def _open_conn(self) -> PgConnection:
        if self._conn is None or self._conn.closed:
            raise StoreError(f"The artifact store {self.path} is closed",
                             hint="open a new ArtifactStore")
        return self._conn

    def _begin(self, conn: PgConnection) -> None:
        conn.execute("BEGIN")
        conn.execute(f"SELECT pg_advisory_xact_lock({ADVISORY_KEY})", (STORE_WRITE_LOCK,))

    @staticmethod
    def _driver_error() -> type[Exception]:
        import psycopg  # optional dependency: only a PostgreSQL store needs it

        return psycopg.Error

    def _rollback(self, conn: PgConnection) -> None:
        import psycopg

        if conn.closed or not conn.in_transaction:
            return
        try:
            conn.execute("ROLLBACK")
        except psycopg.Error as err:  # the original error matters more; keep going
            log.warning("rollback on %s failed: %s", self.path, err)

    def _translate(self, err: Exception, action: str) -> StoreError:
        """A one-line `StoreError` naming the store's URL (without password) and the fix."""
        from psycopg import errors as pg

        text = " ".join(str(err).split())
        where = f"the artifact store {self.path}"
        if isinstance(err, pg.LockNotAvailable):
            return StoreLockedError(
                f"Timed out after {self.busy_timeout_ms / 1000:g}s waiting for the write lock "
                f"on {where} while {action}",
                hint="another synix or dagster process is writing it; wait for it to finish "
                     "or raise busy_timeout_ms")
        if isinstance(err, pg.ReadOnlySqlTransaction):
            return StoreError(f"Cannot write {where} while {action}: it is read-only",
                              hint="connect as a user (or to a server) that may write it")
        if isinstance(err, (pg.DiskFull, pg.OutOfMemory)):
            return DiskFullError(f"the disk is full: PostgreSQL cannot write {where} while "
                                 f"{action}; nothing already saved was lost",
                                 hint="free disk space on the database server and rerun")
        if "NUL (0x00)" in text:
            return StoreError(f"Cannot write {where} while {action}: the text holds a NUL "
                              "character, which PostgreSQL cannot store",
                              hint="remove NUL characters from that input, or use the SQLite "
                                   "store")
        if isinstance(err, pg.InsufficientPrivilege):
            return StoreError(f"Not allowed to use {where} while {action}: {text}",
                              hint="grant the URL's user rights on the database")
        if self._conn is None or self._conn.closed:
            return StoreError(f"{where} is closed or its connection was lost ({text})",
                              hint="open a new ArtifactStore")
        return StoreError(f"PostgreSQL error on {where} while {action}: {text}")

    def purge_free_pages(self) -> bool:
        """Rewrite the store's tables so deleted rows leave the data files (`VACUUM FULL`)."""
        with self._read("purging free pages") as conn:
            conn.execute("VACUUM (FULL) artifacts, edges, audit, refs")
        return True


__all__ = ["ADVISORY_KEY", "BUILD_LOCK", "PG_MIGRATIONS", "PgConnection", "PostgresConnection",
           "PostgresDriver", "apply_migrations",
           "connect", "display_url", "pg_sql"]
