"""scale.toml: what it switches in the Dagster definitions, how runs are chunked, how workers are
configured, and one-line errors for a bad file or a deployment that is not there."""
from __future__ import annotations

import dagster as dg
import pytest

from synix_assets.cli.main import main as cli
from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.graph import layer_key
from synix_assets.orchestration.launch import range_tags
from synix_assets.orchestration.remote import chunks
from synix_assets.project.scale_config import load_scale_config
from synix_assets.scale.worker import write_celery_config
from synix_resources.errors import PipelineDefinitionError

SCALE = """[dagster]
webserver = "http://127.0.0.1:{port}"
exports_sensor = false
[celery]
broker = "redis://127.0.0.1:6399/0"
partitions_per_run = 7
visibility_timeout_s = 42
"""


def test_no_scale_toml_keeps_single_run_backfills_and_the_default_executor(demo_project):
    defs = build_defs(demo_project.root, sync=False)
    episodes = defs.resolve_assets_def(layer_key("episodes"))
    assert episodes.backfill_policy == dg.BackfillPolicy.single_run()
    assert load_scale_config(demo_project.root) is None
    assert defs.resolve_job_def("synix_build_episodes").executor_def.name != "synix_celery"


def test_scale_toml_selects_celery_multi_run_backfills_and_a_stopped_sensor(demo_project):
    (demo_project.root / "scale.toml").write_text(SCALE.format(port=1), encoding="utf-8")
    defs = build_defs(demo_project.root, sync=False)
    episodes = defs.resolve_assets_def(layer_key("episodes"))
    assert episodes.backfill_policy == dg.BackfillPolicy.multi_run(max_partitions_per_run=7)
    job = defs.resolve_job_def("synix_build_episodes")
    assert job.executor_def.name == "synix_celery"
    sensor = defs.resolve_sensor_def("synix_exports_sensor")
    assert sensor.default_status == dg.DefaultSensorStatus.STOPPED


def test_worker_config_module_matches_the_executor_settings(demo_project):
    (demo_project.root / "scale.toml").write_text(SCALE.format(port=1), encoding="utf-8")
    folder = write_celery_config(demo_project)
    namespace: dict = {}
    exec((folder / "dagster_celery_config.py").read_text(), namespace)
    assert namespace["broker_url"] == "redis://127.0.0.1:6399/0"
    assert namespace["result_backend"] == "redis://127.0.0.1:6399/0"  # defaults to the broker
    assert namespace["task_acks_late"] is True and namespace["task_reject_on_worker_lost"] is True
    # a dead worker's task is swept back to the queue a few times per timeout, on every sweep
    assert namespace["broker_transport_options"] == {
        "visibility_timeout": 42, "unacked_restore_interval": 10, "unacked_restore_throttle": 1,
        "unacked_mutex_expire": 42}


def test_stale_partitions_are_chunked_into_runs_of_partitions_per_run():
    order = [f"c{i}" for i in range(10)]
    stale = ["c9", "c1", "c2", "c5", "c7"]
    where = {k: i for i, k in enumerate(order)}
    groups = chunks([where[k] for k in stale], 2)
    assert groups == [[1, 2], [5, 7], [9]]
    assert [range_tags(order, [order[i] for i in g]) for g in groups] == [
        {"dagster/asset_partition_range_start": "c1", "dagster/asset_partition_range_end": "c2"},
        {"dagster/asset_partition_range_start": "c5", "dagster/asset_partition_range_end": "c7"},
        {"dagster/asset_partition_range_start": "c9", "dagster/asset_partition_range_end": "c9"}]


@pytest.mark.parametrize("text, expected", [
    ("[dagster\n", "not valid TOML"),
    ("[celery]\nbroker = 'redis://x'\n", "dagster.webserver is missing"),
    ("[dagster]\nwebserver = 'http://h:1'\n[celery]\nbroker = 'redis://x'\npartitions_per_run = 0\n",
     "must be positive"),
    ("[dagster]\nwebserver = 'http://h:1'\n[celery]\nbroker = 'redis://x'\npartitions_per_run = 'many'\n",
     "wrong type"),
])
def test_bad_scale_toml_is_one_line_naming_the_file(tmp_path, text, expected):
    (tmp_path / "scale.toml").write_text(text, encoding="utf-8")
    with pytest.raises(PipelineDefinitionError) as info:
        load_scale_config(tmp_path)
    line = info.value.one_line()
    assert expected in line and str(tmp_path / "scale.toml") in line and "docs/scale.md" in line


def test_synix_run_with_no_deployment_listening_fails_in_one_line(demo_project, monkeypatch):
    from click.testing import CliRunner

    from tests.support.postgres import free_port

    (demo_project.root / "scale.toml").write_text(SCALE.format(port=free_port()), encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", "-p", str(demo_project.root), "--json"])
    assert result.exit_code != 0
    out = result.output.strip().splitlines()[-1]
    assert "could not submit the transcripts run" in out and "scale.toml" in out, result.output
    assert "Traceback" not in result.output
    # what the build recorded: failed, resumable
    store = demo_project.open_store()
    try:
        assert store.list_runs()[0].status == "failed"
        # the deployment's workers build the layers: this process built none (no work graph)
        assert not store.current_index("transcripts") and not store.current_index("episodes")
    finally:
        store.close()


def test_synix_worker_without_scale_toml_says_what_to_write(demo_project):
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["worker", "-p", str(demo_project.root), "--name", "w1"])
    assert result.exit_code == 1
    assert "has no scale.toml" in result.output and "docs/scale.md" in result.output
    assert "Traceback" not in result.output
