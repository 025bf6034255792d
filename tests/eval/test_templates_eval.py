"""The four architectures on the same data (issue 32, "What a user can do"): branches made from
the topical, syke and synapse templates beside main (monthly), and one `synix eval locomo
--branch main --branch topical --branch syke --branch synapse --baseline raw-rag` that builds
each through its own pipeline, offline, and prints them side by side."""
from __future__ import annotations

import json

from click.testing import CliRunner

from synix_assets.cli.main import main


def _cli(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=True)
    assert result.exit_code == 0, result.output
    return result


def test_branch_and_eval_of_all_four_templates_side_by_side_on_the_locomo_fixture(
        make_project, locomo_file, monkeypatch):
    for var in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY", "SYNIX_PROJECT", "SYNIX_STORE_PATH",
                "SYNIX_BRANCH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    project = make_project("proj")  # main: the monthly template
    root = str(project.root)
    for template in ("topical", "syke", "synapse"):
        made = json.loads(_cli("branch", "create", template, "--template", template, "-p", root,
                               "--json").stdout)
        assert made["branch"] == template
    out = json.loads(_cli("eval", "locomo", "--data", str(locomo_file), "-p", root,
                          "--branch", "main", "--branch", "topical", "--branch", "syke",
                          "--branch", "synapse", "--baseline", "raw-rag", "--modes", "fts",
                          "--json").stdout)
    systems = ("main", "topical", "syke", "synapse", "raw-rag")
    assert set(out["systems"]) == set(systems)
    for system in systems:
        metrics = out["systems"][system]["fts"]
        assert metrics["questions"] == 5 and metrics["provenance_complete"] == 1.0
        assert metrics["session_recall@5"] == 1.0  # every evidence session is in every top 5
    runs = {r["branch"]: r for r in out["runs"]}
    assert list(runs) == ["main", "topical", "syke", "synapse"]
    layers = {b: set(runs[b]["builds"][0]["layers"]) for b in runs}
    # each branch was built through its own template's pipeline
    assert {"monthly", "core"} <= layers["main"] and "topics" not in layers["main"]
    assert "topics" in layers["topical"]
    assert "memories" in layers["syke"] and "monthly" not in layers["syke"]
    assert runs["syke"]["builds"][0]["layers"]["memories"]["built"] >= 3  # the episodes read + map
    assert "agent_memories" in out["systems"]["syke"]["fts"]["altitude_top1"]
    synapse_pipeline = (project.root / ".synix" / "branches" / "synapse" / "pipeline.py").read_text()
    assert 'kind="live"' in synapse_pipeline
    assert len({runs[b]["pipeline_version"] for b in runs}) == 4  # four different architectures
