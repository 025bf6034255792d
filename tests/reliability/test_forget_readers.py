"""A process holding a read transaction on `search.db` keeps the old pages (with the forgotten
text) alive: forget waits for it at most SYNIX_FORGET_WAIT_S, then fails with one clear line and
stays pending — or, if the reader lets go in time, finishes the purge. Checked on raw bytes."""
from __future__ import annotations

import select
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from synix_assets.app.run import run_build
from synix_assets.cli.main import main
from synix_assets.forget import forget, pending_forget

MARKER = "Zqxjarvelmonk"
READER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN")
conn.execute("SELECT COUNT(*) FROM docs").fetchone()
print("reading", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
print("done", flush=True)
time.sleep(600)
"""


@pytest.fixture
def built(small_project, claude_export, make_conversations):
    paths = small_project(2)
    convs = make_conversations(2, prefix="private", months=("2025-01",), marker_at={0: MARKER})
    claude_export(paths.root / "exports" / "private.json", convs)
    run_build(paths)
    return paths


@pytest.fixture
def reader(built):
    """start(hold_s) → a real process holding a read transaction on search.db for hold_s."""
    started = []

    def start(hold_s: float) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", READER, str(built.search), str(hold_s)],
                                stdout=subprocess.PIPE, text=True)
        started.append(proc)
        assert proc.stdout.readline().strip() == "reading"
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait(timeout=30)


def _raw_index_bytes(paths) -> bytes:
    files = [paths.search, paths.search.with_name("search.db-wal")]
    return b"".join(f.read_bytes() for f in files if f.exists()).lower()


def test_a_reader_that_never_lets_go_makes_forget_fail_clearly_within_the_bound(
        built, reader, monkeypatch, files_containing):
    monkeypatch.setenv("SYNIX_FORGET_WAIT_S", "2")
    proc = reader(3600)
    started = time.monotonic()
    result = CliRunner().invoke(main, ["-p", str(built.root), "forget", "private-0"])
    assert time.monotonic() - started < 120
    assert result.exit_code != 0 and "Traceback" not in result.output
    message = " ".join(result.output.split())
    assert "search.db is held open by another process" in message
    assert "rerun `synix forget`" in message
    assert pending_forget(built) == "private-0"
    assert MARKER.lower().encode() in _raw_index_bytes(built)  # success would have been a lie
    proc.kill()
    proc.wait(timeout=30)
    report = forget(built, rebuild=run_build)  # no id: finish the pending one
    assert report.resumed and report.target == "private-0"
    assert MARKER.lower().encode() not in _raw_index_bytes(built)
    assert files_containing(built.root, MARKER) == []


def test_a_reader_that_finishes_within_the_bound_lets_forget_complete_the_purge(
        built, reader, monkeypatch, files_containing):
    """The reader opens its transaction as the purge starts (after the deletions) and holds it
    for 3 s: the purge waits for it instead of skipping the checkpoint."""
    import synix_assets.forget.phases as forget_phases

    monkeypatch.setenv("SYNIX_FORGET_WAIT_S", "120")
    real_purge, procs = forget_phases._phase_purge, []

    def purge_with_a_reader(*args):
        procs.append(reader(3))
        return real_purge(*args)

    monkeypatch.setattr(forget_phases, "_phase_purge", purge_with_a_reader)
    report = forget(built, "private-0", rebuild=run_build)
    assert report.rebuild_error is None and pending_forget(built) is None
    # the reader had already committed when forget returned: the purge waited for it
    assert select.select([procs[0].stdout], [], [], 0)[0]
    assert procs[0].stdout.readline().strip() == "done"
    assert MARKER.lower().encode() not in _raw_index_bytes(built)
    assert files_containing(built.root, MARKER) == []
