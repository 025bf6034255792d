"""The core's Dagster record and `synix_up_to_date` check say what `synix plan` says when a build
does not launch it: built around a failed partition upstream (design §10.2: recorded under its new
version, its check failing with the gap), and current again after a build that found nothing to do
for it (its failed check re-evaluated)."""
from __future__ import annotations


import dagster as dg
import pytest

from synix_assets.app.plan import make_plan
from synix_assets.app.run import run_build
from synix_assets.dagster_defs.assets import layer_key
from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance
from synix_resources.errors import BuildFailed

CORE_CHECK = dg.AssetCheckKey(layer_key("core"), "synix_up_to_date")


def _poison(project, claude_export, conversation):
    path = project.root / "exports" / "poison.json"
    claude_export(path, [conversation("bad-1", "Tomato blight", "2025-03-05", "SYNIX_FAIL_400 tomato blight")])
    return path


def _check(instance) -> tuple[bool, str, float]:
    record = instance.get_latest_asset_check_evaluation_record(CORE_CHECK)
    evaluation = record.event.dagster_event.event_specific_data
    return evaluation.passed, evaluation.description, record.event.timestamp


def _core_plan(project) -> dict:
    return make_plan(project).to_json()["layers"]["core"]


def test_a_core_built_around_a_failed_partition_is_recorded_under_its_version_and_its_check_says_the_gap(
        demo_project, claude_export, conversation):
    run_build(demo_project)
    text = (demo_project.root / "pipeline.py").read_text()
    assert "prompt=prompts.core_memory" in text
    (demo_project.root / "pipeline.py").write_text(
        text.replace("prompt=prompts.core_memory", "prompt=lambda r, state: 'Terser: ' + state + r.content"))
    _poison(demo_project, claude_export, conversation)
    with pytest.raises(BuildFailed):
        run_build(demo_project)
    # `synix run core` then retries the failed episode (the core needs it), which fails again:
    # the core, made with the new prompt from the months there are, keeps its gap
    with pytest.raises(BuildFailed) as info:
        run_build(demo_project, select="core")
    assert "built around by monthly (1), core (1)" in info.value.one_line()
    plan = _core_plan(demo_project)
    assert (plan["blocked"], plan["stale"], plan["partial"]) == (0, 0, 1)
    assert plan["gaps"] == {"all": ["episodes/2025-03-05-tomato-blight"]}  # as Dagster names it
    instance = dagster_instance(demo_project)
    version = build_defs(demo_project.root).get_repository_def().asset_graph.get(layer_key("core")).code_version
    core = instance.get_latest_materialization_event(layer_key("core"))
    assert core.asset_materialization.tags["dagster/code_version"] == version
    passed, description, at = _check(instance)
    assert not passed and "1 built with a gap" in description
    assert at >= core.timestamp  # evaluated for the core Dagster shows, not "Not evaluated"


def test_the_core_check_passes_again_after_a_build_that_had_nothing_to_do_for_it(
        demo_project, claude_export, conversation):
    run_build(demo_project)
    poison = _poison(demo_project, claude_export, conversation)
    with pytest.raises(BuildFailed):
        run_build(demo_project)
    instance = dagster_instance(demo_project)
    assert _check(instance)[0] is False  # built without the failed episode: a gap
    poison.unlink()
    report = run_build(demo_project)
    assert report.layers["core"]["built"] == 0  # nothing to do for core
    assert _core_plan(demo_project)["stale"] == 0 and _core_plan(demo_project)["blocked"] == 0
    passed, description, _ = _check(instance)
    assert passed, description


