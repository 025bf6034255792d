"""Issue 40: `synix init` checks everything before it writes and never leaves a half-made
folder: a device or FIFO given to --from is refused at once (reading /dev/zero would never end),
the file system's root and a folder of other files are refused, and a failure while writing
removes what the call made."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from synix_assets.app import init as init_module
from synix_assets.app.init import init_project
from synix_resources.errors import SynixError

SYNIX = shutil.which("synix", path=str(Path(sys.executable).parent)) or "synix"
DEMO = Path(__file__).resolve().parents[2] / "synix_assets" / "demo" / "claude_demo.json"


def _synix(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNIX_", "ANTHROPIC_"))}
    env["NO_COLOR"] = "1"
    return subprocess.run([SYNIX, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def test_init_from_dev_zero_is_refused_at_once_and_leaves_no_folder(tmp_path):
    started = time.monotonic()
    line = _one_error_line(_synix("init", "mem", "--from", "/dev/zero", cwd=tmp_path))
    assert time.monotonic() - started < 30
    assert line.startswith("error: export /dev/zero is not a regular file or folder"), line
    assert not (tmp_path / "mem").exists()


def test_init_from_a_fifo_is_refused_without_opening_it_and_leaves_no_folder(tmp_path):
    fifo = tmp_path / "conversations.json"
    os.mkfifo(fifo)  # opening it would block until a writer came
    line = _one_error_line(_synix("init", "mem", "--from", str(fifo), cwd=tmp_path))
    assert f"export {fifo} is not a regular file or folder" in line
    assert not (tmp_path / "mem").exists()


def test_init_into_the_file_system_root_is_refused_and_writes_nothing_there(tmp_path):
    line = _one_error_line(_synix("init", "/", cwd=tmp_path))
    assert line.startswith("error: / is the file system's root, not a project folder"), line
    assert not Path("/pipeline.py").exists() and not Path("/definitions.py").exists()


def test_init_into_a_folder_of_other_files_is_refused_and_leaves_it_as_it_was(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "cat.jpg").write_bytes(b"\xff\xd8")
    line = _one_error_line(_synix("init", str(folder), "--from", str(DEMO), cwd=tmp_path))
    assert f"{folder} is not empty and is not a Synix project" in line
    assert sorted(os.listdir(folder)) == ["cat.jpg"]


def test_init_into_an_empty_folder_or_over_a_project_with_force_still_works(tmp_path):
    (tmp_path / "empty").mkdir()
    assert _synix("init", "empty", "--from", str(DEMO), cwd=tmp_path).returncode == 0
    assert (tmp_path / "empty" / "pipeline.py").is_file()
    assert _synix("init", "empty", "--force", cwd=tmp_path).returncode == 0


def _failing_copy(*args, **kwargs):
    raise OSError(5, "Input/output error")


def test_a_failure_while_writing_removes_the_folders_init_made(tmp_path, monkeypatch):
    monkeypatch.setattr(init_module.shutil, "copy2", _failing_copy)
    with pytest.raises(OSError):
        init_project(tmp_path / "a" / "b" / "mem", exports=[DEMO])
    assert not (tmp_path / "a").exists()  # the first folder of the chain it made, and all below


def test_a_failure_while_writing_into_an_empty_folder_leaves_it_empty(tmp_path, monkeypatch):
    (tmp_path / "mem").mkdir()
    monkeypatch.setattr(init_module.shutil, "copy2", _failing_copy)
    with pytest.raises(OSError):
        init_project(tmp_path / "mem", exports=[DEMO])
    assert (tmp_path / "mem").is_dir() and os.listdir(tmp_path / "mem") == []


def test_a_refusal_names_the_folder_before_anything_is_written(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("x")
    with pytest.raises(SynixError, match="is not empty and is not a Synix project"):
        init_project(folder)
    assert os.listdir(folder) == ["todo.txt"]
