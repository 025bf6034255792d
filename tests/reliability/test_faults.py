"""Faults: kill -9 mid-layer, injected provider errors, a partition that always fails, two builds
at once, and a store that cannot be written."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from synix_assets.app.run import run_build
from synix_resources.errors import BuildFailed, StoreError
from synix_resources.store.artifact_store import ArtifactStore

PY = sys.executable
N_KILL = 12  # conversations in the kill test


def _build_script(root, llm_config: dict | None = None) -> str:
    return textwrap.dedent(f"""
        from synix_assets.app.run import run_build
        from synix_assets.project import ProjectPaths
        r = run_build(ProjectPaths(__import__("pathlib").Path({str(root)!r})),
                      llm_config={llm_config!r})
        print("REPORT", __import__("json").dumps(r.to_json()))
    """)


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNIX_FAKE")}
    env.update({"SYNIX_LLM_PROVIDER": "fake", **extra})
    return env


def _episode_responses(cache_path) -> int:
    if not cache_path.exists():
        return 0
    conn = sqlite3.connect(str(cache_path), timeout=5)
    try:
        return conn.execute("SELECT COUNT(*) FROM responses WHERE label LIKE 'episodes/%'").fetchone()[0]
    except sqlite3.OperationalError:  # table not created yet
        return 0
    finally:
        conn.close()


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """A build SIGKILLed while its episodes layer is half done, and the numbers seen at the kill."""
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import init_project

    paths = ProjectPaths(init_project(tmp_path_factory.mktemp("kill") / "mem"))
    (paths.root / "exports" / "talks.json").write_text(json.dumps([
        {"uuid": f"k-{i}", "name": f"Talk {i}", "created_at": f"2025-0{1 + i % 2}-{10 + i}T10:00:00Z",
         "updated_at": f"2025-0{1 + i % 2}-{10 + i}T10:01:00Z",
         "chat_messages": [{"uuid": f"k-{i}-m{j}", "sender": s, "text": f"subject{i} message {j}",
                            "created_at": f"2025-0{1 + i % 2}-{10 + i}T10:0{j}:00Z",
                            "content": [{"type": "text", "text": f"subject{i} message {j}"}]}
                           for j, s in enumerate(("human", "assistant"))]}
        for i in range(N_KILL)]))
    # One call at a time, slow enough that the episodes are still going once Dagster has loaded
    # (the work graph starts before it) and is recording the build's first runs.
    proc = subprocess.Popen([PY, "-c", _build_script(paths.root, {"concurrency": 1})],
                            env=_env(SYNIX_FAKE_LATENCY_S="0.8"), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    event_log = paths.dagster_home / "event_log.db"
    while _episode_responses(paths.llm_cache) < 4 or not event_log.exists():
        assert proc.poll() is None, "the build ended before it could be killed"
        assert time.monotonic() < deadline, "the episodes layer never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    answered = _episode_responses(paths.llm_cache)
    store = ArtifactStore(paths.store)
    stored = len(store.current_index("episodes"))
    store.close()
    return paths, answered, stored


@pytest.fixture(scope="module")
def rerun(killed):
    """The build after the kill (run once, in-process, on the killed project)."""
    paths = killed[0]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SYNIX_LLM_PROVIDER", "fake")
        mp.delenv("SYNIX_FAKE_LATENCY_S", raising=False)
        return run_build(paths)


def test_kill_leaves_every_sqlite_file_intact_and_nothing_half_written(killed, integrity,
                                                                       consistency_problems):
    paths, answered, stored = killed
    assert 4 <= answered < N_KILL
    checks = integrity(paths.state_dir)
    assert {"synix.db", "llm_cache.db"} <= set(checks)
    assert any(name.startswith("dagster/") for name in checks)  # run and event storage
    assert set(checks.values()) == {"ok"}
    assert consistency_problems(paths.store) == []


def test_rerun_after_kill_finishes_the_layer(killed, rerun, integrity):
    paths, answered, stored = killed
    report = rerun
    episodes = report.layers["episodes"]
    assert episodes["built"] + episodes.get("cached", 0) == N_KILL
    assert episodes["built"] == N_KILL - stored
    store = ArtifactStore(paths.store)
    try:
        assert len(store.current_index("episodes")) == N_KILL
        assert store.current("core", "all") is not None
    finally:
        store.close()
    assert set(integrity(paths.state_dir).values()) == {"ok"}


def test_rerun_after_kill_leaves_dagster_recording_every_partition_the_store_holds(killed, rerun):
    import dagster as dg

    from synix_assets.dagster_defs.instance import dagster_instance
    from synix_assets.dagster_defs.partitions import partition_keys

    paths = killed[0]
    pipeline = paths.load_pipeline()
    store = ArtifactStore(paths.store)
    try:  # as Dagster names the partitions: the conversations' readable keys
        keys = {layer: set(partition_keys(store, pipeline, layer, store.current_index(layer)))
                for layer in ("transcripts", "episodes")}
    finally:
        store.close()
    with dagster_instance(paths) as instance:
        for layer, current in keys.items():
            assert instance.get_materialized_partitions(dg.AssetKey([layer])) == current


def test_rerun_after_kill_pays_only_for_unanswered_calls(killed, rerun):
    paths, answered, stored = killed
    # "answered" = responses received (and cached) before the kill: those must not be paid again
    assert rerun.layers["episodes"]["llm_calls"] == N_KILL - answered
    assert stored > 0  # finished episodes survived the kill


def test_injected_transient_failures_are_retried_and_audited(small_project, monkeypatch):
    paths = small_project(6)
    monkeypatch.setenv("SYNIX_FAKE_FAILURE_RATE", "0.3")
    # 1 ms backoff instead of seconds: the retry policy is what is tested, not the clock
    monkeypatch.setattr("synix_resources.llm.retry.RetryPolicy.base_delay_s", 0.001)
    report = run_build(paths)
    assert report.failures == []
    assert report.layers["episodes"]["built"] == 6
    store = ArtifactStore(paths.store)
    try:
        attempts = [store.audit(a.artifact_id)["attempts"]
                    for layer in ("episodes", "monthly") for a in store.list_layer(layer)]
    finally:
        store.close()
    assert max(attempts) > 1 and min(attempts) >= 1


def test_one_always_failing_partition(small_project, current_counts):
    paths = small_project(4, marker_at={1: "SYNIX_FAIL_400"})  # conv-1 is in February
    with pytest.raises(BuildFailed) as info:
        run_build(paths)
    report = info.value.report
    assert [(f["layer"], f["group_key"]) for f in report.failures] == [("episodes", "conv-1")]
    assert "400" in report.failures[0]["error"]
    assert report.layers["episodes"]["built"] == 3 and report.layers["episodes"]["failed"] == 1
    store = ArtifactStore(paths.store)
    try:
        assert store.current("episodes", "conv-1") is None
        # built from conv-3, the episode there is; conv-1 is its gap (design §10.2)
        assert store.current("monthly", "2025-02").metadata["meta.chat.conversation_count"] == 1
        assert store.current("monthly", "2025-01") is not None
    finally:
        store.close()
    # the CLI reports it and exits non-zero
    cli = subprocess.run([PY, "-m", "synix_assets.cli.main", "-p", str(paths.root), "run"],
                         env=_env(), capture_output=True, text=True, timeout=120)
    assert cli.returncode != 0
    assert "conv-1" in cli.stdout + cli.stderr
    # fix the input: the next run builds exactly that episode, its month and core
    export = paths.root / "exports" / "talks.json"
    export.write_text(export.read_text().replace("SYNIX_FAIL_400", "fixed"))
    again = run_build(paths)
    built = {k: v["built"] for k, v in again.layers.items()}
    assert built == {"transcripts": 1, "episodes": 1, "monthly": 1, "core": 1}
    assert again.failures == []


def test_two_builds_at_once_serialise_without_duplicates(small_project, integrity,
                                                         consistency_problems, current_counts):
    paths = small_project(4)
    procs = [subprocess.Popen([PY, "-c", _build_script(paths.root)], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _, e in outs]
    assert not any("database is locked" in e for _, e in outs)
    reports = [json.loads(o.split("REPORT ", 1)[1]) for o, _ in outs]
    # one of them built everything, the other found it done (the build lock serialises them)
    assert sorted(r["layers"].get("episodes", {}).get("built", 0) for r in reports) == [0, 4]
    assert consistency_problems(paths.store) == []
    assert current_counts(paths.store) == {"transcripts": 4, "episodes": 4, "monthly": 2, "core": 1}
    assert set(integrity(paths.state_dir).values()) == {"ok"}


def _store_with_one_artifact(tmp_path):
    store = ArtifactStore(tmp_path / "synix.db")
    store.put(layer="transcripts", group_key="a", content="kept", materialization_key="k1")
    return store


def test_full_disk_is_a_clean_one_line_store_error(tmp_path, integrity):
    store = _store_with_one_artifact(tmp_path)
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {pages}")  # the file may not grow: "disk full"
    with pytest.raises(StoreError) as info:
        store.put(layer="transcripts", group_key="b", content="x" * 200_000, materialization_key="k2")
    assert "disk is full" in info.value.one_line() and "\n" not in info.value.one_line()
    assert store.current("transcripts", "a").content == "kept"
    assert store.current("transcripts", "b") is None
    store.close()
    assert set(integrity(tmp_path).values()) == {"ok"}


def test_read_only_store_is_a_clean_one_line_store_error(tmp_path, integrity):
    store = _store_with_one_artifact(tmp_path)
    store.db.execute("PRAGMA query_only = ON")  # root ignores chmod; SQLite itself refuses writes
    with pytest.raises(StoreError) as info:
        store.put(layer="transcripts", group_key="b", content="new", materialization_key="k2")
    assert "read-only" in info.value.one_line() and "\n" not in info.value.one_line()
    assert store.current("transcripts", "b") is None
    store.close()
    assert set(integrity(tmp_path).values()) == {"ok"}
