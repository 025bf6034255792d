"""One portable SQLite file per project (design 003): `synix pack` on one folder, `synix unpack`
into another (real subprocesses of the installed `synix`), and there the build has nothing to
do, search answers, the ledger and agent memories came along; damaged and foreign files are
refused with one line and leave nothing behind."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from synix_assets.app.ledger import append_events, resolve_events
from synix_assets.app.portable import pack, unpack
from synix_assets.app.run import run_build
from synix_assets.project import ProjectPaths
from synix_resources.errors import ProjectFileError

SYNIX = shutil.which("synix", path=str(Path(sys.executable).parent)) or "synix"


def synix(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake", "NO_COLOR": "1"}
    env.pop("SYNIX_PROJECT", None)
    proc = subprocess.run([SYNIX, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


@pytest.fixture
def built(demo_project, monkeypatch):
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "fake")
    run_build(demo_project)
    return demo_project


def test_a_packed_project_unpacked_elsewhere_builds_nothing_and_answers_searches(built, tmp_path):
    from synix_assets.engine.agent_memory import MemoryWriter

    cited = append_events(built, [{"source": "github", "event_type": "commit",
                                   "content": "Pinned the kayak rental API to v2"}]).appended[0]
    MemoryWriter(built).create_memory("Rents kayaks through the v2 API", evidence=[])
    run_build(built)
    plan_here = synix("plan", cwd=built.root).stdout
    packed = synix("pack", str(tmp_path / "me.synix.db"), cwd=built.root)
    assert packed.returncode == 0 and packed.stdout.startswith("packed ")
    away = tmp_path / "elsewhere" / "memory"
    shutil.rmtree(built.root)  # the other machine has only the file
    out = synix("unpack", str(tmp_path / "me.synix.db"), str(away), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    run = synix("run", cwd=away)
    assert run.returncode == 0 and "Nothing changed" in run.stdout, run.stdout + run.stderr
    assert synix("plan", cwd=away).stdout == plan_here  # the same plan as where it was packed
    assert "Lumen Labs" in synix("search", "equity offer", cwd=away).stdout
    moved = ProjectPaths(away)
    assert [e.id for e in resolve_events(moved, [cited]).found] == [cited]
    assert "kayak" in synix("memory", "cross_reference", "kayaks", "--json", cwd=away).stdout
    assert (away / ".env").read_text().strip() == f"DAGSTER_HOME={(away / '.synix' / 'dagster').resolve()}"
    assert oct((away / ".synix" / "synix.db").stat().st_mode & 0o777) == "0o600"


def test_the_pack_leaves_out_this_machines_dagster_home_and_sqlite_side_files(built, tmp_path):
    pack(built, tmp_path / "p.db")
    conn = sqlite3.connect(tmp_path / "p.db")
    names = [r[0] for r in conn.execute("SELECT path FROM files")]
    conn.close()
    assert {".synix/synix.db", ".synix/search.db", ".synix/ledger.db", "pipeline.py"} <= set(names)
    assert not [n for n in names if n.startswith(".synix/dagster") or n.endswith(("-wal", "-shm"))
                or n.endswith("build.lock")]


@pytest.mark.parametrize("damage, says", [
    ("truncate", "is damaged"), ("flip", "does not match its checksum"),
    ("foreign", "is a SQLite file, but not a Synix project file"), ("text", "not a SQLite file")])
def test_a_damaged_or_foreign_file_is_refused_with_one_line_and_leaves_nothing(built, tmp_path, damage, says):
    good = tmp_path / "p.db"
    pack(built, good)
    data = bytearray(good.read_bytes())
    bad = tmp_path / "bad.db"
    if damage == "truncate":
        bad.write_bytes(data[: len(data) // 3])
    elif damage == "flip":  # one byte of a stored file's bytes (pipeline.py's text)
        data[data.index(b"pipeline.source(")] ^= 0x01
        bad.write_bytes(data)
    elif damage == "foreign":
        shutil.copy(built.store, bad)
    else:
        bad.write_text("not a database\n")
    with pytest.raises(ProjectFileError, match=says) as caught:
        unpack(bad, tmp_path / "target")
    assert "\n" not in caught.value.one_line()
    assert not (tmp_path / "target").exists() and not list(tmp_path.glob(".target.unpacking-*"))
    cli = synix("unpack", str(bad), str(tmp_path / "target"), cwd=tmp_path)
    assert cli.returncode == 1 and len(cli.stderr.strip().splitlines()) == 1 and says in cli.stderr


def test_unpack_refuses_a_folder_that_holds_something(built, tmp_path):
    pack(built, tmp_path / "p.db")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(ProjectFileError, match="not an empty folder"):
        unpack(tmp_path / "p.db", tmp_path / "full")
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"


def test_a_source_outside_the_project_is_refused_naming_it(demo_project, tmp_path):
    outside = tmp_path / "elsewhere-exports"
    shutil.move(demo_project.root / "exports", outside)
    text = (demo_project.root / "pipeline.py").read_text()
    (demo_project.root / "pipeline.py").write_text(text.replace('path="exports"', f'path={str(outside)!r}'))
    with pytest.raises(ProjectFileError, match="outside the project folder"):
        pack(demo_project, tmp_path / "p.db")
