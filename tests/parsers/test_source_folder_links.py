"""Issue 40: an entry of an export or notes folder that cannot be read as one of its files — a
symlink loop, a broken link, a FIFO, a link (to a file or a folder) that resolves outside the
folder — is skipped with one line naming it and the cause, and the rest of the folder is read,
by the build's walk and by `synix init --from` alike. A vault's link into ~/.ssh never puts a
key into the memory."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from synix_assets.sources.reader import iter_export_files
from synix_resources.errors import SourceEntrySkipped

SYNIX = shutil.which("synix", path=str(Path(sys.executable).parent)) or "synix"
SECRET = "BEGIN-OPENSSH-PRIVATE-KEY-not-for-the-memory"


@pytest.fixture
def vault(tmp_path) -> Path:
    """A notes folder holding two notes and every kind of entry that must be skipped."""
    outside = tmp_path / "dot-ssh"
    outside.mkdir()
    (outside / "id_ed25519.md").write_text(SECRET + "\n", encoding="utf-8")
    folder = tmp_path / "vault"
    (folder / "daily").mkdir(parents=True)
    (folder / "garden.md").write_text("# Garden\n\nWe planted walnut trees.\n", encoding="utf-8")
    (folder / "daily" / "2024-05-01.md").write_text("Fixed the kettle switch.\n", encoding="utf-8")
    os.symlink("../garden.md", folder / "daily" / "garden-link.md")  # inside the folder: read
    os.symlink(outside / "id_ed25519.md", folder / "key.md")  # a file outside
    os.symlink(outside, folder / "ssh")  # a folder outside
    os.symlink("loop.md", folder / "loop.md")  # a link to itself
    os.symlink("missing.md", folder / "broken.md")
    os.mkfifo(folder / "pipe.md")
    return folder


def test_the_walk_skips_loops_broken_links_fifos_and_links_leaving_the_folder_with_one_line_each(vault):
    skipped: list[SourceEntrySkipped] = []
    files = list(iter_export_files(vault, skipped.append))
    assert [f.relative_to(vault).as_posix() for f in files] == [
        "daily/2024-05-01.md", "daily/garden-link.md", "garden.md"]
    lines = sorted(s.one_line() for s in skipped)
    outside = vault.parent / "dot-ssh"
    assert lines == sorted([
        f"{vault / 'broken.md'}: skipped, a broken link (its target does not exist)",
        f"{vault / 'key.md'}: skipped, a link that leads outside the folder (to {outside / 'id_ed25519.md'}); "
        "copy it into the folder if it belongs in the memory",
        f"{vault / 'loop.md'}: skipped, the link cannot be followed (a symlink loop)",
        f"{vault / 'pipe.md'}: skipped, a FIFO, not a regular file",
        f"{vault / 'ssh'}: skipped, a link that leads outside the folder (to {outside}); "
        "copy it into the folder if it belongs in the memory",
    ])


def test_a_source_that_is_itself_a_symlink_loop_is_one_skipped_line_not_an_error(tmp_path):
    os.symlink("exports", tmp_path / "exports")
    skipped: list[SourceEntrySkipped] = []
    assert list(iter_export_files(tmp_path / "exports", skipped.append)) == []
    assert [s.one_line() for s in skipped] == [
        f"{tmp_path / 'exports'}: skipped, a symlink loop"]


def _synix(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNIX_", "ANTHROPIC_"))}
    env.update({"NO_COLOR": "1", "SYNIX_LLM_PROVIDER": "fake"})
    proc = subprocess.run([SYNIX, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc


def test_init_from_a_vault_copies_its_notes_but_no_link_leaving_it_and_says_so_once(vault, tmp_path):
    proc = _synix("init", "mem", "--from", str(vault), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    copied = sorted(p.relative_to(tmp_path / "mem" / "exports").as_posix()
                    for p in (tmp_path / "mem" / "exports").rglob("*") if p.is_file())
    assert copied == ["vault/daily/2024-05-01.md", "vault/daily/garden-link.md", "vault/garden.md"]
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 5 and len(set(warnings)) == 5, proc.stderr  # each entry once
    assert any("key.md: skipped, a link that leads outside the folder" in w for w in warnings)
    assert not any(SECRET in p.read_text(errors="replace")
                   for p in (tmp_path / "mem").rglob("*") if p.is_file())


def test_run_over_exports_with_a_symlink_loop_and_an_outside_link_builds_the_rest(tmp_path):
    demo = Path(__file__).resolve().parents[2] / "synix_assets" / "demo" / "claude_demo.json"
    assert _synix("init", "mem", "--from", str(demo), cwd=tmp_path).returncode == 0
    exports = tmp_path / "mem" / "exports"
    (tmp_path / "secret.md").write_text(SECRET + "\n", encoding="utf-8")
    os.symlink("loop.json", exports / "loop.json")
    os.symlink(tmp_path / "secret.md", exports / "hostname.md")
    proc = _synix("run", "--json", cwd=tmp_path / "mem")
    assert proc.returncode == 1, proc.stderr  # inputs were skipped: said, and the exit says so
    assert f"{exports / 'loop.json'}: skipped, the link cannot be followed (a symlink loop)" in proc.stderr
    assert f"{exports / 'hostname.md'}: skipped, a link that leads outside the folder" in proc.stderr
    status = json.loads(_synix("status", "--json", cwd=tmp_path / "mem").stdout)
    assert status["layers"]["episodes"]["artifacts"] == len(json.loads(demo.read_text()))
    search = _synix("search", "OPENSSH", "--json", cwd=tmp_path / "mem")
    assert SECRET not in search.stdout
    transcripts = (tmp_path / "mem" / ".synix").rglob("*")
    assert not any(SECRET.encode() in p.read_bytes() for p in transcripts if p.is_file())


def test_a_file_that_cannot_be_read_is_one_failed_input_and_the_others_are_scanned(tmp_path, monkeypatch):
    from synix_assets.app.init import demo_exports, init_project
    from synix_assets.project import ProjectPaths
    from synix_assets.sources import reader

    root = init_project(tmp_path / "mem", exports=demo_exports())
    denied = root / "exports" / "locked.json"
    denied.write_text("[]", encoding="utf-8")
    real_sha = reader.file_sha256

    def sha_or_denied(path):  # the test runs as root, whom chmod does not stop
        if path == denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real_sha(path)

    monkeypatch.setattr(reader, "file_sha256", sha_or_denied)
    paths = ProjectPaths(root)
    store = paths.open_store()
    try:
        scan = reader.SourceReader(paths.load_pipeline(), store).scan()
    finally:
        store.close()
    assert scan.failed_files == [(str(denied), f"{denied}: skipped, it cannot be read (Permission denied)")]
    assert len(scan.summaries) == sum(len(json.loads(p.read_text())) for p in demo_exports())


def test_a_subfolder_that_cannot_be_listed_is_one_skipped_line_and_its_siblings_are_read(tmp_path, monkeypatch):
    from synix_assets.sources import reader

    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "hidden.md").write_text("x\n", encoding="utf-8")
    (tmp_path / "open.md").write_text("y\n", encoding="utf-8")
    real_scandir = os.scandir

    def scandir(folder):  # the test runs as root, whom a 000 mode does not stop
        if os.fspath(folder) == str(tmp_path / "private"):
            raise PermissionError(13, "Permission denied", os.fspath(folder))
        return real_scandir(folder)

    monkeypatch.setattr(reader.os, "scandir", scandir)
    skipped: list[SourceEntrySkipped] = []
    assert list(iter_export_files(tmp_path, skipped.append)) == [tmp_path / "open.md"]
    assert [s.one_line() for s in skipped] == [
        f"{tmp_path / 'private'}: skipped, the folder cannot be listed (Permission denied)"]
