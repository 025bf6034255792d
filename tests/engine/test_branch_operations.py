"""Branch operations on a real built project: create, diff, promote, undo, crash safety, gc."""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from synix_assets.engine import branches
from synix_assets.engine.runner import run_build
from synix_assets.project import find_project
from synix_resources.errors import BranchError

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
        assert store.on_branch("topical").pointers() == store.pointers()
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
    from synix_assets.engine import branches
    from synix_assets.project import ProjectPaths

    real = branches._write_atomic
    def write(path, data):
        if path.name == "pipeline.py" and ".synix" not in str(path):
            os.kill(os.getpid(), signal.SIGKILL)  # kill -9 between the store commit and the files
        return real(path, data)
    branches._write_atomic = write
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


def test_building_a_branch_is_refused_until_it_has_its_own_dagster_assets(built):
    branches.create_branch(built, "exp")
    with pytest.raises(BranchError, match="building branch 'exp' is not available yet"):
        run_build(built.on_branch("exp"))
    with built.open_store() as store:
        assert store.on_branch("exp").list_runs() == []
