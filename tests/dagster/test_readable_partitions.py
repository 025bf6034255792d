"""Conversation partitions a person can read (issue 31): Dagster shows, filters and launches a
conversation by `date-title` instead of its export id, the key survives a re-export that renames
or reorders conversations, the old export id is still accepted, and a project and Dagster
instance built before the readable keys are migrated without rebuilding anything."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

import dagster as dg

from synix_assets.app.init import init_project
from synix_assets.app.plan import make_plan
from synix_assets.app.run import run_build
from synix_assets.dagster_defs.assets import layer_key
from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.dagster_defs.partitions import group_keys
from synix_assets.pipeline.loader import load_pipeline
from synix_assets.project import ProjectPaths
from synix_resources.store.artifact_store import ArtifactStore

UUID = "347c7a0d-a98c-5ab8-bfcf-c1de69c3734a"
READABLE = "2025-01-06-rust-cli-for-dotfile-sync"
CONVERSATION_LAYERS = ("transcripts", "episodes")


def _age(folder):
    for f in folder.iterdir():  # settled: older than the sensor's settle time
        os.utime(f, (time.time() - 60, time.time() - 60))


def _tick(instance, defs, cursor=None):
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=defs.resources,
                                 definitions=defs) as ctx:
        return defs.sensors[0](ctx)


def _statuses(instance, defs, layer: str, keys: list[str]) -> set:
    asset = next(a for a in defs.assets if isinstance(a, dg.AssetsDefinition) and a.key == layer_key(layer))
    return set(instance.get_status_by_partition(layer_key(layer), keys, asset.partitions_def).values())


def test_after_a_build_dagster_partitions_are_the_readable_keys_and_every_one_is_materialized(demo_project):
    run_build(demo_project)
    instance = dagster_instance(demo_project)
    with ArtifactStore(demo_project.store) as store:
        names = store.partition_names()
    assert len(names) == 24 and names[UUID] == READABLE
    keys = instance.get_dynamic_partitions("conversations")
    assert sorted(keys) == sorted(names.values()) and UUID not in keys
    for layer in CONVERSATION_LAYERS:
        assert instance.get_materialized_partitions(layer_key(layer)) == set(names.values())
    assert instance.get_dynamic_partitions("monthly_periods")[0] == "2025-01"  # months were readable


def test_the_sensor_registers_a_new_conversation_readably_and_its_checks_name_it(demo_project, claude_export,
                                                                                conversation):
    run_build(demo_project)
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    _age(demo_project.root / "exports")
    first = _tick(instance, defs)
    claude_export(demo_project.root / "exports" / "more.json",
                  [conversation("0a1b2c3d-new", "Django migration notes", "2025-06-30", "django migrations")])
    _age(demo_project.root / "exports")
    second = _tick(instance, defs, first.cursor)
    assert len(second.run_requests) == 1
    assert "2025-06-30-django-migration-notes" in instance.get_dynamic_partitions("conversations")
    assert "0a1b2c3d-new" not in instance.get_dynamic_partitions("conversations")
    checks = {e.asset_key.to_user_string(): e for e in second.asset_events if isinstance(e, dg.AssetCheckEvaluation)}
    assert checks["episodes"].metadata["stale_partitions"].value == ["2025-06-30-django-migration-notes"]


def test_a_reexport_that_renames_and_reorders_conversations_keeps_every_partition_key(tmp_path, claude_export,
                                                                                     conversation):
    export = tmp_path / "conversations.json"
    convs = [conversation("aaaa-1", "Django migration notes", "2024-03-15", "django"),
             conversation("bbbb-2", "Rye sourdough", "2024-03-16", "bread"),
             conversation("cccc-3", "Standup", "2024-03-15", "standup")]
    claude_export(export, convs)
    paths = ProjectPaths(init_project(tmp_path / "mem", exports=[export]))
    run_build(paths)
    instance = dagster_instance(paths)
    before = sorted(instance.get_dynamic_partitions("conversations"))
    assert before == ["2024-03-15-django-migration-notes", "2024-03-15-standup", "2024-03-16-rye-sourdough"]
    # the next export: the first conversation renamed, the file in another order
    renamed = {**convs[0], "name": "Postgres upgrade plan"}
    claude_export(paths.root / "exports" / "conversations.json", [convs[2], convs[1], renamed])
    report = run_build(paths)
    assert report.layers["transcripts"]["built"] == 1  # the renamed one: its title is in its text
    assert sorted(instance.get_dynamic_partitions("conversations")) == before
    with ArtifactStore(paths.store) as store:
        assert store.partition_names()["aaaa-1"] == "2024-03-15-django-migration-notes"
    assert "2024-03-15-django-migration-notes" in instance.get_materialized_partitions(layer_key("episodes"))


def test_dagster_asset_materialize_with_a_readable_key_builds_that_conversation_only(demo_project):
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    _age(demo_project.root / "exports")
    _tick(instance, defs)  # the sensor registers the conversations, as `dagster dev` would
    out = subprocess.run(
        [sys.executable, "-m", "dagster", "asset", "materialize", "-f", "definitions.py",
         "--select", "transcripts,episodes", "--partition", READABLE],
        cwd=demo_project.root, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, DAGSTER_HOME=str(demo_project.dagster_home)))
    assert out.returncode == 0, out.stderr[-3000:]
    with ArtifactStore(demo_project.store) as store:
        for layer in CONVERSATION_LAYERS:
            assert list(store.current_index(layer)) == [UUID]
    for layer in CONVERSATION_LAYERS:
        assert instance.get_materialized_partitions(layer_key(layer)) == {READABLE}


def test_a_conversation_export_id_is_still_accepted_where_a_partition_key_is_expected(demo_project):
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    _age(demo_project.root / "exports")
    _tick(instance, defs)
    pipeline = load_pipeline(demo_project.pipeline_file)
    with ArtifactStore(demo_project.store) as store:
        assert group_keys(store, pipeline, "episodes", [READABLE, UUID]) == [UUID, UUID]
        assert group_keys(store, pipeline, "monthly", ["2025-01"]) == ["2025-01"]
    # a script (or an instance not synced yet) that still launches the export id
    instance.add_dynamic_partitions("conversations", [UUID])
    result = dg.materialize(list(defs.assets), selection=[layer_key("transcripts")], partition_key=UUID,
                            instance=instance, resources=defs.resources)
    assert result.success
    with ArtifactStore(demo_project.store) as store:
        assert list(store.current_index("transcripts")) == [UUID]
    # recorded under the key Dagster shows for it; the next sync takes the export id out again
    assert READABLE in instance.get_materialized_partitions(layer_key("transcripts"))
    build_defs(demo_project.root)
    assert UUID not in instance.get_dynamic_partitions("conversations")
    assert READABLE in instance.get_dynamic_partitions("conversations")


def _as_before_readable_keys(paths: ProjectPaths) -> dict[str, str]:
    """Turn a built project back into what the previous version left: Dagster's conversation
    partitions and their materializations keyed by export id, and a store without the names
    table (migration m011 not applied). Returns the names the build had given."""
    instance = dagster_instance(paths)
    with ArtifactStore(paths.store) as store:
        names = store.partition_names()
    ids = {name: key for key, name in names.items()}
    instance.add_dynamic_partitions("conversations", sorted(names))
    for layer in CONVERSATION_LAYERS:
        records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=layer_key(layer)),
                                                  limit=1000).records
        for record in reversed(records):  # oldest first, as they were recorded
            mat = record.event_log_entry.asset_materialization
            instance.report_runless_asset_event(dg.AssetMaterialization(
                asset_key=mat.asset_key, partition=ids[mat.partition], metadata=mat.metadata, tags=mat.tags))
    for name in names.values():
        instance.delete_dynamic_partition("conversations", name)
    with sqlite3.connect(paths.store) as conn:
        conn.execute("DROP TABLE partition_names")
        conn.execute("DELETE FROM _migrations WHERE name = 'm011_partition_names'")
    return names


def test_a_project_and_instance_built_before_readable_keys_migrate_without_rebuilding(demo_project):
    run_build(demo_project)
    names = _as_before_readable_keys(demo_project)
    instance = dagster_instance(demo_project)
    assert sorted(instance.get_dynamic_partitions("conversations")) == sorted(names)
    runs_before = len(instance.get_runs())

    defs = build_defs(demo_project.root)  # the first load after the upgrade migrates

    keys = instance.get_dynamic_partitions("conversations")
    assert sorted(keys) == sorted(names.values())  # the same readable keys, no export id left
    with ArtifactStore(demo_project.store) as store:
        assert store.partition_names() == names
    for layer in (*CONVERSATION_LAYERS, "monthly"):
        part_keys = keys if layer != "monthly" else instance.get_dynamic_partitions("monthly_periods")
        assert _statuses(instance, defs, layer, part_keys) == {dg.AssetPartitionStatus.MATERIALIZED}
    episodes_version = next(a for a in defs.assets if isinstance(a, dg.AssetsDefinition)
                            and a.key == layer_key("episodes")).code_versions_by_key[layer_key("episodes")]
    latest = instance.get_latest_materialization_event(layer_key("episodes")).asset_materialization
    assert latest.partition in names.values() and latest.tags["dagster/code_version"] == episodes_version
    assert make_plan(demo_project).nothing_to_do
    report = run_build(demo_project)
    assert all(v.get("built", 0) == 0 and v.get("llm_calls", 0) == 0 for v in report.layers.values())
    assert len(instance.get_runs()) == runs_before  # nothing launched: nothing to rebuild


def test_an_instance_from_before_readable_keys_opens_migrated_in_dagster_dev(demo_project):
    """The upgrade as a Dagster user meets it: `dagster dev` started on the old project and
    instance lists the readable keys only, every conversation partition materialized and fresh."""
    from tests.dagster.live import DagsterDev, dagster_stale, plan_stale

    run_build(demo_project)
    names = _as_before_readable_keys(demo_project)
    dev = DagsterDev(demo_project.root).wait_serving()
    try:
        for layer in CONVERSATION_LAYERS:
            node = dev.gql("""query($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) {
                ... on AssetNode { partitionKeys assetPartitionStatuses {
                ... on DefaultPartitionStatuses { materializedPartitions } } } } }""",
                           {"path": [layer]})["assetNodeOrError"]
            assert sorted(node["partitionKeys"]) == sorted(names.values()), layer
            assert sorted(node["assetPartitionStatuses"]["materializedPartitions"]) == sorted(names.values())
        stale = dagster_stale(dev.staleness())
        assert not any(stale.values()), stale
        assert not any(plan_stale(demo_project.root).values())
    finally:
        dev.stop()
