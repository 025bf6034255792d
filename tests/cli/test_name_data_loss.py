"""Bad names and failed creates/deletes lose nothing: real `synix` subprocesses against a built
project (store, search index, LLM cache, Dagster home) with a file beside it, and a real
`synix serve --home` (tests/live/test_live_names.py); every tree is compared file by file before and after."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _synix(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "synix_assets.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "SYNIX_LLM_PROVIDER": "fake"}, timeout=300)


def tree(root: Path) -> dict[str, object]:
    """Every file, folder and link under `root` with its content (SQLite side files excepted:
    a read may checkpoint or remove a WAL without changing the database's content)."""
    out: dict[str, object] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            rel = str(path.relative_to(root))
            if name.endswith(("-wal", "-shm", "-journal")):
                continue
            if name == "build.lock":  # holds the pid of the last command that took the lock
                out[rel] = "lock"
                continue
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_file():
                out[rel] = path.read_bytes() if not name.endswith(".db") else "sqlite"
            else:
                out[rel] = "dir"
    return out


def _one_error_line(proc: subprocess.CompletedProcess, *words: str) -> str:
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in lines[0], lines
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A built project `work/mem` with a branch `keep`, and `work/sibling.txt` beside it."""
    from synix_assets.app.run import run_build
    from synix_assets.app.branches import create_branch
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import demo_exports, init_project

    work = tmp_path_factory.mktemp("work")
    saved = os.environ.get("SYNIX_LLM_PROVIDER")
    os.environ["SYNIX_LLM_PROVIDER"] = "fake"
    try:
        paths = ProjectPaths(init_project(work / "mem", exports=demo_exports()[:3]))
        run_build(paths)
        create_branch(paths, "keep")
    finally:
        if saved is None:
            os.environ.pop("SYNIX_LLM_PROVIDER", None)
        else:
            os.environ["SYNIX_LLM_PROVIDER"] = saved
    (work / "sibling.txt").write_text("beside the project")
    state = paths.state_dir
    for part in ("synix.db", "search.db", "llm_cache.db", "dagster", "branches/keep/pipeline.py"):
        assert (state / part).exists(), part
    return paths


def _branch_names(paths) -> list[str]:
    return [b["name"] for b in json.loads(_synix("-p", str(paths.root), "branch", "list", "--json").stdout)]


@pytest.mark.parametrize("name", ["..", "", ".", "acme\n", "x/y", "../../sibling", "main@previous", "main",
                                  "keep\n"], ids=repr)
def test_branch_create_with_a_bad_name_exits_1_in_one_line_and_every_file_survives(built, name):
    before = tree(built.root.parent)
    proc = _synix("-p", str(built.root), "branch", "create", name)
    line = _one_error_line(proc)
    assert repr(name) in line  # named, escaped
    assert tree(built.root.parent) == before
    assert _branch_names(built) == ["main", "keep"]


@pytest.mark.parametrize("name", ["..", "", ".", "keep\n", "x/y"], ids=repr)
def test_branch_delete_and_switch_with_a_bad_name_exit_1_and_every_file_survives(built, name):
    before = tree(built.root.parent)
    for command in (("branch", "delete", name), ("branch", "switch", name), ("--branch", name, "status")):
        if command[0] == "--branch":
            proc = _synix(command[2], "-p", str(built.root), "--branch", name)
        else:
            proc = _synix("-p", str(built.root), *command)
        _one_error_line(proc, "invalid branch name")
    assert tree(built.root.parent) == before
    assert _branch_names(built) == ["main", "keep"]


@pytest.mark.parametrize("name", ["..", "", "."], ids=repr)
def test_pipeline_branch_with_a_bad_name_is_refused_before_any_file_is_touched(built, name):
    from synix_assets.pipeline.loader import load_pipeline
    from synix_resources.errors import InvalidBranchName

    before = tree(built.root.parent)
    pipeline = load_pipeline(built.pipeline_file, base_dir=built.root)
    with pytest.raises(InvalidBranchName, match="invalid branch name"):
        pipeline.branch(name)
    assert tree(built.root.parent) == before


def test_failed_branch_creates_remove_only_the_folder_they_made(built, tmp_path):
    """A broken pipeline file fails after the branch folder was made: that folder goes, nothing
    else. A folder already there for an unregistered name is refused and kept as it was."""
    work = built.root.parent
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('broken on purpose')\n")
    before = tree(work)
    _one_error_line(_synix("-p", str(built.root), "branch", "create", "fresh", "--pipeline", str(broken)),
                    "broken on purpose")
    assert tree(work) == before

    stale = built.branches_dir / "stale"
    stale.mkdir()
    (stale / "notes.txt").write_text("the user's")
    before = tree(work)
    _one_error_line(_synix("-p", str(built.root), "branch", "create", "stale"),
                    "exists but is not a registered branch")
    assert tree(work) == before
    assert _branch_names(built) == ["main", "keep"]


def test_deleting_a_branch_whose_folder_is_a_link_removes_the_link_not_what_it_points_at(built, tmp_path):
    from synix_assets.app.branches import create_branch

    create_branch(built, "linked")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("not the project's")
    folder = built.on_branch("linked").branch_dir
    (outside / "pipeline.py").write_bytes((folder / "pipeline.py").read_bytes())
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    folder.symlink_to(outside, target_is_directory=True)
    before = {k: v for k, v in tree(built.root.parent).items() if not k.startswith("mem/.synix/branches/linked")}
    proc = _synix("-p", str(built.root), "branch", "delete", "linked")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not os.path.lexists(folder)
    assert sorted(p.name for p in outside.iterdir()) == ["pipeline.py", "precious.txt"]
    assert tree(built.root.parent) == before
    assert _branch_names(built) == ["main", "keep"]


# --- tenants ------------------------------------------------------------------------------


def _tenants(home: Path) -> list[str]:
    return [t["tenant"] for t in json.loads(_synix("tenant", "list", "--home", str(home), "--json").stdout)]


def test_tenant_create_with_a_trailing_newline_is_refused_and_the_home_keeps_one_acme(tmp_path):
    home = tmp_path / "home"
    first = _synix("tenant", "create", "acme", "--home", str(home), "--json")
    assert first.returncode == 0, first.stderr
    (tmp_path / "sibling.txt").write_text("beside the home")
    before = tree(tmp_path)
    for name in ("acme\n", "..", "", ".", "acme/x", "../home"):
        _one_error_line(_synix("tenant", "create", name, "--home", str(home)), "tenant name", repr(name))
        _one_error_line(_synix("tenant", "delete", name, "--home", str(home), "--yes"), "tenant name")
    assert tree(tmp_path) == before
    assert _tenants(home) == ["acme"]
    dotenv = (home / "tenants" / "acme" / ".env").read_text().splitlines()
    assert f"DAGSTER_HOME={(home / 'tenants' / 'acme' / '.synix' / 'dagster').resolve()}" in dotenv


def test_a_failed_tenant_create_keeps_a_folder_that_was_there_and_anything_outside(tmp_path):
    home = tmp_path / "home"
    assert _synix("tenant", "create", "acme", "--home", str(home)).returncode == 0
    squatter = home / "tenants" / "squat"
    squatter.mkdir()
    (squatter / "mine.txt").write_text("not a tenant's")
    before = tree(tmp_path)
    _one_error_line(_synix("tenant", "create", "squat", "--home", str(home)), "not a registered tenant")
    assert tree(tmp_path) == before
    assert _tenants(home) == ["acme"]
