"""What makes an export reach the memory within seconds under `dagster dev` (issue 34): the
export sensor takes a freshly copied .json/.zip export at first sight when its format says the
copy is whole (and never a cut-short one), `synix_build_all` runs in its run worker's process,
and the project's Dagster instance polls its run queue every second."""
from __future__ import annotations

import json
import os
import time
import zipfile

import dagster as dg

from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.dagster_defs.sensors import INTERVAL_SECONDS
from synix_assets.dagster_defs.instance_files import EARLIER_INSTANCE_YAMLS, INSTANCE_YAML

SCALE = """[dagster]
webserver = "http://127.0.0.1:1"
exports_sensor = false
[celery]
broker = "redis://127.0.0.1:6399/0"
"""


def _tick(defs, instance, cursor=None):
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=defs.resources,
                                 definitions=defs) as ctx:
        return defs.sensors[0](ctx)


def _age(folder):
    for f in folder.iterdir():
        os.utime(f, (time.time() - 60, time.time() - 60))


def _first_tick(project):
    instance = dagster_instance(project)
    defs = build_defs(project.root)
    _age(project.root / "exports")
    return instance, defs, _tick(defs, instance)


def test_a_fresh_whole_json_export_is_built_at_the_first_tick_that_sees_it(
        demo_project, claude_export, conversation):
    instance, defs, first = _first_tick(demo_project)
    fresh = demo_project.root / "exports" / "just-copied.json"
    claude_export(fresh, [conversation("fresh-1", "Fresh", "2025-06-30", "copied a moment ago")])
    assert time.time() - fresh.stat().st_mtime < 5  # not settled by age, not seen before
    second = _tick(defs, instance, cursor=first.cursor)
    assert len(second.run_requests) == 1
    assert json.loads(second.cursor)[str(fresh)]["sha"] is not None
    assert "2025-06-30-fresh" in instance.get_dynamic_partitions("conversations")  # its readable key


def test_a_fresh_export_cut_short_mid_copy_waits_whatever_its_format(
        demo_project, claude_export, conversation, tmp_path):
    instance, defs, first = _first_tick(demo_project)
    whole = tmp_path / "whole.json"
    claude_export(whole, [conversation("cut-1", "Cut", "2025-06-30", "half of it arrived")])
    data = whole.read_bytes()
    cut_json = demo_project.root / "exports" / "cut.json"
    cut_json.write_bytes(data[:-1])  # all but the closing bracket
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("conversations.json", data)
    cut_zip = demo_project.root / "exports" / "cut.zip"
    cut_zip.write_bytes(archive.read_bytes()[:-30])  # the central directory not written yet
    second = _tick(defs, instance, cursor=first.cursor)
    assert second.run_requests == []
    cursor = json.loads(second.cursor)
    assert cursor[str(cut_json)]["sha"] is None and cursor[str(cut_zip)]["sha"] is None
    assert not [k for k in instance.get_dynamic_partitions("conversations") if "cut" in k]


def test_a_fresh_whole_zip_export_is_built_at_the_first_tick_that_sees_it(
        demo_project, claude_export, conversation, tmp_path):
    instance, defs, first = _first_tick(demo_project)
    inner = tmp_path / "conversations.json"
    claude_export(inner, [conversation("zipped-1", "Zipped", "2025-06-29", "arrived as a zip")])
    archive = demo_project.root / "exports" / "export.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.write(inner, "conversations.json")
    second = _tick(defs, instance, cursor=first.cursor)
    assert len(second.run_requests) == 1
    assert "2025-06-29-zipped" in instance.get_dynamic_partitions("conversations")  # its readable key


def test_build_all_runs_in_its_run_worker_process_and_the_sensor_ticks_at_every_daemon_loop(demo_project):
    defs = build_defs(demo_project.root, sync=False)
    assert defs.resolve_job_def("synix_build_all").executor_def == dg.in_process_executor
    assert defs.resolve_sensor_def("synix_exports_sensor").minimum_interval_seconds == INTERVAL_SECONDS
    assert INTERVAL_SECONDS < 5  # the daemon's sensor loop: an interval of 5 would tick every other loop
    (demo_project.root / "scale.toml").write_text(SCALE, encoding="utf-8")
    scaled = build_defs(demo_project.root, sync=False)  # a deployment keeps its Celery executor
    assert scaled.resolve_job_def("synix_build_all").executor_def.name == "synix_celery"


def test_the_project_instance_dequeues_runs_every_second_and_an_earlier_yaml_is_upgraded(demo_project):
    with dagster_instance(demo_project) as instance:
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        assert instance.run_coordinator.dequeue_interval_seconds == 1
    cfg = demo_project.dagster_home / "dagster.yaml"
    cfg.write_text(EARLIER_INSTANCE_YAMLS[0], encoding="utf-8")  # what the previous version wrote
    with dagster_instance(demo_project) as instance:
        assert cfg.read_text(encoding="utf-8") == INSTANCE_YAML
        assert instance.run_coordinator.dequeue_interval_seconds == 1
