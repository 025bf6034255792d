"""A syke branch (`synix branch create syke --template syke`) built and scored by the LoCoMo eval
offline: the agent step's memories are in the search index, so they are hits, credited with
the sessions their evidence came from, with complete provenance."""
from __future__ import annotations

import pytest

from synix_assets.app.branches import create_branch
from synix_assets.eval.data import load_locomo
from synix_assets.eval.results import results_path
from synix_assets.eval.runner import EvalSettings, run_eval
from synix_assets.project import ProjectPaths


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    for var in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY", "SYNIX_PROJECT", "SYNIX_STORE_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home_unused"))


def test_a_syke_branch_is_built_and_its_agent_memories_are_scored(make_project, locomo_file):
    main = make_project("proj")
    created = create_branch(main, "syke", template="syke")
    assert created["branch"] == "syke"
    syke = ProjectPaths(main.root, "syke")
    assert "agent_step(\"memories\"" in syke.pipeline_file.read_text()
    result = run_eval(load_locomo(locomo_file), project=syke, branch="syke",
                      settings=EvalSettings(modes=("fts",), systems=("memory", "raw-rag")),
                      results_db=results_path(syke.state_dir))
    build = result["run"]["builds"][0]
    assert build["layers"]["memories"]["built"] >= 3  # one record per episode read, and the map
    memory = result["systems"]["memory"]["fts"]
    assert "agent_memories" in memory["altitude_top1"]
    assert memory["session_recall@5"] == 1.0 and memory["provenance_complete"] == 1.0


def test_branch_create_refuses_a_template_and_a_pipeline_file_together(make_project, tmp_path):
    from synix_resources.errors import BranchError

    main = make_project("proj2")
    with pytest.raises(BranchError, match="--pipeline or --template, not both"):
        create_branch(main, "x", template="syke", pipeline_file=main.pipeline_file)
    assert not ProjectPaths(main.root, "x").branch_dir.exists()
