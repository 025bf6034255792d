"""Synix's storage for Dagster's SQLite event log (synix_assets/dagster_defs/event_log.py), driven
through Dagster itself on real DAGSTER_HOMEs: it must record exactly what Dagster's own
ConsolidatedSqliteEventLogStorage records (same rows in every table), write a batch as one
transaction, and answer Dagster's reads — partitions, statuses, data versions, checks, runs,
dynamic partitions — for runs Dagster executes through it. A Dagster release that changes what
the subclass relies on fails here."""
from __future__ import annotations

import contextlib
import sqlite3

import dagster as dg
import pytest

from synix_assets.dagster_defs.instance_files import EARLIER_INSTANCE_YAMLS, INSTANCE_YAML, write_instance_yaml

DAGSTERS_OWN = EARLIER_INSTANCE_YAMLS[-1]  # what Synix wrote before: Dagster's class
CONVS = dg.DynamicPartitionsDefinition(name="conversations")
MONTHS = dg.StaticPartitionsDefinition(["2025-01", "2025-02", "2025-03"])
KEYS = [f"conv-{i:03d}" for i in range(12)]
RANGE = {"dagster/asset_partition_range_start": KEYS[0], "dagster/asset_partition_range_end": KEYS[-1]}


@dg.asset(partitions_def=CONVS, code_version="ep-1", backfill_policy=dg.BackfillPolicy.single_run(),
          check_specs=[dg.AssetCheckSpec("episodes_up_to_date", asset="episodes")])
def episodes(context):
    # one output for the whole range: Dagster emits one materialization event per partition
    yield dg.MaterializeResult(metadata={"built": len(context.partition_keys), "llm_calls": 3},
                               data_version=dg.DataVersion("d-episodes"))
    yield dg.AssetCheckResult(check_name="episodes_up_to_date", passed=True)


@dg.asset(partitions_def=MONTHS, code_version="mo-1")
def monthly(context) -> dg.MaterializeResult:
    if context.partition_key == "2025-02":
        raise dg.Failure(description="monthly 2025-02: the model refused")
    return dg.MaterializeResult(metadata={"month": context.partition_key},
                                data_version=dg.DataVersion(f"d-{context.partition_key}"))


@dg.asset(deps=[episodes], code_version="core-1",
          check_specs=[dg.AssetCheckSpec("core_fresh", asset="core")])
def core():
    yield dg.MaterializeResult(metadata={"chars": 1200}, data_version=dg.DataVersion("d-core"))
    yield dg.AssetCheckResult(check_name="core_fresh", passed=False, description="behind its inputs")


def _instance(home, monkeypatch, yaml_text: str) -> dg.DagsterInstance:
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml_text, encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # the yaml's base_dir
    return dg.DagsterInstance.from_config(str(home))


def _build(instance: dg.DagsterInstance) -> dict[str, str]:
    """The runs of a small Synix-like project, as Dagster executes them; returns run ids."""
    instance.add_dynamic_partitions("conversations", KEYS)
    runs = {}
    for name, kwargs in (("range", {"assets": [episodes], "tags": RANGE}),
                         ("core", {"assets": [episodes, core], "selection": [core]})):
        runs[name] = dg.materialize(instance=instance, **kwargs).run_id
    for month in MONTHS.get_partition_keys():
        runs[month] = dg.materialize([monthly], instance=instance, partition_key=month,
                                     raise_on_error=False).run_id
    instance.delete_dynamic_partition("conversations", KEYS[-1])
    return runs


