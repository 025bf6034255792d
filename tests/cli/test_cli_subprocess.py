"""The installed `synix` executable in real subprocesses: no tracebacks, plain output in pipes."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SYNIX = shutil.which("synix", path=str(Path(sys.executable).parent)) or "synix"


def synix(*args, cwd: Path, env_extra: dict | None = None, timeout: float = 120):
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY", "SYNIX_PROJECT", "SYNIX_DEBUG")}
    env.update({"SYNIX_LLM_PROVIDER": "extractive", "NO_COLOR": "1", **(env_extra or {})})
    proc = subprocess.run([SYNIX, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    base = tmp_path_factory.mktemp("sub")
    init = synix("init", "mem", "--demo", cwd=base)
    assert init.returncode == 0, init.stderr
    return base / "mem"


def test_run_status_search(project):
    run = synix("run", cwd=project)
    assert run.returncode == 0, run.stderr
    assert "Build summary" in run.stdout and "episodes" in run.stdout
    assert "\x1b[" not in run.stdout and "━" not in run.stdout  # no colour, no bars in a pipe
    assert "BetaWarning" not in run.stderr

    status = synix("status", "--json", cwd=project)
    assert status.returncode == 0, status.stderr
    layers = json.loads(status.stdout)["layers"]
    assert {l: v["artifacts"] for l, v in layers.items()} == {"transcripts": 24, "episodes": 24, "monthly": 6, "core": 1}

    search = synix("search", "sourdough", "--json", cwd=project)
    assert search.returncode == 0, search.stderr
    hits = json.loads(search.stdout)["hits"]
    assert hits and hits[0]["provenance"] and hits[0]["sources"]

    again = synix("run", "--json", cwd=project)
    assert json.loads(again.stdout)["llm_calls"] == 0


def test_errors_exit_non_zero_with_one_line(tmp_path, project):
    nothing = synix("run", cwd=tmp_path)
    assert nothing.returncode == 1 and nothing.stderr.startswith("error: no pipeline.py")
    fresh = synix("init", "fresh", "--demo", cwd=tmp_path)
    assert fresh.returncode == 0
    early = synix("search", "marathon", cwd=tmp_path / "fresh")
    assert early.returncode == 1 and "synix run" in early.stderr
    keyless = synix("run", cwd=tmp_path / "fresh", env_extra={"SYNIX_LLM_PROVIDER": "anthropic"})
    assert keyless.returncode == 1 and "ANTHROPIC_API_KEY" in keyless.stderr


def test_help_is_fast_and_plain(tmp_path):
    proc = synix("--help", cwd=tmp_path, timeout=20)
    assert proc.returncode == 0 and "synix init mem --from conversations.json" in proc.stdout
