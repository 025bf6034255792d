"""Branch operations on a real built project: create, diff, promote, undo, crash safety, gc."""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from synix_assets.app import branches
from synix_assets.app.run import run_build
from synix_assets.project import find_project
from synix_resources.errors import BranchError, PipelineDefinitionError

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]
TOPICAL = REPO / "synix_assets" / "examples" / "topical.py"


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def _main_files(paths):
    return {"pipeline": _digest(paths.pipeline_file), "context": _digest(paths.root / "context.md")}


@pytest.fixture
def built(demo_project):
    run_build(demo_project)
    return demo_project


def test_create_copies_no_artifact_and_the_branch_reads_the_projects_exports(built):
    with built.open_store() as store:
        before = store.layers()
    out = branches.create_branch(built, "topical", pipeline_file=TOPICAL)
    assert out["pipeline"].endswith(".synix/branches/topical/pipeline.py")
    topical = built.on_branch("topical")
    pipeline = topical.load_pipeline()
    assert pipeline.resolve(pipeline.sources["exports"].path) == built.root / "exports"
    with built.open_store() as store:
        assert store.layers() == before  # nothing new stored
        # main's pointers, minus the monthly layer the topical pipeline does not declare
        assert store.on_branch("topical").pointers() == \
            {k: v for k, v in store.pointers().items() if k[0] != "monthly"}
    assert topical.output_file(pipeline, "context.md") == topical.branch_dir / "context.md"


def test_diff_names_the_changed_steps(built):
    branches.create_branch(built, "topical", pipeline_file=TOPICAL)
    diff = branches.diff_branch(built, "topical")
    changes = {s["step"]: s["change"] for s in diff["steps"]}
    assert changes["monthly"] == "removed" and changes["topics"] == "added"
    assert changes["core"] == "changed"
    assert "episodes" not in changes and "transcripts" not in changes


def test_switch_makes_commands_default_to_the_branch(built):
    branches.create_branch(built, "exp")
    branches.switch_branch(built, "exp")
    assert find_project(built.root).branch == "exp"
    branches.switch_branch(built, "main")
    assert find_project(built.root).branch == "main"
    with pytest.raises(BranchError, match="no branch 'ghost'"):
        branches.switch_branch(built, "ghost")


def test_promote_then_undo_restores_main_exactly(built):
    branches.create_branch(built, "topical", pipeline_file=TOPICAL)
    before_files = _main_files(built)
    with built.open_store() as store:
        before = store.pointers()
    with pytest.raises(BranchError, match="no complete build"):
        branches.promote_branch(built, "topical")
    branches.promote_branch(built, "topical", force=True)
    assert built.pipeline_file.read_bytes() == TOPICAL.read_bytes()
    assert (built.branches_dir / "main@previous" / "pipeline.py").exists()
    branches.promote_branch(built, "main@previous")
    assert _main_files(built) == before_files
    with built.open_store() as store:
        assert store.pointers() == before
        assert store.get_meta("promote:pending") is None


CRASHING_PROMOTE = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from synix_assets.app import branch_files, branches
    from synix_assets.project import ProjectPaths

    real = branch_files.write_atomic
    def write(path, data):
        if path.name == "pipeline.py" and ".synix" not in str(path):
            os.kill(os.getpid(), signal.SIGKILL)  # kill -9 between the store commit and the files
        return real(path, data)
    branch_files.write_atomic = write
    branches.promote_branch(ProjectPaths(Path(sys.argv[1])), "topical", force=True)