def test_the_up_to_date_check_runs_on_its_own_and_builds_nothing(demo_project):
    from synix_resources.store.artifact_store import ArtifactStore

    run_build(demo_project)
    pipeline = demo_project.root / "pipeline.py"
    pipeline.write_text(pipeline.read_text().replace(
        "prompt=prompts.episode_summary", "prompt=lambda r: 'Shorter: ' + r.content"))
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    key = layer_key("episodes")
    before = instance.get_latest_materialization_event(key).timestamp
    with ArtifactStore(demo_project.store) as store:
        ids = sorted(a.artifact_id for a in store.current_index("episodes").values())
    result = dg.materialize(list(defs.assets), instance=instance, resources=defs.resources,
                            selection=dg.AssetSelection.checks(dg.AssetCheckKey(key, "synix_up_to_date")))
    assert result.success
    assert not result.get_asset_materialization_events()
    evaluation = result.get_asset_check_evaluations()[0]
    assert evaluation.passed is False and evaluation.metadata["stale"].value == 24
    assert instance.get_latest_materialization_event(key).timestamp == before
    with ArtifactStore(demo_project.store) as store:
        assert sorted(a.artifact_id for a in store.current_index("episodes").values()) == ids


def test_a_declared_topic_no_episode_matches_is_recorded_as_empty_not_missing_forever(tmp_path):
    from synix_assets.app.init import demo_exports, init_project
    from synix_assets.project import ProjectPaths

    project = ProjectPaths(init_project(tmp_path / "mem", exports=demo_exports(), template="topical"))
    text = (project.root / "pipeline.py").read_text()
    assert '"ai agents and memory"]' in text
    (project.root / "pipeline.py").write_text(
        text.replace('"ai agents and memory"]', '"ai agents and memory", "deep sea welding"]'))
    run_build(project)
    instance = dagster_instance(project)
    assert "deep sea welding" in instance.get_materialized_partitions(layer_key("topics"))
    event = instance.get_latest_materialization_event(layer_key("topics"))
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=layer_key("topics"), asset_partitions=["deep sea welding"]), limit=1)
    md = records.records[0].asset_materialization.metadata
    assert md["episodes"].value == 0 and "nothing to summarise" in md["note"].value
    assert event is not None
    assert make_plan(project).to_json()["layers"]["topics"]["stale"] == 0
    # a second build records it no more
    before = len(instance.fetch_materializations(layer_key("topics"), limit=1000).records)
    report = run_build(project)
    assert report.noop or len(instance.fetch_materializations(layer_key("topics"), limit=1000).records) == before


def test_a_ui_run_rebuilding_the_failed_partition_clears_the_gap_from_the_checks_below(demo_project, monkeypatch):
    """Re-executing only the failed layer's run (or materializing the failed partition) builds
    it; the month and the core, built around the gap (design §10.2), no longer report it: their
    checks say at once that they are stale instead (the next build fills the gap)."""
    uuid, readable = "347c7a0d-a98c-5ab8-bfcf-c1de69c3734a", "2025-01-06-rust-cli-for-dotfile-sync"
    text = (demo_project.root / "pipeline.py").read_text()
    # the same prompt (its identity) whether poisoned or not: the environment decides
    (demo_project.root / "pipeline.py").write_text("import os\n" + text.replace(
        "prompt=prompts.episode_summary",
        f'prompt=lambda r: (os.environ.get("SYNIX_TEST_POISON", "") if r.group_key == "{uuid}" else "") + r.content'))
    monkeypatch.setenv("SYNIX_TEST_POISON", "SYNIX_FAIL_400 ")  # the fake model answers it with a 400
    with pytest.raises(BuildFailed):
        run_build(demo_project)
    instance = dagster_instance(demo_project)

    def said(layer: str, name: str) -> int:
        record = instance.get_latest_asset_check_evaluation_record(
            dg.AssetCheckKey(layer_key(layer), "synix_up_to_date"))
        value = record.event.dagster_event.event_specific_data.metadata.get(name)
        return value.value if value is not None else 0
    assert said("monthly", "partial") == 1 and said("core", "partial") == 1
    assert said("monthly", "blocked") == 0 and said("core", "blocked") == 0
    monkeypatch.delenv("SYNIX_TEST_POISON")
    defs = build_defs(demo_project.root)
    result = dg.materialize(list(defs.assets), selection=[layer_key("episodes")], partition_key=readable,
                            instance=instance, resources=defs.resources)
    assert result.success
    assert said("monthly", "partial") == 0 and said("core", "partial") == 0
    assert said("monthly", "stale") == 1 and said("core", "stale") == 1
    layers = make_plan(demo_project).to_json()["layers"]
    assert layers["monthly"]["blocked"] == 0 and layers["monthly"]["stale"] == 1
