"""A run whose process is gone (kill -9, power loss) is told from one still going by the owner
recorded with it: pid, host and the process's start time (a reused pid does not fool it).
Contract tests: every store backend (tests/store/conftest.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from synix_resources.store.artifact_store import ArtifactStore


def _set_owner(store, run_id: str, owner: dict) -> None:
    """Rewrite the recorded owner behind the store's back (as another process's row would be)."""
    with store._write("test") as conn:
        stats = json.loads(conn.execute("SELECT stats FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0])
        stats["owner"] = owner
        conn.execute("UPDATE runs SET stats = ? WHERE run_id = ?", (json.dumps(stats), run_id))


def test_a_run_started_by_a_process_that_died_is_abandoned_and_ours_is_not(store_location):
    path = store_location
    store = ArtifactStore(path)
    mine = store.start_run("p", ["episodes"])
    script = textwrap.dedent(f"""
        from synix_resources.store.artifact_store import ArtifactStore
        ArtifactStore({str(path)!r}).start_run("p", ["episodes"], run_id="dead")
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert store.get_run("dead").owner["pid"] != os.getpid()
    assert [r.run_id for r in store.abandoned_runs()] == ["dead"]
    assert store.get_run(mine).owner["pid"] == os.getpid()
    store.finish_run("dead", "interrupted", {"error": "gone"})
    assert store.abandoned_runs() == []
    assert store.get_run("dead").status == "interrupted"
    store.close()


def test_a_reused_pid_or_an_unknown_owner_is_judged_correctly(store_location):
    store = ArtifactStore(store_location)
    reused = store.start_run("p", ["episodes"])
    owner = store.get_run(reused).owner
    _set_owner(store, reused, {**owner, "start": owner["start"] - 1})  # same pid, older process
    other_host = store.start_run("p", ["episodes"])
    _set_owner(store, other_host, {**owner, "host": "elsewhere", "pid": 999_999_999})
    unknown = store.start_run("p", ["episodes"])
    _set_owner(store, unknown, None)
    assert [r.run_id for r in store.abandoned_runs()] == [reused]
    # a known run id started again keeps its stats and gets the new owner
    store.record_layer_stats(reused, "episodes", {"built": 3})
    store.start_run("p", ["episodes"], run_id=reused)
    again = store.get_run(reused)
    assert again.stats == {"layers": {"episodes": {"built": 3}}} and again.owner == owner
    store.close()
