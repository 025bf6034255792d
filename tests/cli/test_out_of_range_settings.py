"""Issue 40: a setting outside its range stops the command at once with one line naming the
variable, its value and the range (exit 1), never a thread storm or an internal error (exit 70).
Real `synix` processes: how long they take and their exit codes are the behaviour."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

SYNIX = shutil.which("synix", path=str(Path(sys.executable).parent)) or "synix"


def _synix(*args, cwd: Path, **env_extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNIX_", "ANTHROPIC_"))}
    env.update({"NO_COLOR": "1", "SYNIX_LLM_PROVIDER": "fake", **env_extra})
    return subprocess.run([SYNIX, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("ranges")
    assert _synix("init", "mem", "--demo", cwd=base).returncode == 0
    return base / "mem"


@pytest.mark.parametrize("name, value, accepted", [
    ("SYNIX_LLM_CONCURRENCY", "1000000", "1 to 256"),
    ("SYNIX_FAKE_FAILURE_RATE", "2", "0 to 1"),
    ("SYNIX_FAKE_FAILURE_RATE", "inf", "0 to 1"),
])
def test_run_with_a_setting_out_of_range_exits_1_at_once_with_one_line(project, name, value, accepted):
    started = time.monotonic()
    proc = _synix("run", cwd=project, **{name: value})
    assert time.monotonic() - started < 60
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith(f"error: {name}='{value}' is out of range (accepted: {accepted})"), lines
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
