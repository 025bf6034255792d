"""A notes folder given to `synix init --from` builds through `synix run` (offline provider), and
search finds a note by its words, naming the note's path as its conversation."""
from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from synix_assets.cli.main import main


def _invoke(*args, cwd: Path | None = None):
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), catch_exceptions=True)
    finally:
        os.chdir(old)


def test_a_notes_vault_builds_end_to_end_and_search_finds_a_note(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "unused_dagster_home"))
    vault = tmp_path / "vault"
    (vault / "Daily").mkdir(parents=True)
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.md").write_text("not a note")
    (vault / "Daily" / "2024-03-04.md").write_text(
        "## Notes\n\nBooked the ferry to Vlieland for the kayak trip with Ingrid.\n")
    (vault / "Recipes.md").write_text(
        "---\ncreated: 2024-02-10\ntags: [food]\n---\nSourdough needs a levain fed twelve hours before baking.\n")
    init = _invoke("init", str(tmp_path / "mem"), "--from", str(vault), "--json")
    assert init.exit_code == 0, init.output
    root = tmp_path / "mem"
    assert not (root / "exports" / "vault" / ".obsidian").exists()
    run = _invoke("run", "--json", cwd=root)
    assert run.exit_code == 0, run.output
    hits = json.loads(_invoke("search", "ferry Vlieland kayak", "--json", cwd=root).stdout)["hits"]
    assert hits, "the note was not found"
    sources = [s for hit in hits for s in hit["sources"]]
    assert any(s["conversation_id"] == "vault/Daily/2024-03-04.md" for s in sources)
    assert any(s["date"].startswith("2024-03-04") for s in sources
               if s["conversation_id"] == "vault/Daily/2024-03-04.md")