""")


def test_promote_killed_mid_way_is_finished_by_the_next_command(built):
    branches.create_branch(built, "topical", pipeline_file=TOPICAL)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", CRASHING_PROMOTE, str(built.root)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with built.open_store() as store:
        assert store.get_meta("promote:pending") is not None  # store moved, files not yet
    assert branches.finish_pending_promote(built) is True
    assert built.pipeline_file.read_bytes() == TOPICAL.read_bytes()
    with built.open_store() as store:
        assert store.get_meta("promote:pending") is None
        assert store.on_branch("topical").pointers() == store.pointers()
    assert branches.finish_pending_promote(built) is False


def test_delete_then_gc_removes_only_what_no_branch_uses(built):
    branches.create_branch(built, "exp")
    exp = built.on_branch("exp")
    with exp.open_store() as store:
        t = store.current("transcripts", next(iter(store.current_index("transcripts"))))
        own = store.put(layer="episodes", group_key=t.group_key, materialization_key="exp-key",
                        content="an experimental summary", parents=[t.artifact_id])
    assert branches.gc(built, dry_run=True)["unreferenced"] == 0
    branches.delete_branch(built, "exp")
    assert not exp.branch_dir.exists()
    dry = branches.gc(built, dry_run=True)
    assert dry == {"dry_run": True, "unreferenced": 1, "removed": 0, "by_layer": {"episodes": 1}}
    assert branches.gc(built)["removed"] == 1
    with built.open_store() as store:
        assert store.find(own.artifact_id) is None
        assert store.find(t.artifact_id) is not None


def _counts(report):
    return {k: (v["built"], v["cached"]) for k, v in report.to_json()["layers"].items()}


def _tree_digest(folder):
    return {str(p.relative_to(folder)): _digest(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def _main_projection_bytes(paths):
    return {"context": _digest(paths.root / "context.md"), "search": _digest(paths.search)}


EDIT_EPISODES = (
    'pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)',
    'def short_episode(record):\n    return "Summarise in 40 words:\\n" + record.content\n\n'
    'pipeline.transform("episodes", from_="transcripts", prompt=short_episode)')


def test_topical_branch_builds_only_topics_and_core_and_main_is_untouched(built):
    main_before = _main_projection_bytes(built)
    branches.create_branch(built, "topical", pipeline_file=TOPICAL)
    topical = built.on_branch("topical")
    report = run_build(topical)
    assert _counts(report) == {"transcripts": (0, 24), "episodes": (0, 24), "topics": (6, 0),
                               "core": (1, 0)}
    assert report.to_json()["llm_calls"] == 6 + 6  # six topics, then the fold's six steps
    assert _main_projection_bytes(built) == main_before
    assert (topical.branch_dir / "context.md").exists() and topical.search.exists()
    with built.open_store() as store:
        assert "topics" not in store.layers() or not store.current_index("topics")  # main's view
        assert len(store.on_branch("topical").current_index("topics")) == 6
    again = run_build(topical)
    assert again.noop and again.to_json()["llm_calls"] == 0


def test_episode_prompt_edit_on_a_branch_rebuilds_episodes_and_above_there_only(built):
    main_before = _main_projection_bytes(built)
    with built.open_store() as store:
        main_pointers = store.pointers()
    branches.create_branch(built, "short")
    short = built.on_branch("short")
    short.pipeline_file.write_text(short.pipeline_file.read_text().replace(*EDIT_EPISODES))
    report = run_build(short)
    assert _counts(report) == {"transcripts": (0, 24), "episodes": (24, 0), "monthly": (6, 0),
                               "core": (1, 0)}
    assert _main_projection_bytes(built) == main_before
    with built.open_store() as store:
        assert store.pointers() == main_pointers
    diff = branches.diff_branch(built, "short")
    assert {s["step"]: s["change"] for s in diff["steps"]}["episodes"] == "changed"
    layers = {d["layer"]: d for d in diff["layers"]}
    assert len(layers["episodes"]["changed"]) == 24 and layers["transcripts"]["changed"] == []
    # main builds as before: nothing of the branch leaks into its plan
    assert run_build(built).noop


def test_promoting_a_built_branch_makes_mains_next_run_a_no_op_with_the_branchs_memory(built):
    branches.create_branch(built, "topical", pipeline_file=TOPICAL)
    topical = built.on_branch("topical")
    run_build(topical)
    branch_context = (topical.branch_dir / "context.md").read_bytes()
    branches.promote_branch(built, "topical")
    assert (built.root / "context.md").read_bytes() == branch_context
    report = run_build(built)
    assert report.noop and report.to_json()["llm_calls"] == 0
    with built.open_store() as store:
        assert store.pointers() == store.on_branch("topical").pointers()
        core, topics = store.current("core", "all"), store.current_index("topics")
    # Dagster shows the promoted memory on main's own assets (no build ran to record it)
    import dagster as dg

    from synix_assets.dagster_defs.instance import dagster_instance
    from synix_assets.dagster_defs.records import data_version

    instance = dagster_instance(built)
    event = instance.get_latest_materialization_event(dg.AssetKey(["core"])).asset_materialization
    assert event.tags["dagster/data_version"] == data_version(core.content_hash)
    assert event.tags["synix/trigger"] == "promote"
    assert set(instance.get_materialized_partitions(dg.AssetKey(["topics"]))) == set(topics)


def test_dagster_shows_each_branch_as_its_own_graph_with_its_own_runs(built):
    import dagster as dg

    from synix_assets.dagster_defs.build import build_defs

    branches.create_branch(built, "topical", pipeline_file=TOPICAL)
    run_build(built.on_branch("topical"))
    defs = build_defs(built.root)  # DAGSTER_HOME is the project's (set by the build)
    keys = {spec.key.to_user_string() for spec in defs.resolve_all_asset_specs()}
    assert {"episodes", "monthly", "core", "sources/exports"} <= keys
    assert {"branches/topical/episodes", "branches/topical/topics", "branches/topical/core",
            "branches/topical/synix_context"} <= keys
    assert "branches/topical/monthly" not in keys and "branches/topical/sources/exports" not in keys
    repo = defs.get_repository_def()
    assert {"synix_build_all", "topical__synix_build_all", "topical__synix_build_topics"} <= \
        set(repo.job_names)
    specs = {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}
    # same code where the branch shares main's layer, different where it does not
    assert specs["episodes"].code_version == specs["branches/topical/episodes"].code_version
    assert specs["core"].code_version != specs["branches/topical/core"].code_version
    assert specs["branches/topical/topics"].group_name == "branch_topical"
    instance = dg.DagsterInstance.get()
    assert instance.get_latest_materialization_event(dg.AssetKey(["branches", "topical", "core"]))
    assert instance.get_latest_materialization_event(dg.AssetKey(["topics"])) is None
    runs = instance.get_runs(filters=dg.RunsFilter(tags={"synix/branch": "topical"}))
    assert {r.job_name for r in runs} == {"topical__synix_build_topics",
                                          "topical__synix_update_projections"}
    # shared layers show as materialized on the branch too (recorded from the store, not rebuilt)
    assert len(instance.get_dynamic_partitions("topical__conversations")) == 24
    shared = instance.get_latest_materialization_event(dg.AssetKey(["branches", "topical", "episodes"]))
    assert shared.asset_materialization.tags["synix/trigger"] == "store_sync"
    # deleting the branch removes its graph, and the next load wipes its assets from the instance
    branches.delete_branch(built, "topical")
    build_defs(built.root)
    assert instance.get_latest_materialization_event(dg.AssetKey(["branches", "topical", "core"])) is None


def test_python_branch_api_overrides_a_step_runs_diffs_and_promotes(built, tmp_path):
    from synix_assets.pipeline.prompts import template

    prompt = tmp_path / "episode.txt"
    prompt.write_text("Summarise this conversation in 30 words:\n{content}\n")
    pipeline = built.load_pipeline()
    branch = pipeline.branch("short")
    branch.transform("episodes", from_="transcripts", prompt=template(prompt))
    assert "Summarise this conversation" in branch.pipeline.steps["episodes"].prompt.text()
    planned = branch.plan().to_json()
    assert planned["layers"]["episodes"]["stale"] == 24 and planned["layers"]["transcripts"]["stale"] == 0
    assert _counts(branch.run()) == {"transcripts": (0, 24), "episodes": (24, 0), "monthly": (6, 0),
                                     "core": (1, 0)}
    layers = {d["layer"]: d for d in branch.diff().layers}
    assert len(layers["episodes"]["changed"]) == 24
    branch.promote()
    assert run_build(built).noop
    assert "Summarise this conversation" in built.load_pipeline().steps["episodes"].prompt.text()


def test_python_branch_api_refuses_a_prompt_it_cannot_write_and_keeps_the_file(built):
    from synix_assets.pipeline import builtin_prompts

    def local_prompt(record):
        return record.content

    branch = built.load_pipeline().branch("exp")
    before = branch.paths.pipeline_file.read_bytes()
    with pytest.raises(PipelineDefinitionError, match="cannot be written into the branch"):
        branch.transform("episodes", from_="transcripts", prompt=local_prompt)
    with pytest.raises(PipelineDefinitionError, match="'ghost'"):  # a broken edge: file restored
        branch.transform("episodes", from_="ghost", prompt=builtin_prompts.episode_summary)
    assert branch.paths.pipeline_file.read_bytes() == before


def test_promote_accepts_a_branch_completed_by_a_full_run_from_a_layer(built, tmp_path):
    from synix_assets.pipeline.prompts import template

    prompt = tmp_path / "episode.txt"
    prompt.write_text("Summarise this conversation in 20 words:\n{content}\n")
    branch = built.load_pipeline().branch("short")
    branch.transform("episodes", from_="transcripts", prompt=template(prompt))
    with pytest.raises(BranchError, match=r"no complete build to promote \(episodes: 24 to build"):
        branch.promote()
    report = branch.run(from_="episodes", full=True)
    assert report.status == "completed" and not report.noop
    with built.open_store() as store:  # a run from a layer records no whole-build fingerprint
        assert store.on_branch("short").get_meta("build:fingerprint") is None
    branch_context = (branch.paths.branch_dir / "context.md").read_bytes()
    assert branch.promote()["promoted"] == "short"
    assert (built.root / "context.md").read_bytes() == branch_context
    assert "Summarise this conversation in 20" in built.load_pipeline().steps["episodes"].prompt.text()