def _tables(db) -> dict[str, list[tuple]]:
    """Every row of every table, but for the moments SQLite stamps by itself when a row is
    written (DEFAULT CURRENT_TIMESTAMP) and the tables made once with the database."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        out = {}
        for name in names:
            if name in ("secondary_indexes", "alembic_version"):
                continue
            cols = [c[1] for c in conn.execute(f'PRAGMA table_info("{name}")')
                    if "CURRENT_TIMESTAMP" not in str(c[4]).upper()]
            quoted = ", ".join(f'"{c}"' for c in cols)
            out[name] = conn.execute(f'SELECT {quoted} FROM "{name}" ORDER BY 1').fetchall()
        return out


def _shape(db) -> dict[str, list[tuple]]:
    """Each table's rows without what differs between two executions of the same runs (run ids,
    timestamps, the serialized events): the same facts in the same places."""
    keep = {"event_logs": "dagster_event_type, step_key, asset_key, partition",
            "asset_keys": "asset_key, last_materialization IS NOT NULL, last_run_id IS NOT NULL",
            "asset_event_tags": "asset_key, key, CASE WHEN key LIKE 'dagster/input_event_pointer%' "
                                "THEN '' ELSE value END",
            "dynamic_partitions": "partitions_def_name, partition",
            "asset_check_executions": "asset_key, check_name, partition, execution_status"}
    with contextlib.closing(sqlite3.connect(db)) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert set(keep) <= names
        return {n: sorted(conn.execute(f'SELECT {cols} FROM "{n}"').fetchall(), key=repr)
                for n, cols in keep.items()}


def test_dagster_runs_record_the_same_rows_in_every_table_as_with_dagsters_own_event_log(
        tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "1000")  # planned and range events in batches
    shapes = {}
    for name, yaml_text in (("dagster", DAGSTERS_OWN), ("synix", INSTANCE_YAML)):
        with _instance(tmp_path / name, monkeypatch, yaml_text) as instance:
            assert type(instance.event_log_storage).__name__ == (
                "SynixSqliteEventLogStorage" if name == "synix" else "ConsolidatedSqliteEventLogStorage")
            _build(instance)
        shapes[name] = _shape(tmp_path / name / "event_log.db")
    assert shapes["synix"] == shapes["dagster"]
    events = shapes["synix"]["event_logs"]
    assert sum(1 for e in events if e[0] == "ASSET_MATERIALIZATION" and e[2] == '["episodes"]') == 12
    checks = shapes["synix"]["asset_check_executions"]
    assert ('["episodes"]', "episodes_up_to_date", None, "SUCCEEDED") in checks
    assert ('["core"]', "core_fresh", None, "FAILED") in checks


def test_a_batch_writes_exactly_the_rows_of_its_events_written_one_by_one_by_dagsters_class(
        tmp_path, monkeypatch):
    with _instance(tmp_path / "source", monkeypatch, INSTANCE_YAML) as instance:
        runs = _build(instance)
        events = [e for run_id in runs.values() for e in instance.all_logs(run_id)]
    assert len(events) > 60
    homes = {"dagster": DAGSTERS_OWN, "synix": INSTANCE_YAML, "synix-batch": INSTANCE_YAML}
    for name, yaml_text in homes.items():
        with _instance(tmp_path / name, monkeypatch, yaml_text) as instance:
            storage = instance.event_log_storage
            if name == "synix-batch":
                storage.store_event_batch(events)
            else:
                for event in events:
                    storage.store_event(event)
    dagsters = _tables(tmp_path / "dagster" / "event_log.db")
    assert len(dagsters["event_logs"]) == len(events) and dagsters["asset_event_tags"]
    assert _tables(tmp_path / "synix" / "event_log.db") == dagsters
    assert _tables(tmp_path / "synix-batch" / "event_log.db") == dagsters


def test_a_batch_that_fails_midway_leaves_none_of_its_events_behind(tmp_path, monkeypatch):
    with _instance(tmp_path / "source", monkeypatch, INSTANCE_YAML) as instance:
        instance.add_dynamic_partitions("conversations", KEYS)
        run_id = dg.materialize([episodes], instance=instance, tags=RANGE).run_id
        events = instance.all_logs(run_id)
    with _instance(tmp_path / "target", monkeypatch, INSTANCE_YAML) as instance:
        storage = instance.event_log_storage
        broken = [*events[:5], "not an event", *events[5:]]
        with pytest.raises(Exception, match="not an event|EventLogEntry"):
            storage.store_event_batch(broken)
        assert instance.all_logs(run_id) == []
        assert instance.get_materialized_partitions(episodes.key) == set()
        storage.store_event_batch(events)  # the storage is usable after the rollback
        assert len(instance.all_logs(run_id)) == len(events)


def test_dagster_reads_partitions_statuses_versions_checks_and_runs_back_through_the_storage(
        tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "1000")
    with _instance(tmp_path / "home", monkeypatch, INSTANCE_YAML) as instance:
        storage = instance.event_log_storage
        batches = []
        real_batch = storage.store_event_batch

        def counted(events):
            batches.append(len(events))
            real_batch(events)

        monkeypatch.setattr(storage, "store_event_batch", counted)
        runs = _build(instance)
        assert 12 in batches  # the range's materializations went through one batch

        assert instance.get_dynamic_partitions("conversations") == KEYS[:-1]
        assert instance.has_dynamic_partition("conversations", KEYS[0])
        assert instance.get_materialized_partitions(episodes.key) == set(KEYS)
        latest = instance.get_latest_materialization_event(episodes.key)
        # Dagster emits the range's events in its subset's order; the last one is the latest
        last = [e for e in instance.all_logs(runs["range"]) if e.asset_materialization][-1]
        assert latest.run_id == runs["range"]
        assert latest.asset_materialization.partition == last.asset_materialization.partition
        assert latest.asset_materialization.metadata["llm_calls"] == dg.MetadataValue.int(3)
        version = instance.get_latest_data_version_record(episodes.key, partition_key=KEYS[3])
        assert version.asset_materialization.tags["dagster/data_version"] == "d-episodes"
        assert version.asset_materialization.tags["dagster/code_version"] == "ep-1"
        core_version = instance.get_latest_data_version_record(core.key)
        assert core_version.asset_materialization.tags["dagster/data_version"] == "d-core"

        status = instance.get_status_by_partition(monthly.key, MONTHS.get_partition_keys(), MONTHS)
        assert status == {"2025-01": dg.AssetPartitionStatus.MATERIALIZED,
                          "2025-02": dg.AssetPartitionStatus.FAILED,
                          "2025-03": dg.AssetPartitionStatus.MATERIALIZED}

        passed = instance.get_latest_asset_check_evaluation_record(
            dg.AssetCheckKey(episodes.key, "episodes_up_to_date"))
        failed = instance.get_latest_asset_check_evaluation_record(dg.AssetCheckKey(core.key, "core_fresh"))
        assert (passed.status.value, failed.status.value) == ("SUCCEEDED", "FAILED")
        assert failed.run_id == runs["core"]

        by_status = {r.run_id: r.status for r in instance.get_runs()}
        assert by_status[runs["2025-02"]] == dg.DagsterRunStatus.FAILURE
        assert {by_status[runs[k]] for k in ("range", "core", "2025-01", "2025-03")} == {
            dg.DagsterRunStatus.SUCCESS}
        failed_runs = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
        assert [r.run_id for r in failed_runs] == [runs["2025-02"]]


def test_a_project_written_with_an_earlier_dagster_yaml_is_upgraded_and_keeps_what_it_recorded(
        tmp_path, monkeypatch):
    home = tmp_path / "home"
    with _instance(home, monkeypatch, DAGSTERS_OWN) as instance:
        runs = _build(instance)
    write_instance_yaml(home)
    assert (home / "dagster.yaml").read_text() == INSTANCE_YAML
    edited = tmp_path / "edited"
    edited.mkdir()
    (edited / "dagster.yaml").write_text(DAGSTERS_OWN + "# mine\n")
    write_instance_yaml(edited)
    assert (edited / "dagster.yaml").read_text() == DAGSTERS_OWN + "# mine\n"  # never overwritten
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.event_log_storage).__name__ == "SynixSqliteEventLogStorage"
        assert instance.get_materialized_partitions(episodes.key) == set(KEYS)
        assert instance.get_latest_materialization_event(core.key).run_id == runs["core"]
        more = dg.materialize([episodes, core], selection=[core], instance=instance)
        assert instance.get_latest_materialization_event(core.key).run_id == more.run_id


def test_dagster_dev_shows_a_project_built_by_both_storages_built_fresh_and_checked(
        tmp_path, claude_export, conversation):
    from synix_assets.app.init import demo_exports, init_project
    from tests.dagster.live import DagsterDev, dagster_stale, plan_stale, synix

    root = init_project(tmp_path / "mem", exports=demo_exports())
    cfg = root / ".synix" / "dagster" / "dagster.yaml"
    cfg.write_text(DAGSTERS_OWN + "# edited by hand: left as it is\n")  # Dagster's own class
    built = synix(root, "run", "--json")
    assert built.returncode == 0, built.stderr[-2000:]
    cfg.write_text(INSTANCE_YAML)  # the same event_log.db, now through Synix's storage
    claude_export(root / "exports" / "new.json",
                  [conversation("zeb-1", "Zebrafish tank", "2025-07-02", "zebrafish aquarium heater")])
    again = synix(root, "run", "--json")
    assert again.returncode == 0, again.stderr[-2000:]
    dev = DagsterDev(root).wait_serving()
    try:
        status = dev.staleness()
        assert status["episodes"] == {"FRESH": 25} and status["core"] == {"FRESH": 1}
        assert plan_stale(root) == dagster_stale(status) == {k: 0 for k in dagster_stale(status)}
        assert set(dev.checks().values()) == {"SUCCEEDED"}
        stats = dev.gql("""{ assetNodeOrError(assetKey: {path: ["episodes"]}) { ... on AssetNode {
            partitionStats { numMaterialized numFailed numPartitions } } } }""")
        assert stats["assetNodeOrError"]["partitionStats"] == {
            "numMaterialized": 25, "numFailed": 0, "numPartitions": 25}
        runs = dev.gql("{ runsOrError { ... on Runs { results { status } } } }")["runsOrError"]["results"]
        statuses = [r["status"] for r in runs]  # the export sensor may queue one meanwhile
        assert statuses.count("SUCCESS") >= 2 and "FAILURE" not in statuses
    finally:
        dev.stop()


def _materialization(i: int) -> dg.AssetMaterialization:
    return dg.AssetMaterialization(asset_key=episodes.key, partition=KEYS[i % len(KEYS)],
                                   metadata={"artifact_id": f"episodes-{i:04d}"},
                                   tags={"dagster/data_version": f"v{i}"})


def _rows(db, event_type: str = "ASSET_MATERIALIZATION") -> int:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT count(*) FROM event_logs WHERE dagster_event_type = ?",
                            [event_type]).fetchone()[0]


def test_kept_materializations_are_read_back_at_once_and_reach_other_readers_within_a_second(
        tmp_path, monkeypatch):
    import time

    with _instance(tmp_path / "home", monkeypatch, INSTANCE_YAML) as instance:
        instance.add_dynamic_partitions("conversations", KEYS)
        for i in range(30):
            instance.report_runless_asset_event(_materialization(i))
        # Dagster's reads in this process go through the storage: they see every event at once
        assert instance.get_materialized_partitions(episodes.key) == set(KEYS)
        latest = instance.get_latest_materialization_event(episodes.key)
        assert latest.asset_materialization.tags["dagster/data_version"] == "v29"
        db = tmp_path / "home" / "event_log.db"
        assert _rows(db) == 30
        for i in range(30, 40):  # no read, no other event: only the storage's own timer writes
            instance.report_runless_asset_event(_materialization(i))
        deadline = time.monotonic() + 5
        while _rows(db) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _rows(db) == 40, "kept materializations never reached the database on their own"
        with contextlib.closing(sqlite3.connect(db)) as conn:
            row = conn.execute("SELECT last_materialization FROM asset_keys WHERE asset_key = ?",
                               ['["episodes"]']).fetchone()
        assert '"v39"' in row[0]  # the asset's row holds its last materialization


def test_kept_materializations_that_cannot_be_written_stay_kept_and_are_written_once_later(
        tmp_path, monkeypatch):
    from sqlalchemy.exc import OperationalError

    from synix_assets.dagster_defs import event_log

    monkeypatch.setattr(event_log, "SQLITE_BUSY_TIMEOUT_SECONDS", 0.2)
    monkeypatch.setattr(event_log, "FLUSH_AFTER_S", 60.0)  # only the explicit writes below
    with _instance(tmp_path / "home", monkeypatch, INSTANCE_YAML) as instance:
        storage = instance.event_log_storage
        instance.add_dynamic_partitions("conversations", KEYS)
        db = tmp_path / "home" / "event_log.db"
        holder = sqlite3.connect(db, isolation_level=None)
        try:
            for i in range(12):
                instance.report_runless_asset_event(_materialization(i))
            holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            with pytest.raises(OperationalError, match="locked"):
                storage.flush()
            holder.execute("ROLLBACK")
        finally:
            holder.close()
        assert _rows(db) == 0  # nothing half-written
        assert instance.get_materialized_partitions(episodes.key) == set(KEYS)  # a read writes them
        storage.flush()
        assert _rows(db) == 12
