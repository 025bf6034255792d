"""Synix's storage for Dagster's SQLite event log: Dagster's own consolidated SQLite event log,
with kept connections and batches written in one transaction.

Dagster's `ConsolidatedSqliteEventLogStorage` builds a new SQLAlchemy Engine (NullPool) on every
`_connect()`: a new SQLite connection and an empty compiled-statement cache for each of the two or
three transactions one event is written in, plus another Engine for each `has_table` and a schema
inspection for each asset event. Profiled, that was most of a cold build (docs/benchmarks.md,
"Where the time goes"). This subclass changes only how connections are obtained:

- one pooled Engine per storage (per process), so connections and compiled statements are kept;
- `_connect()` re-enters the connection already in a transaction on this thread, so one event —
  its row, asset tags, asset index and asset-check row — is written in ONE transaction, and
  `store_event_batch` writes a whole batch in one transaction (Dagster falls back to one event at
  a time when a batch fails, so a batch must be all or nothing);
- schema facts that only a migration changes (tables present, asset-key index columns) are read
  once per storage and forgotten on `upgrade()`.

Every row is still written by Dagster's own code (`SqlEventLogStorage.store_event`), so what
Dagster records and shows is unchanged; tests/dagster/test_event_log_storage.py compares the
tables with Dagster's class and drives Dagster's reads through this one. It is the only Synix
module that subclasses Dagster internals, named in dagster.yaml through Dagster's documented
`event_log_storage: module:/class:` plug-in point (as dagster-postgres does), and it is tested
with Dagster 1.13.x (pinned `<1.14` in pyproject.toml).
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager

from sqlalchemy import create_engine
from sqlalchemy.pool import QueuePool

from dagster._core.storage.event_log import ConsolidatedSqliteEventLogStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS

# The webserver reads from several threads while a run writes; beyond these, connections are
# opened for the moment and closed.
POOL_SIZE = 2
MAX_OVERFLOW = 8


class SynixSqliteEventLogStorage(ConsolidatedSqliteEventLogStorage):
    """`ConsolidatedSqliteEventLogStorage` with one pooled Engine and one transaction per event
    (per batch in `store_event_batch`). Configured in dagster.yaml exactly like its parent:

        event_log_storage:
          module: synix_assets.dagster_defs.event_log
          class: SynixSqliteEventLogStorage
          config:
            base_dir:
              env: DAGSTER_HOME
    """

    def __init__(self, base_dir, inst_data=None):
        # Set before the parent's __init__, which may already write (a new database is indexed).
        self._engine = None
        self._engine_pid = None
        self._engine_lock = threading.Lock()
        self._open = threading.local()  # the connection in a transaction on this thread, if any
        self._tables: set[str] = set()
        self._asset_key_cols: dict[str, bool] = {}
        super().__init__(base_dir, inst_data=inst_data)

    def _pooled(self):
        pid = os.getpid()
        with self._engine_lock:
            if self._engine is None or self._engine_pid != pid:
                if self._engine is not None:
                    # a forked child: never close (or checkpoint through) the parent's connections
                    self._engine.dispose(close=False)
                self._engine = create_engine(
                    self._conn_string, poolclass=QueuePool, pool_size=POOL_SIZE,
                    max_overflow=MAX_OVERFLOW,
                    connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False})
                self._engine_pid = pid
            return self._engine

    @contextmanager
    def _connect(self):
        conn = getattr(self._open, "conn", None)
        if conn is not None:  # inside store_event(_batch) on this thread: the same transaction
            yield conn
            return
        with self._pooled().connect() as conn:
            with conn.begin():
                self._open.conn = conn
                try:
                    yield conn
                finally:
                    self._open.conn = None

    def store_event(self, event) -> None:
        with self._connect():
            super().store_event(event)

    def store_event_batch(self, events) -> None:
        # Dagster's own per-event writes, in order, committed once: the same rows as one
        # store_event per event, and nothing of the batch is kept if any of it fails.
        with self._connect():
            for event in events:
                super().store_event(event)

    def has_table(self, table_name: str) -> bool:
        if table_name in self._tables:
            return True
        with self._pooled().connect() as conn:
            found = bool(conn.dialect.has_table(conn, table_name))
        if found:
            self._tables.add(table_name)
        return found

    def _has_asset_key_col_on_connection(self, conn, column_name: str) -> bool:
        if not self._asset_key_cols.get(column_name):
            self._asset_key_cols[column_name] = super()._has_asset_key_col_on_connection(
                conn, column_name)
        return self._asset_key_cols[column_name]

    def upgrade(self) -> None:
        self._tables.clear()
        self._asset_key_cols.clear()
        super().upgrade()

    def dispose(self) -> None:
        super().dispose()
        with self._engine_lock:
            if self._engine is not None and self._engine_pid == os.getpid():
                self._engine.dispose()
            self._engine = None
