"""The compiled Dagster definitions: they load, partitions and metadata are right, single
partitions materialize, staleness checks agree with Synix's plan, and the export sensor ticks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import dagster as dg
import pytest

from synix_assets.dagster_defs.assets import layer_key
from synix_assets.dagster_defs.build import build_defs
from synix_assets.engine.ingest import partition_key
from synix_assets.engine.runner import dagster_instance, run_build
from synix_resources.store.artifact_store import ArtifactStore


def _asset(defs, name):
    return next(a for a in defs.assets if isinstance(a, dg.AssetsDefinition) and a.key == layer_key(name))


def test_definitions_load_with_one_asset_per_layer_and_projection(demo_project):
    defs = build_defs(demo_project.root)
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"transcripts", "episodes", "monthly", "core", "memory_index", "synix_context",
            "sources/exports"} <= keys
    assert isinstance(_asset(defs, "episodes").partitions_def, dg.DynamicPartitionsDefinition)
    assert _asset(defs, "core").partitions_def is None
    assert _asset(defs, "episodes").group_names_by_key[layer_key("episodes")] == "memory"
    assert "transform of transcripts" in _asset(defs, "episodes").descriptions_by_key[layer_key("episodes")]
    assert len(list(defs.asset_checks)) == 4
    assert [s.name for s in defs.sensors] == ["synix_exports_sensor"]


def test_dagster_cli_validates_the_project_definitions(demo_project):
    env = dict(os.environ, DAGSTER_HOME=str(demo_project.dagster_home))
    demo_project.dagster_home.mkdir(parents=True, exist_ok=True)
    out = subprocess.run([sys.executable, "-m", "dagster", "definitions", "validate",
                          "-w", str(demo_project.root / "workspace.yaml")],
                         capture_output=True, text=True, env=env, cwd=demo_project.root, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]


def test_code_version_changes_when_the_prompt_changes(demo_project):
    before = _asset(build_defs(demo_project.root), "episodes").code_versions_by_key[layer_key("episodes")]
    text = (demo_project.root / "pipeline.py").read_text().replace(
        "prompt=prompts.episode_summary", "prompt=lambda r: 'Shorter: ' + r.content")
    (demo_project.root / "pipeline.py").write_text(text)
    defs = build_defs(demo_project.root)
    assert _asset(defs, "episodes").code_versions_by_key[layer_key("episodes")] != before
    assert _asset(defs, "transcripts").code_versions_by_key[layer_key("transcripts")] == \
        _asset(build_defs(demo_project.root), "transcripts").code_versions_by_key[layer_key("transcripts")]


def test_single_partition_materializes_with_synix_metadata_and_check_reports_the_rest(demo_project):
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    key = partition_key("347c7a0d-a98c-5ab8-bfcf-c1de69c3734a")
    instance.add_dynamic_partitions("conversations", [key])
    result = dg.materialize(list(defs.assets), selection=[layer_key("transcripts"), layer_key("episodes")],
                            partition_key=key, instance=instance, resources=defs.resources)
    assert result.success
    event = instance.get_latest_materialization_event(layer_key("episodes"))
    md = event.asset_materialization.metadata
    assert event.asset_materialization.partition == key
    assert md["artifact_id"].value.startswith("episodes-")
    assert md["cache"].value == "built" and md["llm_calls"].value == 1
    assert "preview" in md and md["model"].value == "fake-v1"
    store = ArtifactStore(demo_project.store)
    assert len(store.list_layer("episodes")) == 1
    # the staleness check (Synix's keys) sees the 23 episodes not built yet
    check = next(c for c in defs.asset_checks if layer_key("episodes") in {k.asset_key for k in c.check_keys})
    data = check(store=defs.resources["store"], llm=defs.resources["llm"])
    assert data.passed is False and data.metadata["stale"].value == 23


def test_range_run_of_a_layer_records_one_materialization_per_built_partition(demo_project):
    report = run_build(demo_project)
    instance = dagster_instance(demo_project)
    assert len(instance.get_materialized_partitions(layer_key("episodes"))) == 24
    assert len(instance.get_materialized_partitions(layer_key("monthly"))) == 6
    assert instance.get_latest_materialization_event(layer_key("core")) is not None
    run = ArtifactStore(demo_project.store).get_run(report.run_id)
    assert run.status == "completed" and run.stats["layers"]["episodes"]["built"] == 24


def _tick(sensor, instance, defs, cursor=None):
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=defs.resources,
                                 definitions=defs) as ctx:
        result = sensor(ctx)
    for req in result.dynamic_partitions_requests or []:  # what the daemon would apply
        instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
    return result, ctx


def test_sensor_registers_partitions_and_requests_one_run_for_new_exports(demo_project):
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    sensor = defs.sensors[0]
    for f in (demo_project.root / "exports").iterdir():  # settled: older than the settle time
        os.utime(f, (time.time() - 60, time.time() - 60))
    result, ctx = _tick(sensor, instance, defs)
    assert len(result.run_requests) == 1
    req = result.run_requests[0]
    assert {k.to_user_string() for k in req.asset_selection} == {"transcripts", "episodes"}
    added = [r for r in result.dynamic_partitions_requests if r.partitions_def_name == "conversations"]
    assert len(added[0].partition_keys) == 24
    months = [r for r in result.dynamic_partitions_requests if r.partitions_def_name == "monthly_periods"]
    assert months[0].partition_keys == ["2025-01", "2025-02", "2025-03", "2025-04", "2025-05", "2025-06"]
    # the next tick with the same files is idempotent: no run, no partitions
    again, _ = _tick(sensor, instance, defs, cursor=result.cursor)
    assert again.run_requests == [] and not again.dynamic_partitions_requests


def test_sensor_waits_for_a_file_that_is_still_being_copied(demo_project, claude_export, conversation):
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    sensor = defs.sensors[0]
    for f in (demo_project.root / "exports").iterdir():
        os.utime(f, (time.time() - 60, time.time() - 60))
    first, _ = _tick(sensor, instance, defs)
    partial = demo_project.root / "exports" / "incoming.json"
    partial.write_text('[{"uuid": "half", "name": "Half", "chat_messages": [')  # mid-copy, fresh mtime
    second, _ = _tick(sensor, instance, defs, cursor=first.cursor)
    assert second.run_requests == []
    assert json.loads(second.cursor)[str(partial)]["sha"] is None
    claude_export(partial, [conversation("arrived", "Arrived", "2025-06-30", "finished copying")])
    os.utime(partial, (time.time() - 60, time.time() - 60))
    third, _ = _tick(sensor, instance, defs, cursor=second.cursor)
    assert len(third.run_requests) == 1
    added = [r for r in third.dynamic_partitions_requests if r.partitions_def_name == "conversations"]
    assert added[0].partition_keys == ["arrived"]


def test_a_project_definitions_file_loads_only_that_project(demo_project):
    code = ("import runpy, sys; ns = runpy.run_path('definitions.py'); "
            "print(sorted(k.to_user_string() for k in ns['defs'].resolve_asset_graph().get_all_asset_keys())); "
            "print('repo demo loaded:', 'synix_assets.definitions' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=demo_project.root, capture_output=True,
                         text=True, timeout=180, env=dict(os.environ, DAGSTER_HOME=str(demo_project.dagster_home)))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "'episodes'" in out.stdout and "repo demo loaded: False" in out.stdout
