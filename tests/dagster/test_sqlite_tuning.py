"""The levers of dagster_defs/storage.py on a project's SQLite Dagster home."""
from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys

from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from synix_assets.dagster_defs.instance import dagster_instance

FULL, NORMAL = 2, 1


def _synchronous(path) -> int:
    # a new engine per connection and no pool, as Dagster's SQLite storages open them
    engine = create_engine(f"sqlite:///{path}", poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return conn.execute(text("PRAGMA synchronous")).scalar()
    finally:
        engine.dispose()


def test_connections_to_the_dagster_home_commit_with_synchronous_normal_and_others_are_untouched(
        demo_project, tmp_path):
    with dagster_instance(demo_project) as instance:
        instance.get_runs(limit=1)  # the run storage exists and is usable
        home = demo_project.dagster_home
        assert {p.name for p in home.rglob("*.db")} >= {"event_log.db", "runs.db"}
        for db in home.rglob("*.db"):
            assert _synchronous(db) == NORMAL, db
    other = tmp_path / "elsewhere.db"
    with contextlib.closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE t (x)")
    assert _synchronous(other) == FULL  # SQLite's default, outside any Dagster home


def test_a_build_stopped_while_dagster_creates_its_databases_leaves_none_half_made(
        demo_project, monkeypatch):
    import dagster as dg
    import pytest

    from synix_assets.dagster_defs.storage import STAGING_PREFIX

    real_get = dg.DagsterInstance.get
    stopped = []

    def stopped_meanwhile():
        instance = real_get()  # the schema is being created in the staging folder
        instance.dispose()
        stopped.append(instance.root_directory)
        raise KeyboardInterrupt

    home = demo_project.dagster_home
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    killed_earlier = home.parent / f"{STAGING_PREFIX}{gone.pid}"  # a killed process's leftover
    killed_earlier.mkdir(parents=True)
    (killed_earlier / "event_log.db").write_bytes(b"half")
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    still_staging = home.parent / f"{STAGING_PREFIX}{running.pid}"  # another live process's
    still_staging.mkdir()
    monkeypatch.setattr(dg.DagsterInstance, "get", staticmethod(stopped_meanwhile))
    try:
        with pytest.raises(KeyboardInterrupt):
            dagster_instance(demo_project)
        monkeypatch.undo()
        assert stopped and not stopped[0].startswith(str(home))  # never built in the home itself
        assert not list(home.rglob("*.db"))
        assert list(home.parent.glob(STAGING_PREFIX + "*")) == [still_staging]
    finally:
        running.kill()
        running.wait()
    with dagster_instance(demo_project) as instance:  # the next build creates them whole
        assert instance.get_dynamic_partitions("conversations") == []
        assert {p.name for p in home.rglob("*.db")} >= {"event_log.db", "runs.db"}


def test_a_watched_run_sees_its_events_within_seconds_while_the_connections_are_kept(demo_project):
    """Dagster's UI learns of new events by watching event_log.db (watchdog); with the kept
    connections a WAL write alone never touched that file, and a live run page froze."""
    import threading
    import time

    import dagster as dg

    @dg.op
    def noop():
        return 1

    @dg.job
    def watched():
        noop()

    seen = threading.Event()
    with dagster_instance(demo_project) as instance:
        run = instance.create_run_for_job(job_def=watched)
        def told(*_args, **_kwargs):
            seen.set()

        instance.event_log_storage.watch(run.run_id, None, told)
        try:
            time.sleep(0.5)  # the watcher is running before anything is written
            for i in range(3):
                instance.report_engine_event(f"event {i}", run)
            assert seen.wait(timeout=8), "no watcher was told of the run's new events"
        finally:
            instance.event_log_storage.end_watch(run.run_id, told)
