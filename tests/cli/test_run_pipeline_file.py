"""The 002 design's `synix run pipeline.py --source-dir ./exports`, in real subprocesses: the
file names the project, --source-dir the export folder this run reads."""
from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from synix_assets.app.init import demo_exports
from tests.cli.test_cli_subprocess import synix

pytestmark = pytest.mark.slow


@pytest.fixture
def layout(tmp_path):
    """tmp/mem (a project with an empty exports/) and tmp/downloads (the Claude demo export)."""
    assert synix("init", "mem", cwd=tmp_path).returncode == 0
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    shutil.copy(next(p for p in demo_exports() if p.name.startswith("claude")), downloads)
    return tmp_path


def _source_paths(project) -> set[str]:
    db = sqlite3.connect(project / ".synix" / "synix.db")
    try:
        rows = db.execute("SELECT metadata FROM artifacts WHERE layer = 'transcripts'").fetchall()
    finally:
        db.close()
    return {json.loads(m)["meta.source.path"] for (m,) in rows}


def test_run_with_a_pipeline_file_and_source_dir_builds_that_project_from_that_folder(layout):
    before = (layout / "mem" / "pipeline.py").read_text()
    run = synix("run", "mem/pipeline.py", "--source-dir", "./downloads", "--json", cwd=layout)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["layers"]["transcripts"]["built"] > 0 and report["layers"]["episodes"]["built"] > 0
    paths = _source_paths(layout / "mem")
    assert paths and all(p.startswith(str(layout / "downloads")) for p in paths)
    assert (layout / "mem" / "pipeline.py").read_text() == before  # the override is for this run only
    # the same folder again: nothing to build (the folder is in no key)
    again = synix("run", "mem/pipeline.py", "--source-dir", str(layout / "downloads"), "--json", cwd=layout)
    assert again.returncode == 0 and json.loads(again.stdout)["llm_calls"] == 0
    # without --source-dir the project reads its own (empty) exports/ folder
    own = synix("run", "mem/pipeline.py", cwd=layout)
    assert own.returncode == 1 and "no export" in own.stderr.lower()


def test_run_refuses_a_file_that_is_not_a_projects_pipeline_in_one_line(layout):
    (layout / "notes.py").write_text("x = 1\n")
    other = synix("run", "notes.py", cwd=layout)
    assert other.returncode == 1 and other.stderr.count("\n") <= 2
    assert "notes.py is not the pipeline file of a project" in other.stderr
    missing = synix("run", "mem/nothing.py", cwd=layout)
    assert missing.returncode == 1 and "pipeline file mem/nothing.py does not exist" in missing.stderr


def test_source_dir_that_is_not_a_folder_or_names_no_source_is_refused(layout):
    gone = synix("run", "mem/pipeline.py", "--source-dir", "./nowhere", cwd=layout)
    assert gone.returncode == 2 and "./nowhere is not a folder" in gone.stderr
    wrong = synix("run", "mem/pipeline.py", "--source-dir", "chats=./downloads", cwd=layout)
    assert wrong.returncode == 1
    assert "the pipeline has no export source 'chats'" in wrong.stderr and "exports" in wrong.stderr
    named = synix("run", "mem/pipeline.py", "--source-dir", "exports=./downloads", "--json", cwd=layout)
    assert named.returncode == 0, named.stderr


def test_plan_with_a_pipeline_file_and_source_dir_plans_what_that_run_would_build(layout):
    plan = synix("plan", "mem/pipeline.py", "--source-dir", "./downloads", "--json", cwd=layout)
    assert plan.returncode == 0, plan.stderr
    stale = json.loads(plan.stdout)["layers"]["episodes"]["stale"]
    assert stale > 0
    run = synix("run", "mem/pipeline.py", "--source-dir", "./downloads", "--json", cwd=layout)
    assert json.loads(run.stdout)["layers"]["episodes"]["built"] == stale
    after = synix("plan", "mem/pipeline.py", "--source-dir", "./downloads", "--json", cwd=layout)
    assert json.loads(after.stdout)["layers"]["episodes"]["stale"] == 0
    # without --source-dir, the project's own (empty) exports/ folder is what it plans for
    own = synix("plan", "mem/pipeline.py", cwd=layout)
    assert own.returncode == 1 and "no export" in own.stderr.lower()
