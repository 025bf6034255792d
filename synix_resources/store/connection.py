"""The store's SQLite connection: pragmas, locking, transactions and error translation.

One connection per store object, shared by threads under a re-entrant lock (SQLite
connections are not safe to interleave transactions on). Processes coordinate through
SQLite's own file lock: every write is a `BEGIN IMMEDIATE` transaction that waits up to the
busy timeout, so a writer either gets the lock up front or fails cleanly with
`StoreLockedError`; it never fails half-way through.
"""
from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Self


from synix_resources.disk import disk_full_error, is_disk_full
from synix_resources.errors import StoreError, StoreLockedError
from synix_resources.private import private_file
from synix_resources.store.dialect import SQLITE
from synix_resources.store.migrations import MigrationRegistry, migrate

log = logging.getLogger(__name__)


def utc_now() -> str:
    """ISO-8601 UTC with microseconds: sorts lexically in time order."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


class ClosingConnection:
    """Transactions, closing and `with` support shared by the SQLite and PostgreSQL store
    connections. Both keep `_conn`, `_lock` and `path`, and provide `_open_conn`, `_begin`,
    `_rollback`, `_translate` and `_driver_error` (the driver's error class)."""

    @contextmanager
    def _write(self, action: str):
        """One write transaction (`_begin`): commits on success, rolls back on any error, and a
        driver error becomes a one-line `StoreError` naming `action`."""
        error = self._driver_error()
        with self._lock:
            conn = self._open_conn()
            try:
                self._begin(conn)
            except error as err:
                self._rollback(conn)
                raise self._translate(err, action) from err
            try:
                yield conn
                conn.execute("COMMIT")
            except error as err:
                self._rollback(conn)
                raise self._translate(err, action) from err
            except BaseException:
                self._rollback(conn)
                raise

    @contextmanager
    def _read(self, action: str):
        """Serialise reads with writes on the shared connection and translate driver errors."""
        error = self._driver_error()
        with self._lock:
            conn = self._open_conn()
            try:
                yield conn
            except error as err:
                raise self._translate(err, action) from err

    def close(self) -> None:
        """Close the connection; later calls raise `StoreError`, closing twice is harmless."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"


class StoreConnection(ClosingConnection):
    """Owns the SQLite connection; subclasses add the domain methods."""

    dialect = SQLITE

    def __init__(self, path: str | os.PathLike, *, busy_timeout_ms: int = 30000,
                 migrations: MigrationRegistry | None = None, read_only: bool = False):
        """Open (creating folder and file if needed) and migrate the store at `path`;
        `read_only=True` opens an existing store for reading only (no migration, no writes)."""
        self.path = Path(path).expanduser()
        self.busy_timeout_ms = int(busy_timeout_ms)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        if read_only:
            self._open_read_only()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            private_file(self.path)  # before SQLite makes it (and its -wal/-shm) world-readable
        except OSError as err:
            if is_disk_full(err):
                raise disk_full_error(self.path, "creating it") from err
            raise StoreError(
                f"Cannot create the artifact store {self.path} or its folder: "
                f"{err.strerror or err}",
                hint="choose a path in a writable folder (config `path` or SYNIX_STORE_PATH)",
            ) from err
        conn: sqlite3.Connection | None = None
        try:
            # isolation_level=None: we issue BEGIN IMMEDIATE/COMMIT ourselves; the driver's
            # implicit deferred transactions would take the write lock too late to wait for it.
            conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout_ms / 1000,
                                   check_same_thread=False, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
            conn.execute("PRAGMA foreign_keys = ON")
            # Forgetting must really forget: zero deleted content in pages.
            conn.execute("PRAGMA secure_delete = ON")
            self._enable_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            migrate(conn, migrations)
        except sqlite3.Error as err:
            if conn is not None:
                conn.close()
            raise self._translate(err, "opening it") from err
        self._conn = conn

    def _open_read_only(self) -> None:
        # mode=ro: SQLite itself refuses every write on this connection (servers that must
        # never change the memory use it); query_only guards against ATTACHed files too.
        if not self.path.is_file():
            raise StoreError(f"There is no artifact store at {self.path}",
                             hint="run `synix run` first to build the memory")
        try:
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                   timeout=self.busy_timeout_ms / 1000,
                                   check_same_thread=False, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
            conn.execute("PRAGMA query_only = ON")
        except sqlite3.Error as err:
            raise self._translate(err, "opening it for reading") from err
        self._conn = conn

    @contextmanager
    def snapshot(self) -> Iterator[Self]:
        """One read transaction: every read inside sees the same committed state, even while a
        build commits (WAL keeps the snapshot); other threads wait for the connection."""
        with self._lock:
            conn = self._open_conn()
            conn.execute("BEGIN")
            try:
                yield self
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    def data_version(self) -> int:
        """A number that changes when another connection commits to the store (SQLite's
        `data_version`): readers key their caches by it."""
        with self._read("reading the data version") as conn:
            return conn.execute("PRAGMA data_version").fetchone()[0]

    @property
    def db(self):
        """The connection as a sqlite_utils Database (imported on first use: opening a store
        does not need it)."""
        from sqlite_utils import Database

        return Database(self._open_conn(), execute_plugins=False)

    def _enable_wal(self, conn: sqlite3.Connection) -> None:
        # Switching journal mode fails with "database is locked" at once, without consulting
        # the busy handler, when another process is opening the same fresh file; retry it.
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    conn.execute("PRAGMA journal_mode = wal")
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err).lower() or time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)

    # --- transactions -------------------------------------------------------------------

    def _open_conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"The artifact store {self.path} is closed",
                             hint="open a new ArtifactStore")
        return self._conn

    def _begin(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")  # the file's write lock up front, or a clean failure

    @staticmethod
    def _driver_error() -> type[Exception]:
        return sqlite3.Error

    def _rollback(self, conn: sqlite3.Connection) -> None:
        if not conn.in_transaction:
            return  # SQLite already rolled back (e.g. after SQLITE_FULL)
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error as err:  # the original error matters more; keep going
            log.warning("rollback of %s failed: %s", self.path, err)

    def _translate(self, err: sqlite3.Error, action: str) -> StoreError:
        """Turn a SQLite error into a one-line `StoreError` that names the file and the fix."""
        text = str(err)
        low = text.lower()
        where = f"the artifact store {self.path}"
        if "locked" in low or "busy" in low:
            return StoreLockedError(
                f"Timed out after {self.busy_timeout_ms / 1000:g}s waiting for the write lock "
                f"on {where} while {action}",
                hint="another synix or dagster process is writing it; wait for it to finish "
                     "or raise busy_timeout_ms",
            )
        if "readonly" in low or "read-only" in low:
            return StoreError(f"Cannot write {where} while {action}: it is read-only",
                              hint="make the file and its folder writable, or set "
                                   "SYNIX_STORE_PATH to a writable location")
        if is_disk_full(err, self.path):
            return disk_full_error(self.path, action)
        if "unable to open" in low or "disk i/o" in low:
            return StoreError(f"Cannot open {where} while {action}: {text}",
                              hint="check that the file and its folder exist and are "
                                   "writable")
        if "not a database" in low or "malformed" in low:
            return StoreError(f"{where} is not a valid SQLite database ({text})",
                              hint="move the file aside and rebuild, or restore a backup")
        if "closed" in low:
            return StoreError(f"{where} is closed", hint="open a new ArtifactStore")
        return StoreError(f"SQLite error on {where} while {action}: {text}")
