"""`forget` stays inside the project: a symlinked export is unlinked, never followed (its target,
inside or outside the project, export or not, keeps every byte), and an export folder that lives
outside the project is reported and left alone."""
from __future__ import annotations

import os

from click.testing import CliRunner

from synix_assets.app.run import run_build
from synix_assets.cli.main import main
from synix_assets.forget import forget
from synix_resources.store.artifact_store import ArtifactStore

MARKER = "Vorpelquandrix"


def _forget_cli(paths, *args):
    return CliRunner().invoke(main, ["-p", str(paths.root), "forget", *args])


def _untouched(path, before: tuple[bytes, int]) -> bool:
    return path.read_bytes() == before[0] and path.stat().st_mtime_ns == before[1]


def test_forget_of_a_symlinked_export_removes_the_link_and_not_its_target(
        small_project, claude_export, make_conversations, tmp_path, files_containing):
    paths = small_project(2)
    (tmp_path / "elsewhere").mkdir()
    outside = claude_export(tmp_path / "elsewhere" / "linked.json",
                            make_conversations(2, prefix="linked", marker_at={0: MARKER}))
    before = (outside.read_bytes(), outside.stat().st_mtime_ns)
    link = paths.root / "exports" / "x.json"
    link.symlink_to(outside)
    run_build(paths)
    result = _forget_cli(paths, "exports/x.json")
    assert result.exit_code == 0, result.output
    assert "removed the link" in result.output and str(outside) in result.output.replace("\n", "")
    assert not link.is_symlink() and not link.exists()
    assert _untouched(outside, before)  # not zero-filled, not deleted, not rewritten
    assert files_containing(paths.root, MARKER) == []
    store = ArtifactStore(paths.store)
    try:
        assert sorted(store.current_index("transcripts")) == ["conv-0", "conv-1"]
    finally:
        store.close()


def test_forget_of_a_link_to_a_file_that_is_not_an_export_only_removes_the_link(
        small_project, tmp_path):
    paths = small_project(2)
    precious = tmp_path / "home" / "notes.json"
    precious.parent.mkdir()
    precious.write_text('{"not": "an export"}')
    before = (precious.read_bytes(), precious.stat().st_mtime_ns)
    (paths.root / "exports" / "notes.json").symlink_to(precious)
    run_build(paths)
    report = forget(paths, "exports/notes.json", rebuild=run_build)
    assert report.links_removed == [{"link": str(paths.root / "exports" / "notes.json"),
                                     "points_to": str(precious)}]
    assert report.files_deleted == [] and report.files_rewritten == []
    assert _untouched(precious, before)
    assert not (paths.root / "exports" / "notes.json").is_symlink()


def test_forget_by_id_unlinks_the_linked_export_holding_it(
        small_project, claude_export, make_conversations, tmp_path, files_containing):
    paths = small_project(2)
    (tmp_path / "elsewhere").mkdir()
    outside = claude_export(tmp_path / "elsewhere" / "linked.json",
                            make_conversations(2, prefix="linked", marker_at={0: MARKER}))
    before = (outside.read_bytes(), outside.stat().st_mtime_ns)
    (paths.root / "exports" / "x.json").symlink_to(outside)
    run_build(paths)
    report = forget(paths, "linked-0", rebuild=run_build)
    assert [r["link"] for r in report.links_removed] == [str(paths.root / "exports" / "x.json")]
    assert _untouched(outside, before)
    assert files_containing(paths.root, MARKER) == []


def test_an_export_folder_outside_the_project_is_reported_and_left_alone(
        small_project, claude_export, make_conversations, tmp_path, files_containing):
    paths = small_project(1)
    elsewhere = tmp_path / "shared-exports"
    elsewhere.mkdir()
    outside = claude_export(elsewhere / "talks.json",
                            make_conversations(2, prefix="far", marker_at={0: MARKER}))
    before = (outside.read_bytes(), outside.stat().st_mtime_ns)
    (paths.root / "exports" / "talks.json").unlink()
    os.rmdir(paths.root / "exports")
    (paths.root / "exports").symlink_to(elsewhere, target_is_directory=True)
    run_build(paths)
    report = forget(paths, "far-0", rebuild=run_build)
    assert [f["path"] for f in report.files_outside] == [str(outside)]
    assert report.files_deleted == report.files_rewritten == []
    assert _untouched(outside, before)
    assert files_containing(paths.state_dir, MARKER) == []
    assert run_build(paths).to_json()["llm_calls"] == 0  # tombstoned: not read again
    store = ArtifactStore(paths.store)
    try:
        assert store.current("transcripts", "far-0") is None
    finally:
        store.close()
