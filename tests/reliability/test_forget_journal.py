"""`forget` is journaled: killed (SIGKILL) or failing in any phase, it is finished by a rerun of
`synix forget` (with or without the id) or by the next `synix run`, and only then reports success;
afterwards not one byte of the project folder holds the forgotten text."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from synix_assets.app.run import run_build
from synix_assets.cli.main import main
from synix_assets.forget import PHASES, forget, pending_forget
from synix_assets.forget import core as forget_core
from synix_assets.forget import phases as forget_phases
from synix_assets.forget.journal import CRASH_ENV, journal_path
from synix_assets.project import ProjectPaths
from synix_assets.app.init import init_project
from synix_resources.store.artifact_store import ArtifactStore

MARKER = "Zqxjarvelmonk"  # appears only in the forgotten conversation
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def built(tmp_path_factory, claude_export, make_conversations):
    """A built project (4 conversations + private.json holding the marker and a neighbour).
    Built once, then restored byte for byte (mtimes included) at the same path for each test:
    every path recorded inside the project stays valid, and each test skips the build."""
    live = tmp_path_factory.getbasetemp() / "forget-journal" / "mem"
    template = live.parent / "template"
    shutil.rmtree(live, ignore_errors=True)
    if template.exists():
        shutil.copytree(template, live, symlinks=True)
        return ProjectPaths(live)
    paths = ProjectPaths(init_project(live))
    claude_export(live / "exports" / "talks.json", make_conversations(4))
    claude_export(live / "exports" / "private.json",
                  make_conversations(2, prefix="private", months=("2025-01",), marker_at={0: MARKER}))
    run_build(paths)
    # Copied by a child process: closing a descriptor of a database this process still has open
    # would drop its SQLite locks (and let the next process corrupt the file).
    subprocess.run(["cp", "-a", str(live), str(template)], check=True)
    return paths


def _killed_forget(paths, phase: str, *args: str) -> subprocess.CompletedProcess:
    """`synix forget` in a real process that SIGKILLs itself right after `phase`'s work."""
    env = {**os.environ, CRASH_ENV: phase, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "synix_assets.cli", "-p", str(paths.root),
                           "forget", *args], env=env, capture_output=True, text=True, timeout=300)


def _assert_forgotten(paths, files_containing) -> None:
    assert files_containing(paths.root, MARKER) == []
    assert not journal_path(paths).exists()
    store = ArtifactStore(paths.store)
    try:
        assert store.current("transcripts", "private-0") is None
        assert store.history("episodes", "private-0") == []
        assert store.current("episodes", "private-1") is not None  # its neighbour stays
        assert len(store.current_index("episodes")) == 5
    finally:
        store.close()
    assert "private-1" in (paths.root / "exports" / "private.json").read_text()


@pytest.mark.parametrize("phase", PHASES)
def test_forget_killed_after_each_phase_is_finished_by_a_second_forget(built, phase, files_containing):
    killed = _killed_forget(built, phase, "private-0")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert pending_forget(built) == "private-0"
    again = CliRunner().invoke(main, ["-p", str(built.root), "forget", "private-0"])
    assert again.exit_code == 0, again.output
    assert "no conversation" not in again.output and "verified: no trace" in again.output
    _assert_forgotten(built, files_containing)


@pytest.mark.parametrize("phase", ["store", "cache", "exports", "rebuild", "purge"])
def test_forget_killed_mid_way_is_finished_by_the_next_run(built, phase, files_containing):
    killed = _killed_forget(built, phase, "private-0")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    run_build(built)
    _assert_forgotten(built, files_containing)


def test_forget_without_an_id_finishes_the_pending_one(built, files_containing):
    assert _killed_forget(built, "dagster", "private-0").returncode == -signal.SIGKILL
    result = CliRunner().invoke(main, ["-p", str(built.root), "forget", "--json"])
    assert result.exit_code == 0, result.output
    assert '"resumed": true' in result.stdout and '"target": "private-0"' in result.stdout
    _assert_forgotten(built, files_containing)
    nothing = CliRunner().invoke(main, ["-p", str(built.root), "forget"])
    assert nothing.exit_code == 0 and "no forget is pending" in nothing.output


def test_a_phase_that_fails_leaves_the_forget_pending_and_a_rerun_finishes_it(
        built, monkeypatch, files_containing):
    real = forget_phases._phase_exports

    def broken(*args):
        raise OSError("disk went away")

    monkeypatch.setattr(forget_phases, "_phase_exports", broken)
    with pytest.raises(OSError):
        forget(built, "private-0", rebuild=run_build)
    assert pending_forget(built) == "private-0"
    assert MARKER in (built.root / "exports" / "private.json").read_text()  # not yet rewritten
    monkeypatch.setattr(forget_phases, "_phase_exports", real)
    report = forget(built, "private-0", rebuild=run_build)
    assert report.resumed and report.rebuild_error is None
    _assert_forgotten(built, files_containing)


def test_the_journal_is_written_before_anything_is_deleted(built, monkeypatch):
    """A kill during the first phase: the journal already names everything to remove."""
    def crash(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(forget_phases, "_phase_store", crash)
    with pytest.raises(KeyboardInterrupt):
        forget(built, "private-0", rebuild=run_build)
    import json

    journal = json.loads(journal_path(built).read_text())
    assert journal["conversation_ids"] == ["private-0"] and journal["done"] == []
    assert {a["layer"] for a in journal["artifacts"]} == {"transcripts", "episodes", "monthly", "core"}
    assert journal["files"][0]["action"] == "rewrite" and journal["cache_keys"]
    assert oct(journal_path(built).stat().st_mode & 0o777) == "0o600"


def test_a_new_forget_finishes_the_pending_one_first(built, monkeypatch, files_containing):
    def broken(*args):
        raise OSError("disk went away")

    real = forget_phases._phase_cache
    monkeypatch.setattr(forget_phases, "_phase_cache", broken)
    with pytest.raises(OSError):
        forget(built, "private-0", rebuild=run_build)
    monkeypatch.setattr(forget_phases, "_phase_cache", real)
    report = forget(built, "conv-3", rebuild=run_build)
    assert report.finished_pending == ["private-0"] and report.conversation_ids == ["conv-3"]
    assert files_containing(built.root, MARKER) == [] and not journal_path(built).exists()
    store = ArtifactStore(built.store)
    try:
        assert store.current("transcripts", "conv-3") is None
        assert store.current("transcripts", "private-0") is None
        assert len(store.current_index("episodes")) == 4
    finally:
        store.close()


def test_the_old_context_document_goes_even_when_the_rebuild_fails(built, monkeypatch):
    """context.md was written from the old core: it is zero-filled and removed before the
    rebuild, so a failed rebuild cannot leave the forgotten memory in the agent's prompt."""
    context = built.root / "context.md"
    assert context.exists()
    real = forget_core._phase_rebuild
    monkeypatch.setattr(forget_core, "_phase_rebuild",
                        lambda *a: {"rebuild": None, "rebuild_error": "provider down"})
    report = forget(built, "private-0", rebuild=run_build)
    assert report.rebuild_error == "provider down" and not context.exists()
    monkeypatch.setattr(forget_core, "_phase_rebuild", real)
    run_build(built)
    assert context.exists()
