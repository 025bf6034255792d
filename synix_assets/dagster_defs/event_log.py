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
  once per storage and forgotten on `upgrade()`;
- a step's stream of asset materializations (one per partition: Synix records each with its own
  metadata) is written in batches: `store_event` prepares the event's row at once (so an event
  Dagster cannot serialize fails in the step, as with Dagster's class) and keeps it; the kept
  events are written in one transaction before any other event, before any read through this
  storage (Dagster's reads in the run, the UI's, Synix's), when 1,000 are kept, and at most
  FLUSH_AFTER_S after the first was kept (a live run page stays live). In a batch the asset-key
  row of an asset is written once, with the values of its last materialization: the row Dagster's
  one-by-one updates end with. A process killed meanwhile loses at most FLUSH_AFTER_S of
  materializations from Dagster's log; Synix's store has them, and the next build records them
  when it settles the killed run (records.record_lost).

Every row is still written by Dagster's own code (`SqlEventLogStorage.store_event`), so what
Dagster records and shows is unchanged; tests/dagster/test_event_log_storage.py compares the
tables with Dagster's class and drives Dagster's reads through this one. It is the only Synix
module that subclasses Dagster internals, named in dagster.yaml through Dagster's documented
`event_log_storage: module:/class:` plug-in point (as dagster-postgres does), and it is tested
with Dagster 1.13.x (pinned `<1.14` in pyproject.toml). The repository root's dagster.yaml names
the three storages at the end of this module (the project's own, for commands run at the root).
"""
from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from contextlib import contextmanager

from dagster import DagsterEventType, EventLogEntry
from sqlalchemy import create_engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import QueuePool

from dagster._core.instance import InstanceRef
from dagster._core.storage.event_log import ConsolidatedSqliteEventLogStorage
from dagster._core.storage.event_log.base import EventLogStorage
from dagster._core.storage.runs.base import RunStorage
from dagster._core.storage.schedules.base import ScheduleStorage
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS

# The webserver reads from several threads while a run writes; beyond these, connections are
# opened for the moment and closed.
POOL_SIZE = 2
MAX_OVERFLOW = 8
# Kept materializations are written at most this long after the first of them was kept, and
# once this many are kept.
FLUSH_AFTER_S = 0.25
MAX_KEPT = 1000

log = logging.getLogger(__name__)


class SynixSqliteEventLogStorage(ConsolidatedSqliteEventLogStorage):
    """`ConsolidatedSqliteEventLogStorage` with one pooled Engine and one transaction per event
    (per batch in `store_event_batch`). Configured in dagster.yaml exactly like its parent, by
    the `event_log_storage` block `instance_files.INSTANCE_YAML` writes."""

    def __init__(self, base_dir, inst_data=None):
        # Set before the parent's __init__, which may already write (a new database is indexed).
        self._engine = None
        self._engine_pid = None
        self._engine_lock = threading.Lock()
        self._open = threading.local()  # the connection in a transaction on this thread, if any
        self._tables: set[str] = set()
        self._asset_key_cols: dict[str, bool] = {}
        self._kept: list[tuple] = []  # (event, its prepared row), oldest first, not yet written
        self._kept_pid = os.getpid()
        self._flush_lock = threading.RLock()  # one writer of kept events at a time, in order
        self._timer = None
        atexit.register(_flush_at_exit, weakref.ref(self))
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
        if self._kept and not getattr(self._open, "flushing", False):
            self.flush()  # whoever reads or writes next sees every event stored before
        with self._pooled().connect() as conn:
            with conn.begin():
                self._open.conn = conn
                try:
                    yield conn
                finally:
                    self._open.conn = None

    def store_event(self, event) -> None:
        if _is_materialization(event):
            row = self._event_to_row(event)
            with self._flush_lock:
                self._drop_inherited()
                self._kept.append((event, row))
                full = len(self._kept) >= MAX_KEPT
                if self._timer is None and not full:
                    self._timer = threading.Timer(FLUSH_AFTER_S, self._flush_in_background)
                    self._timer.daemon = True
                    self._timer.start()
            if full:
                self.flush()
            return
        with self._connect():  # writes the kept events first
            super().store_event(event)

    def store_event_batch(self, events) -> None:
        # Dagster's own per-event writes, in order, committed once: the same rows as one
        # store_event per event, and nothing of the batch is kept if any of it fails.
        with self._connect():
            for event in events:
                super().store_event(event)

    def flush(self) -> None:
        """Write the kept materializations now, in one transaction (all or none of them: on an
        error they stay kept for the next write, and the error is raised)."""
        with self._flush_lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._drop_inherited()
            if not self._kept:
                return
            kept = self._kept
            self._open.flushing = True
            try:
                with self._connect() as conn:
                    self._write_materializations(conn, kept)
            finally:
                self._open.flushing = False
            self._kept = self._kept[len(kept):]

    def _write_materializations(self, conn, kept: list[tuple]) -> None:
        """The rows Dagster's `store_event` writes for each of these materializations: the event,
        its indexed tags, and its asset's row in asset_keys — once per asset, from its last event
        (each of Dagster's updates overwrites the whole entry)."""
        insert = SqlEventLogStorageTable.insert()
        events = [event for event, _row in kept]
        ids = [conn.execute(insert, row).inserted_primary_key[0] for _event, row in kept]
        self._store_asset_event_tags(conn, events, ids)
        last = {}
        for event, event_id in zip(events, ids):
            last[event.dagster_event.asset_key] = (event, event_id)
        for event, event_id in last.values():
            self._store_asset_event(conn, event, event_id)

    def _flush_in_background(self) -> None:
        try:
            self.flush()
        except SQLAlchemyError as exc:  # kept; the next write or read retries and raises
            log.warning("Dagster's event log: writing %d materialization(s) failed, will retry: %s",
                        len(self._kept), exc)

    def _drop_inherited(self) -> None:
        # a forked child holds a copy of its parent's kept events: the parent writes them
        if self._kept_pid != os.getpid():
            self._kept, self._kept_pid, self._timer = [], os.getpid(), None

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
        self.flush()
        super().dispose()
        with self._engine_lock:
            if self._engine is not None and self._engine_pid == os.getpid():
                self._engine.dispose()
            self._engine = None


def _is_materialization(event) -> bool:
    return (isinstance(event, EventLogEntry) and event.is_dagster_event
            and event.dagster_event_type == DagsterEventType.ASSET_MATERIALIZATION
            and event.dagster_event.asset_key is not None)


def _flush_at_exit(ref) -> None:
    storage = ref()
    if storage is None:
        return
    try:
        storage.flush()
    except SQLAlchemyError as exc:
        # at exit there is no one left to raise to (a full disk was reported already); what was
        # kept is in the store, and the next build's sync records it in Dagster
        log.warning("Dagster's event log: %d materialization(s) not written at exit (%s); the next "
                    "build records them from the store", len(storage._kept), str(exc).splitlines()[0])


# --- the repository root's storage ------------------------------------------------------------
# A `dagster` or `dg` command run at the repository root without DAGSTER_HOME makes a throwaway
# home in a temporary folder, configured by the root's dagster.yaml, BEFORE it loads any Synix
# code: its runs would never show in the project's UI, and it would know none of the partitions
# the project's home holds (`DagsterUnknownPartitionError` for a key the UI shows). The root
# dagster.yaml therefore names these three storages: each is the storage of that kind of the
# project the root serves (SYNIX_PROJECT, else the demo: project/repository.py), read from that
# project's own dagster.yaml (SQLite or PostgreSQL alike), so every command at the root reads and
# writes the project's Dagster home. Dagster checks the class named in dagster.yaml is a storage
# of the kind; the object it gets is the project's own.


def project_ref() -> InstanceRef:
    """The instance ref of the repository's project's Dagster home (prepared if new); its
    dagster.yaml reads DAGSTER_HOME, so this process is pointed there too."""
    from synix_assets.dagster_defs.instance import prepare_home
    from synix_assets.project import ProjectPaths
    from synix_assets.project.repository import repository_project

    home = ProjectPaths(repository_project()).dagster_home
    prepare_home(home)
    os.environ.setdefault("DAGSTER_HOME", str(home))
    return InstanceRef.from_dir(str(home))


class _ProjectStorage:
    part = ""  # the InstanceRef property of that storage

    @classmethod
    def config_type(cls) -> dict:
        return {}

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return getattr(project_ref(), cls.part)


class ProjectRunStorage(_ProjectStorage, RunStorage):
    part = "run_storage"


class ProjectEventLogStorage(_ProjectStorage, EventLogStorage):
    part = "event_storage"


class ProjectScheduleStorage(_ProjectStorage, ScheduleStorage):
    part = "schedule_storage"
