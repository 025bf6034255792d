"""Signals to a real `synix run` with a helper process beside it (synix_resources/process/helper.py):
its search index written in the background (engine/background_index.py), or the evidence
ledger fed in the background (app/ledger.py). Ctrl-C ends the build as always (exit 130, one
message) and the helper with it; kill -9 of the build takes the helper down too (the kernel's
parent-death signal); either way the next `synix run` finishes, the index is searchable and the
ledger holds every message, marked synthesised."""
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
REPO = Path(__file__).resolve().parents[2]
# helper → (its module, what turns it on for the demo project)
HELPERS = {
    # the demo's 55 partitions count as a large build
    "search index": ("synix_assets.engine.background_index_worker", {"SYNIX_BACKGROUND_INDEX_MIN": "1"}),
    # any unread export is much to read
    "ledger feed": ("synix_assets.app.ledger_worker", {"SYNIX_BACKGROUND_FEED_MIN_BYTES": "1"}),
}


@pytest.fixture(params=sorted(HELPERS))
def helper(request, demo_project):
    """The helper's module and environment; the ledger feed's project gets a larger export, so
    its feed (a few seconds) is still running when the signal comes."""
    if request.param == "ledger feed":
        sys.path.insert(0, str(REPO / "benchmarks"))
        try:
            from generate_exports import generate
        finally:
            sys.path.remove(str(REPO / "benchmarks"))
        generate(600, 12, 11, out_path=demo_project.root / "exports" / "more.json")
    return HELPERS[request.param]


def _env(helper, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNIX_FAKE", "SYNIX_BACKGROUND"))}
    env.update({"SYNIX_LLM_PROVIDER": "fake", **helper[1], **extra})
    return env


def _start_build(paths, helper, latency: float) -> subprocess.Popen:
    return subprocess.Popen([PY, "-m", "synix_assets.cli.main", "-p", str(paths.root), "run"],
                            env=_env(helper, SYNIX_FAKE_LATENCY_S=str(latency)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _background_of(pid: int, worker: str) -> int | None:
    """The pid of the helper process `worker` the build `pid` started, if it runs."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            ppid = next(int(line.split()[1]) for line in (entry / "status").read_text().splitlines()
                        if line.startswith("PPid:"))
        except (OSError, StopIteration, ValueError):
            continue  # ended meanwhile
        if ppid == pid and worker.encode() in cmdline:
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


def _wait_for_background(proc, worker: str) -> int:
    deadline = time.monotonic() + 180
    while True:
        assert proc.poll() is None, f"the build ended before its background started: {proc.communicate()}"
        assert time.monotonic() < deadline, "timed out waiting for the background process"
        child = _background_of(proc.pid, worker)
        if child is not None:
            return child
        time.sleep(0.05)


def _finish_and_search(paths, helper) -> None:
    from synix_assets.app.ledger import open_ledger, sync_evidence
    from synix_assets.sources.evidence import unsynthesised

    again = subprocess.run([PY, "-m", "synix_assets.cli.main", "-p", str(paths.root), "run", "--json"],
                           env=_env(helper), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "completed"
    index = SearchIndex(paths.search, embeddings=False)
    try:
        assert index.search("marathon", limit=5)
    finally:
        index.close()
    with open_ledger(paths) as ledger:
        assert ledger.count() > 0 and unsynthesised(ledger) == 0
    assert sync_evidence(paths).appended == 0  # every message was fed


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_ends_the_build_and_its_helper_process(demo_project, helper):
    proc = _start_build(demo_project, helper, latency=0.5)
    child = _wait_for_background(proc, helper[0])
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, (out, err)
    assert "interrupted — rerun `synix run` to resume" in err
    assert "Traceback" not in out + err
    assert _gone(child), "the helper process outlived its build"
    _finish_and_search(demo_project, helper)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_the_build_takes_its_helper_process_down(demo_project, helper):
    proc = _start_build(demo_project, helper, latency=0.5)
    child = _wait_for_background(proc, helper[0])
    proc.kill()
    proc.communicate(timeout=60)
    assert _gone(child), "the helper process outlived its killed build"
    _finish_and_search(demo_project, helper)
