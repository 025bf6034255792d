"""The compiled Dagster definitions, in process: shape, code versions, per-partition records with
provenance and their own metadata, checks emitted by the assets, failed partitions, the store
sync, and the export sensor's ticks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import dagster as dg
import pytest

from synix_assets.app.run import run_build
from synix_assets.dagster_defs.assets import layer_key
from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance
from synix_assets.sources.model import partition_key
from synix_resources.store.artifact_store import ArtifactStore

UUID = "347c7a0d-a98c-5ab8-bfcf-c1de69c3734a"
READABLE = "2025-01-06-rust-cli-for-dotfile-sync"  # its partition key: date and title


def _asset(defs, name):
    return next(a for a in defs.assets if isinstance(a, dg.AssetsDefinition) and a.key == layer_key(name))


def _version(defs, name):
    return _asset(defs, name).code_versions_by_key[layer_key(name)]


def test_definitions_have_layers_jobs_checks_owners_and_a_running_sensor(demo_project):
    defs = build_defs(demo_project.root)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"transcripts", "episodes", "monthly", "core", "memory_index", "synix_context",
            "sources/exports"} <= keys
    episodes = _asset(defs, "episodes")
    assert isinstance(episodes.partitions_def, dg.DynamicPartitionsDefinition)
    assert _asset(defs, "core").partitions_def is None
    text = episodes.descriptions_by_key[layer_key("episodes")]
    assert "transform step" in text and "`episode_summary`" in text and "fake:fake-v1" in text
    assert episodes.owners_by_key[layer_key("episodes")] == ["team:me"]
    assert [c.name for c in episodes.check_specs] == ["synix_up_to_date"]
    # "behind its inputs" is the up-to-date check's verdict, not the age of the last materialization
    assert _asset(defs, "core").specs_by_key[layer_key("core")].freshness_policy is None
    jobs = {j.name for j in defs.jobs}
    assert {"synix_build_all", "synix_build_transcripts", "synix_build_episodes",
            "synix_build_monthly", "synix_build_core", "synix_update_projections"} <= jobs
    sensor = defs.sensors[0]
    assert sensor.name == "synix_exports_sensor" and sensor.job_name == "synix_build_all"
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert "fake:fake-v1" in defs.resources["llm"].description  # the provider really used, not ""


def test_a_prompt_edit_changes_the_code_version_of_the_layer_and_everything_below_it(demo_project):
    before = build_defs(demo_project.root)
    text = (demo_project.root / "pipeline.py").read_text().replace(
        "prompt=prompts.episode_summary", "prompt=lambda r: 'Shorter: ' + r.content")
    (demo_project.root / "pipeline.py").write_text(text)
    after = build_defs(demo_project.root)
    assert _version(after, "transcripts") == _version(before, "transcripts")
    for name in ("episodes", "monthly", "core", "memory_index", "synix_context"):
        assert _version(after, name) != _version(before, name), name


def test_a_work_graph_compiled_into_the_definitions_serves_only_its_own_synix_runs_steps(demo_project):
    """The graph is handed to the definitions a build compiles for itself (no process-wide
    registry): a run of another Synix run over the same definitions builds its layer itself."""
    from synix_assets.dagster_defs.compile import compile_defs
    from synix_assets.dagster_defs.vocabulary import RUN_ID_TAG

    class BuildsGraph:  # stands for the work graph of the Synix run "the-build"
        asked: list = []

        def builds(self, run_id, layer):
            self.asked.append((run_id, layer))
            return run_id == "the-build"

        def arrivals(self, *args):
            raise AssertionError("a step of another Synix run read the build's work graph")

        wait = plan_for_check = arrivals

    graph = BuildsGraph()
    instance = dagster_instance(demo_project)
    defs = compile_defs(demo_project.root, build=run_build, work=graph)
    key = partition_key(UUID)
    instance.add_dynamic_partitions("conversations", [key])
    result = dg.materialize(list(defs.assets), selection=[layer_key("transcripts")], partition_key=key,
                            instance=instance, resources=defs.resources, tags={RUN_ID_TAG: "another-run"})
    assert result.success
    assert graph.asked == [("another-run", "transcripts")]
    with ArtifactStore(demo_project.store) as store:
        assert store.current("transcripts", key) is not None
        assert store.get_run("another-run").status == "completed"


def test_a_partition_run_records_its_own_metadata_provenance_and_check(demo_project):
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    _age(demo_project.root / "exports")
    _tick(defs.sensors[0], instance, defs)  # registers the conversations under their readable keys
    key = partition_key(UUID)
    result = dg.materialize(list(defs.assets), selection=[layer_key("transcripts"), layer_key("episodes")],
                            partition_key=READABLE, instance=instance, resources=defs.resources)
    assert result.success
    event = instance.get_latest_materialization_event(layer_key("episodes"))
    mat = event.asset_materialization
    md = mat.metadata
    assert mat.partition == READABLE
    assert md["artifact_id"].value.startswith("episodes-")
    assert md["cache"].value == "built" and md["fake.calls"].value == 1
    assert md["title"].value and md["date"].value.startswith("20") and md["model"].value == "fake-v1"
    store = ArtifactStore(demo_project.store)
    art = store.current("episodes", key)
    transcript = store.current("transcripts", key)
    # Dagster's provenance tags: its staleness compares exactly these
    assert mat.tags["dagster/code_version"] == _version(defs, "episodes")
    assert mat.tags["dagster/data_version"] == art.content_hash[:16]
    assert mat.tags["dagster/input_data_version/transcripts"] == transcript.content_hash[:16]
    assert int(mat.tags["dagster/input_event_pointer/transcripts"]) > 0
    # the asset evaluated its own check: the 23 conversations not built yet are what Synix would build
    check = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(layer_key("episodes"), "synix_up_to_date")])
    evaluation = next(iter(check.values())).event.dagster_event.event_specific_data
    assert evaluation.passed is False and evaluation.metadata["stale"].value == 23


def test_synix_run_records_one_materialization_per_partition_and_passing_checks(demo_project):
    report = run_build(demo_project)
    instance = dagster_instance(demo_project)
    assert len(instance.get_materialized_partitions(layer_key("episodes"))) == 24
    assert len(instance.get_materialized_partitions(layer_key("monthly"))) == 6
    assert instance.get_latest_materialization_event(layer_key("core")) is not None
    runs = instance.get_runs()
    assert {r.job_name for r in runs} == {"synix_build_transcripts", "synix_build_episodes",
                                          "synix_build_monthly", "synix_update_projections"}
    assert all(r.tags["synix/trigger"] == "cli" and r.tags["synix/branch"] == "main" for r in runs)
    assert {r.tags["synix/layer"] for r in runs} == {"transcripts", "episodes", "monthly", "projections"}
    run = ArtifactStore(demo_project.store).get_run(report.run_id)
    assert run.status == "completed" and run.stats["layers"]["episodes"]["built"] == 24


def test_a_failed_partition_shows_as_failed_and_the_others_as_materialized(demo_project, claude_export, conversation):
    claude_export(demo_project.root / "exports" / "bad.json",
                  [conversation("bad-one", "Bad", "2025-03-03", "SYNIX_FAIL_400 poison")])
    try:
        run_build(demo_project)
    except Exception as exc:  # BuildFailed: everything else was built
        assert "bad-one" in str(exc)
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    keys = instance.get_dynamic_partitions("conversations")
    status = instance.get_status_by_partition(layer_key("episodes"), keys, _asset(defs, "episodes").partitions_def)
    assert status["2025-03-03-bad"] == dg.AssetPartitionStatus.FAILED  # its readable key
    assert sum(1 for k, v in status.items() if v == dg.AssetPartitionStatus.MATERIALIZED) == 24


def test_a_new_dagster_home_is_synced_from_the_store(demo_project, tmp_path, monkeypatch):
    run_build(demo_project)
    other = tmp_path / "other_home"
    other.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(other))
    build_defs(demo_project.root)  # loading the definitions syncs this home
    instance = dg.DagsterInstance.get()
    assert len(instance.get_dynamic_partitions("conversations")) == 24
    assert len(instance.get_materialized_partitions(layer_key("episodes"))) == 24
    event = instance.get_latest_materialization_event(layer_key("episodes"))
    assert event.asset_materialization.tags["synix/trigger"] == "store_sync"
    assert instance.get_latest_materialization_event(layer_key("synix_context")) is not None


def _tick(sensor, instance, defs, cursor=None):
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=defs.resources,
                                 definitions=defs) as ctx:
        return sensor(ctx)


def _age(folder):
    for f in folder.iterdir():  # settled: older than the settle time
        os.utime(f, (time.time() - 60, time.time() - 60))


def test_sensor_registers_partitions_observes_exports_and_requests_one_whole_build(demo_project):
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    sensor = defs.sensors[0]
    _age(demo_project.root / "exports")
    result = _tick(sensor, instance, defs)
    assert len(result.run_requests) == 1
    assert result.run_requests[0].tags["synix/trigger"] == "exports_sensor"
    assert len(instance.get_dynamic_partitions("conversations")) == 24
    assert instance.get_dynamic_partitions("monthly_periods") == ["2025-01", "2025-02", "2025-03",
                                                                  "2025-04", "2025-05", "2025-06"]
    observed = result.asset_events[0]
    assert observed.asset_key == dg.AssetKey(["sources", "exports"])
    assert observed.metadata["conversations"].value == 24 and observed.metadata["files"].value >= 1
    # the checks report at once what the build will do (everything, on an unbuilt project)
    checks = {e.asset_key.to_user_string(): e for e in result.asset_events[1:]}
    assert set(checks) == {"transcripts", "episodes", "monthly", "core"}
    assert not checks["core"].passed and checks["episodes"].metadata["stale"].value == 24
    # the next tick with the same files is idempotent: no run
    again = _tick(sensor, instance, defs, cursor=result.cursor)
    assert again.run_requests == []


def test_sensor_waits_for_a_file_that_is_still_being_copied(demo_project, claude_export, conversation):
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    sensor = defs.sensors[0]
    _age(demo_project.root / "exports")
    first = _tick(sensor, instance, defs)
    partial = demo_project.root / "exports" / "incoming.json"
    partial.write_text('[{"uuid": "half", "name": "Half", "chat_messages": [')  # mid-copy, fresh mtime
    second = _tick(sensor, instance, defs, cursor=first.cursor)
    assert second.run_requests == []
    assert json.loads(second.cursor)[str(partial)]["sha"] is None
    claude_export(partial, [conversation("arrived", "Arrived", "2025-06-30", "finished copying")])
    os.utime(partial, (time.time() - 60, time.time() - 60))
    third = _tick(sensor, instance, defs, cursor=second.cursor)
    assert len(third.run_requests) == 1
    assert "2025-06-30-arrived" in instance.get_dynamic_partitions("conversations")


def test_a_project_definitions_file_loads_only_that_project(demo_project):
    code = ("import runpy, sys; ns = runpy.run_path('definitions.py'); "
            "print(sorted(k.to_user_string() for k in ns['defs'].resolve_asset_graph().get_all_asset_keys())); "
            "print('repo demo loaded:', 'synix_assets.definitions' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=demo_project.root, capture_output=True,
                         text=True, timeout=180, env=dict(os.environ, DAGSTER_HOME=str(demo_project.dagster_home)))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "'episodes'" in out.stdout and "repo demo loaded: False" in out.stdout
    assert "Warning" not in out.stderr  # no Beta/Preview warning noise at start


def test_a_projection_asked_for_on_an_unbuilt_project_fails_with_what_to_do(demo_project):
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    result = dg.materialize(list(defs.assets), selection=[layer_key("synix_context")], instance=instance,
                            resources=defs.resources, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    message = failure.event_specific_data.error.message
    assert "nothing to project yet" in message and "synix_build_all" in message
    assert not (demo_project.root / "context.md").exists()


def test_sensor_feeds_every_branch_reading_the_changed_export_and_observes_it_once(demo_project):
    from synix_assets.app import branches

    run_build(demo_project)
    topical = demo_project.root.parent / "topical.py"
    topical.write_text(demo_project.pipeline_file.read_text()
                       .replace('prompt=prompts.episode_summary)',
                                'prompt=prompts.episode_summary, max_tokens=300)'))
    branches.create_branch(demo_project, "exp", pipeline_file=topical)
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    sensor = defs.sensors[0]
    _age(demo_project.root / "exports")
    result = _tick(sensor, instance, defs)
    jobs = {r.job_name: r.tags["synix/branch"] for r in result.run_requests}
    assert jobs == {"synix_build_all": "main", "exp__synix_build_all": "exp"}
    assert len({r.run_key for r in result.run_requests}) == 2
    observed = [e for e in result.asset_events if isinstance(e, dg.AssetObservation)]
    assert [e.asset_key for e in observed] == [dg.AssetKey(["sources", "exports"])]
    checks = {e.asset_key.to_user_string(): e for e in result.asset_events
              if isinstance(e, dg.AssetCheckEvaluation)}
    # main is built: its checks pass; the branch's edited episodes are what its build will redo
    assert checks["episodes"].passed and not checks["branches/exp/episodes"].passed
    assert checks["branches/exp/episodes"].metadata["stale"].value == 24
    assert len(instance.get_dynamic_partitions("exp__conversations")) == 24
    assert instance.get_dynamic_partitions("exp__monthly_periods") == \
        instance.get_dynamic_partitions("monthly_periods")


def test_a_launchpad_llm_model_override_is_refused_by_config_validation_so_no_partition_is_marked_failed(
        demo_project, monkeypatch):
    """Code versions carry the model the environment named at load; a run whose `llm` config names
    another would record that model's output as current, so Dagster would call it fresh while
    `synix plan` calls it stale. Refused before the run exists: a failed run would mark every
    partition it planned Failed, and a no-op `synix run` would never clear them."""
    monkeypatch.delenv("SYNIX_LLM_PROVIDER")  # no key, no provider named: extractive, as a new user has
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    key = partition_key(UUID)
    instance.add_dynamic_partitions("conversations", [key])
    selection = [layer_key("transcripts"), layer_key("episodes")]
    for override in ({"provider": "fake"}, {"model": "claude-opus-4"}):
        with pytest.raises(dg.DagsterInvalidConfigError) as refused:
            dg.materialize(list(defs.assets), selection=selection, partition_key=key, instance=instance,
                           resources=defs.resources,
                           run_config={"resources": {"llm": {"config": override}}})
        assert f'unexpected config entry "{next(iter(override))}"' in str(refused.value)
    assert instance.get_runs_count() == 0
    status = instance.get_status_by_partition(layer_key("episodes"), [key], _asset(defs, "episodes").partitions_def)
    assert (status or {}).get(key) != dg.AssetPartitionStatus.FAILED  # None: Dagster knows no attempt
    assert ArtifactStore(demo_project.store).current("transcripts", key) is None
    # what does not change the model stays run config, applied over the environment's settings
    tuned = dg.materialize(list(defs.assets), selection=selection, partition_key=key, instance=instance,
                           resources=defs.resources,
                           run_config={"resources": {"llm": {"config": {"concurrency": 2}}}})
    assert tuned.success
    assert ArtifactStore(demo_project.store).current("episodes", key).metadata["meta.step.provider"] == "extractive"


def test_a_wiped_asset_is_recorded_again_from_the_store_with_a_warning_and_its_check_evaluated(demo_project, capfd):
    run_build(demo_project)
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    instance.wipe_assets([layer_key("core")])
    assert instance.get_latest_materialization_event(layer_key("core")) is None
    capfd.readouterr()
    _tick(defs.sensors[0], instance, defs)
    logged = capfd.readouterr()
    # the store still holds the core: Dagster shows it again, and the tick says why
    assert instance.get_latest_materialization_event(layer_key("core")) is not None
    text = logged.out + logged.err
    assert "core (main) had no Dagster record" in text and "synix run --full" in text, text[-2000:]
    # and its check is evaluated for that record (not "Not evaluated"): Synix's plan, passing
    materialization = instance.get_latest_materialization_event(layer_key("core"))
    check = dg.AssetCheckKey(layer_key("core"), "synix_up_to_date")
    execution = instance.event_log_storage.get_latest_asset_check_execution_by_key([check])[check]
    assert execution.run_id == materialization.run_id  # how Dagster ties the two together
    assert execution.event.timestamp >= materialization.timestamp
    evaluation = execution.event.dagster_event.event_specific_data
    assert evaluation.passed and evaluation.metadata["stale"].value == 0


def test_reloaded_definitions_with_an_edited_prompt_get_their_checks_re_evaluated_at_the_next_tick(demo_project):
    run_build(demo_project)
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    _age(demo_project.root / "exports")
    first = _tick(defs.sensors[0], instance, defs)
    quiet = _tick(defs.sensors[0], instance, defs, cursor=first.cursor)
    assert not quiet.asset_events and not quiet.run_requests  # nothing changed: nothing reported
    pipeline = demo_project.root / "pipeline.py"
    pipeline.write_text(pipeline.read_text().replace(
        "prompt=prompts.monthly_rollup", "prompt=lambda r: 'Terser: ' + r.content"))
    reloaded = build_defs(demo_project.root)
    result = _tick(reloaded.sensors[0], instance, reloaded, cursor=quiet.cursor)
    assert not result.run_requests
    checks = {e.asset_key.to_user_string(): e for e in result.asset_events}
    assert checks["episodes"].passed and not checks["monthly"].passed
    assert checks["monthly"].metadata["stale"].value == 6 and not checks["core"].passed
    again = _tick(reloaded.sensors[0], instance, reloaded, cursor=result.cursor)
    assert not again.asset_events  # once per change of the definitions
