"""Materializations a killed build stored in Synix's store but never got into Dagster's log (the
event log storage writes a step's materializations in batches, up to 0.25 s later) are recorded
by the next build (records.record_lost, run from orchestration/runs.settle_abandoned_runs)."""
from __future__ import annotations

import contextlib
import sqlite3

import dagster as dg

from synix_assets.app.run import run_build
from synix_assets.dagster_defs.compile import branch_graph
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.dagster_defs.partitions import partition_names
from synix_assets.dagster_defs.records import DATA_VERSION_TAG, data_version, record_lost


def test_partitions_a_killed_build_stored_but_dagster_never_recorded_are_recorded_once(demo_project):
    report = run_build(demo_project)
    store = demo_project.open_store()
    try:
        graph = branch_graph(demo_project, report.provider)
        built = store.keys_built_in_run(report.run_id)
        episodes = graph.names.layer("episodes")
        current = store.current_index("episodes")
        shown = partition_names(store, graph.pipeline, "episodes", list(current))  # Dagster's keys
        lost = sorted(current)[:3]
        with dagster_instance(demo_project) as instance:
            assert record_lost(instance, graph.pipeline, store, graph.versions, graph.names, built) == 0
        # the kill came before the write
        _forget(demo_project.dagster_home / "event_log.db", [shown[k] for k in lost])
        with dagster_instance(demo_project) as instance:
            assert not {shown[k] for k in lost} & instance.get_materialized_partitions(episodes)
            recorded = record_lost(instance, graph.pipeline, store, graph.versions, graph.names, built)
            assert recorded == 3
            assert instance.get_materialized_partitions(episodes) == set(shown.values())
            tags = instance.event_log_storage.get_latest_tags_by_partition(
                episodes, dg.DagsterEventType.ASSET_MATERIALIZATION, [DATA_VERSION_TAG],
                asset_partitions=[shown[k] for k in lost])
            assert {k: t[DATA_VERSION_TAG] for k, t in tags.items()} == {
                shown[k]: data_version(current[k].content_hash) for k in lost}
            assert record_lost(instance, graph.pipeline, store, graph.versions, graph.names, built) == 0
    finally:
        store.close()


def _forget(db, partitions: list[str]) -> None:
    """Take the episodes' materializations of these partitions out of Dagster's event log, as if
    they had never been written."""
    marks = ",".join("?" * len(partitions))
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        ids = [r[0] for r in conn.execute(
            f"SELECT id FROM event_logs WHERE asset_key = '[\"episodes\"]' AND "
            f"dagster_event_type = 'ASSET_MATERIALIZATION' AND partition IN ({marks})", partitions)]
        assert len(ids) == len(partitions)
        conn.execute(f"DELETE FROM asset_event_tags WHERE event_id IN ({','.join('?' * len(ids))})", ids)
        conn.execute(f"DELETE FROM event_logs WHERE id IN ({','.join('?' * len(ids))})", ids)
