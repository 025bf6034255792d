"""Signals to a real `synix run` whose search index is written in its background process
(engine/background_index.py): Ctrl-C ends the build as always (exit 130, one message) and the
process with it; kill -9 of the build takes the process down too (the kernel's parent-death
signal); either way the next `synix run` finishes and the index is searchable."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from synix_resources.search.index import SearchIndex

PY = sys.executable
WORKER = "synix_assets.engine.background_index_worker"


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNIX_FAKE")}
    # the demo's 55 partitions count as a large build
    env.update({"SYNIX_LLM_PROVIDER": "fake", "SYNIX_BACKGROUND_INDEX_MIN": "1", **extra})
    return env


def _start_build(paths, latency: float) -> subprocess.Popen:
    return subprocess.Popen([PY, "-m", "synix_assets.cli.main", "-p", str(paths.root), "run"],
                            env=_env(SYNIX_FAKE_LATENCY_S=str(latency)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _background_of(pid: int) -> int | None:
    """The pid of the background index process the build `pid` started, if it runs."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            ppid = next(int(line.split()[1]) for line in (entry / "status").read_text().splitlines()
                        if line.startswith("PPid:"))
        except (OSError, StopIteration, ValueError):
            continue  # ended meanwhile
        if ppid == pid and WORKER.encode() in cmdline:
            return int(entry.name)
    return None


def _gone(pid: int, limit_s: float = 10) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                         if line.startswith("State:"))
        except (OSError, StopIteration):
            return True
        if "Z" in state.split()[1]:  # ended, waiting to be reaped by whoever adopted it
            return True
        time.sleep(0.05)
    return False


def _wait_for_background(proc) -> int:
    deadline = time.monotonic() + 180
    while True:
        assert proc.poll() is None, f"the build ended before its background started: {proc.communicate()}"
        assert time.monotonic() < deadline, "timed out waiting for the background process"
        child = _background_of(proc.pid)
        if child is not None:
            return child
        time.sleep(0.05)


def _finish_and_search(paths) -> None:
    again = subprocess.run([PY, "-m", "synix_assets.cli.main", "-p", str(paths.root), "run", "--json"],
                           env=_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "completed"
    index = SearchIndex(paths.search, embeddings=False)
    try:
        assert index.search("marathon", limit=5)
    finally:
        index.close()


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_ends_the_build_and_its_background_index_process(demo_project):
    proc = _start_build(demo_project, latency=0.5)
    child = _wait_for_background(proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, (out, err)
    assert "interrupted — rerun `synix run` to resume" in err
    assert "Traceback" not in out + err
    assert _gone(child), "the background index process outlived its build"
    _finish_and_search(demo_project)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_the_build_takes_its_background_index_process_down(demo_project):
    proc = _start_build(demo_project, latency=0.5)
    child = _wait_for_background(proc)
    proc.kill()
    proc.communicate(timeout=60)
    assert _gone(child), "the background index process outlived its killed build"
    _finish_and_search(demo_project)
