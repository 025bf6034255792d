"""Prototype fixes measured by `bench_build.py --patch ...`; NOT used by Synix itself.

Each fix monkeypatches one function in this process only, so the benchmark can show the
before/after of a change that belongs in the package (see docs/benchmarks.md for the change to
apply there). Select with SYNIX_BENCH_PATCH=keeper (comma-separated for several).

keeper: `synix_assets.dagster_defs.storage.keep_open` opens one idle connection per Dagster
    database so that closing a per-event connection is not the *last* close (which checkpoints
    the WAL and fsyncs). But `sqlite3.connect` alone never reads the file, so it never maps the
    WAL index (`-shm`) and does not count as a connection to the WAL: every Dagster event still
    pays a WAL re-open on commit (~4 ms) and a checkpoint + fsync on close (~5 ms). Reading once
    (`PRAGMA user_version`, fully fetched so no read transaction stays open) fixes it.

subset: DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS=true (a public Dagster switch): a range
    run logs ONE ASSET_MATERIALIZATION_PLANNED event per asset carrying the partition subset,
    instead of one event per partition. Cost: if such a run fails, Dagster does not mark those
    partitions failed (Synix's store records the failures and `synix_up_to_date` reports them).

engine: Dagster's SQLite storages (consolidated event log, run storage) call
    `create_engine(..., poolclass=NullPool)` on every `_connect()`, i.e. a new Engine, a new
    connection and an empty SQLAlchemy compiled-statement cache per statement group — two per
    asset event. One Engine per storage with a small pool keeps connections (and with them the
    WAL index) open and lets SQLAlchemy reuse compiled INSERTs.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path


def _keeper() -> None:
    from synix_assets.dagster_defs import storage

    def keep_open(dagster_home: Path) -> None:
        with storage._lock:
            for path in Path(dagster_home).resolve().rglob("*.db"):
                key = str(path)
                if key not in storage._keepers:
                    conn = sqlite3.connect(key, check_same_thread=False)
                    conn.execute("PRAGMA user_version").fetchall()  # maps the WAL index
                    storage._keepers[key] = conn

    storage.keep_open = keep_open


def _subset() -> None:
    os.environ["DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS"] = "true"


def _engine() -> None:
    from contextlib import contextmanager

    from sqlalchemy import create_engine
    from sqlalchemy.pool import QueuePool

    from dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log import (
        ConsolidatedSqliteEventLogStorage)
    from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage

    engines: dict[str, object] = {}

    def engine_for(conn_string: str, **connect_args):
        if conn_string not in engines:
            engines[conn_string] = create_engine(
                conn_string, poolclass=QueuePool, pool_size=2, max_overflow=8,
                connect_args={"check_same_thread": False, **connect_args})
        return engines[conn_string]

    @contextmanager
    def event_connect(self):
        with engine_for(self._conn_string, timeout=30).connect() as conn:
            with conn.begin():
                yield conn

    @contextmanager
    def run_connect(self):
        with engine_for(self._conn_string).connect() as conn:
            with conn.begin():
                yield conn

    ConsolidatedSqliteEventLogStorage._connect = event_connect
    SqliteRunStorage.connect = run_connect


FIXES = {"keeper": _keeper, "subset": _subset, "engine": _engine}


def apply(names: str | None = None) -> list[str]:
    names = os.environ.get("SYNIX_BENCH_PATCH", "") if names is None else names
    chosen = [n.strip() for n in names.split(",") if n.strip()]
    for name in chosen:
        FIXES[name]()
    return chosen


def _nokeeper() -> None:  # control: no keeper connections at all
    from synix_assets.dagster_defs import storage

    storage.keep_open = lambda dagster_home: None


FIXES["nokeeper"] = _nokeeper


def _projstale() -> None:
    """projstale: `drive.run_projections` asks `projection_stale` for each projection, which
    for the search index loads every artifact of every layer, rebuilds every IndexDoc and hashes
    their canonical JSON — then the projection asset does all of it again. Prototype: when the
    runner gets there, some layer changed (the no-op path returned earlier), so launch the
    projections and let the asset decide whether anything changed (it computes the key anyway)."""
    from synix_assets.orchestration import drive

    drive.projection_stale = lambda ctx, name: True


FIXES["projstale"] = _projstale


def _onetxn() -> None:
    """onetxn: SqlEventLogStorage.store_event writes an asset event in two transactions (the
    event row, then the asset index/tags in `index_transaction`), each a commit. On the
    consolidated SQLite log both go to the same file, so one transaction does both."""
    from dagster._core.events import ASSET_CHECK_EVENTS, ASSET_EVENTS
    from dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log import (
        ConsolidatedSqliteEventLogStorage)

    def store_event(self, event) -> None:
        statement = self.prepare_insert_event(event)
        asset = (event.is_dagster_event and event.dagster_event_type in ASSET_EVENTS
                 and event.dagster_event.asset_key)
        with self._connect() as conn:
            event_id = conn.execute(statement).inserted_primary_key[0]
            if asset:
                self._store_asset_event_tags(conn, [event], [event_id])
                self._store_asset_event(conn, event, event_id)
        if event.is_dagster_event and event.dagster_event_type in ASSET_CHECK_EVENTS:
            self.store_asset_check_event(event, event_id)

    ConsolidatedSqliteEventLogStorage.store_event = store_event


FIXES["onetxn"] = _onetxn


def _nomergeevents() -> None:
    """nomergeevents: Synix-launched runs of the merge layer (transcripts: no LLM, nothing to
    show but the artifact id) record no per-partition materialization events; the other layers
    keep theirs. Measures what half of the remaining per-partition events cost."""
    from synix_assets.dagster_defs import assets

    original = assets._events

    def _events(ctx, context, layer, partitioned, result, version):
        if (context.run.tags.get(assets.EMIT_TAG) == "changed" and partitioned
                and ctx.pipeline.steps[layer].kind == "merge"):
            return
        yield from original(ctx, context, layer, partitioned, result, version)

    assets._events = _events


FIXES["nomergeevents"] = _nomergeevents


def _stocklog() -> None:
    """stocklog: the project's dagster.yaml names Dagster's own ConsolidatedSqliteEventLogStorage
    (what Synix wrote before its event log storage, synix_assets/dagster_defs/event_log.py): the
    "before" of that change."""
    from synix_assets.dagster_defs import instance_files, storage

    storage.INSTANCE_YAML = instance_files.INSTANCE_YAML = instance_files.EARLIER_INSTANCE_YAMLS[-1]

    def write_instance_yaml(dagster_home: Path) -> None:  # also over the one `synix init` wrote
        dagster_home.mkdir(parents=True, exist_ok=True)
        (dagster_home / "dagster.yaml").write_text(instance_files.INSTANCE_YAML, encoding="utf-8")

    instance_files.write_instance_yaml = write_instance_yaml


FIXES["stocklog"] = _stocklog
