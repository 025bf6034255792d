"""`forget` stays inside the project: a link in the export folder that leads outside it is never
read (so there is nothing of it to forget, and forget touches neither the link nor its target),
and an export folder that lives outside the project is reported and left alone."""
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


def _linked_outside(small_project, claude_export, make_conversations, tmp_path):
    paths = small_project(2)
    (tmp_path / "elsewhere").mkdir()
    outside = claude_export(tmp_path / "elsewhere" / "linked.json",
                            make_conversations(2, prefix="linked", marker_at={0: MARKER}))
    link = paths.root / "exports" / "x.json"
    link.symlink_to(outside)
    return paths, outside, link


def test_an_export_link_leading_outside_the_folder_is_never_read_so_nothing_of_it_is_remembered(
        small_project, claude_export, make_conversations, tmp_path, files_containing):
    # links that leave the folder given are skipped (a folder holding a link into ~/.ssh must not
    # put a key into the memory), so its conversations never reach the store or the index
    paths, outside, link = _linked_outside(small_project, claude_export, make_conversations, tmp_path)
    before = (outside.read_bytes(), outside.stat().st_mtime_ns)
    run_build(paths)
    assert files_containing(paths.state_dir, MARKER) == []  # store, index, caches
    assert MARKER not in (paths.root / "context.md").read_text(encoding="utf-8")
    store = ArtifactStore(paths.store)
    try:
        assert sorted(store.current_index("transcripts")) == ["conv-0", "conv-1"]
    finally:
        store.close()
    assert _untouched(outside, before) and link.is_symlink()


def test_forget_of_an_export_link_leading_outside_refuses_in_one_line_and_touches_neither_link_nor_target(
        small_project, claude_export, make_conversations, tmp_path):
    paths, outside, link = _linked_outside(small_project, claude_export, make_conversations, tmp_path)
    before = (outside.read_bytes(), outside.stat().st_mtime_ns)
    run_build(paths)
    for target in ("exports/x.json", "linked-0"):
        result = _forget_cli(paths, target)
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert lines[-1].startswith("error: ") and "Traceback" not in result.output, result.output
    assert _untouched(outside, before) and link.is_symlink()


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
