"""`synix forget` through the CLI: dry run lists without deleting, a real run forgets and rebuilds."""
from __future__ import annotations

import json

from click.testing import CliRunner

from synix_assets.app.run import run_build
from synix_assets.cli.main import main
from synix_resources.store.artifact_store import ArtifactStore

CONV = "347c7a0d-a98c-5ab8-bfcf-c1de69c3734a"  # "Rust CLI for dotfile sync", January


def _forget(paths, *args):
    return CliRunner().invoke(main, ["-p", str(paths.root), "forget", *args])


def test_forget_dry_run_lists_the_chain_and_changes_nothing(demo_project):
    run_build(demo_project)
    result = _forget(demo_project, CONV, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["dry_run"] is True and report["conversation_ids"] == [CONV]
    assert {a["layer"] for a in report["artifacts"]} >= {"transcripts", "episodes", "monthly", "core"}
    assert ArtifactStore(demo_project.store).current("episodes", CONV) is not None


def test_forget_removes_the_conversation_and_rebuilds_without_it(demo_project):
    run_build(demo_project)
    result = _forget(demo_project, CONV)
    assert result.exit_code == 0, result.output
    store = ArtifactStore(demo_project.store)
    assert store.current("transcripts", CONV) is None and store.current("episodes", CONV) is None
    assert len(store.list_layer("episodes")) == len(store.list_layer("transcripts")) == 23
    january = store.current("monthly", "2025-01")
    assert CONV not in {p.group_key for p in store.parents(january.artifact_id)}


def test_forget_of_an_unknown_conversation_is_one_clean_error(demo_project):
    run_build(demo_project)
    result = _forget(demo_project, "no-such-conversation")
    assert result.exit_code != 0
    assert "Traceback" not in result.output and "no-such-conversation" in result.output
