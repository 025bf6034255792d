"""A build spread over three Celery workers (PostgreSQL store and Dagster storage, Redis broker,
Dagster's webserver/daemon/code server — scripts/scale_demo.py's deployment), one of them killed with
SIGKILL mid-build: its step is taken over by another worker, nothing is lost or built twice, and
the artifacts equal those of a single-machine build, and Dagster records every partition as
materialized (also those the killed worker stored before its step could record them)."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import scale_demo  # noqa: E402
from synix_assets.project import ProjectPaths  # noqa: E402
from synix_assets.web.process_tree import stop_group  # noqa: E402

CONVERSATIONS = 60
PER_RUN = 10
BUILD_TIMEOUT_S = 600


def _current(paths: ProjectPaths, layer: str) -> dict[str, str]:
    """group key → artifact id of the layer's current artifacts."""
    store = paths.open_store()
    try:
        return {k: ref.artifact_id for k, ref in store.current_index(layer).items()}
    finally:
        store.close()


def _settled(paths: ProjectPaths, layer: str, quiet_s: float = 8.0, limit_s: float = 120) -> dict[str, str]:
    """The layer's current artifacts once none was added for `quiet_s`: a step that was running
    when its run was terminated finishes its Celery task (revoked tasks are not killed)."""
    deadline = time.monotonic() + limit_s
    seen, since = _current(paths, layer), time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, f"{layer} kept changing for {limit_s}s"
        time.sleep(1)
        now = _current(paths, layer)
        if now != seen:
            seen, since = now, time.monotonic()
    return seen


def _episodes_by(paths: ProjectPaths, worker: str) -> set[str]:
    store = paths.open_store()
    try:
        return {a.group_key for a in store.list_layer("episodes")
                if (a.audit or {}).get("worker") == worker}
    finally:
        store.close()


def _partition_keys(paths: ProjectPaths):
    """group key → the partition key Dagster shows (a conversation's readable name)."""
    store = paths.open_store()
    try:
        names = store.partition_names()
    finally:
        store.close()
    return lambda key: names.get(key, key)


def _materialized_partitions(paths: ProjectPaths, layers: list[str]) -> dict[str, set[str]]:
    """layer → the partitions Dagster's instance (the deployment's PostgreSQL storage) records as
    materialized: what the UI shows as built."""
    import dagster as dg

    from synix_assets.dagster_defs.graph import MAIN_NAMES

    instance = dg.DagsterInstance.from_config(str(paths.dagster_home))
    try:
        return {layer: set(instance.get_materialized_partitions(MAIN_NAMES.layer(layer)))
                for layer in layers}
    finally:
        instance.dispose()


def _latest_check(paths: ProjectPaths, layer: str):
    """(run id, evaluation) of the layer's latest `synix_up_to_date` check evaluation."""
    import dagster as dg

    from synix_assets.dagster_defs.graph import MAIN_NAMES

    instance = dg.DagsterInstance.from_config(str(paths.dagster_home))
    try:
        records = instance.get_event_records(
            dg.EventRecordsFilter(event_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION),
            limit=200, ascending=False)
        for record in records:
            evaluation = record.event_log_entry.dagster_event.event_specific_data
            if evaluation.asset_key == MAIN_NAMES.layer(layer):
                return record.event_log_entry.run_id, evaluation
        return None, None
    finally:
        instance.dispose()


def _celery_workers_of_runs(paths: ProjectPaths, job: str) -> dict[str, list[str]]:
    """run id → the Celery workers that started its step, in order (Dagster's engine events)."""
    import dagster as dg

    instance = dg.DagsterInstance.from_config(str(paths.dagster_home))
    try:
        out = {}
        for record in instance.get_run_records(filters=dg.RunsFilter(job_name=job)):
            run_id = record.dagster_run.run_id
            out[run_id] = [e.dagster_event.event_specific_data.metadata["Celery worker"].value
                           for e in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)
                           if "Celery worker" in (e.dagster_event.event_specific_data.metadata or {})]
        return out
    finally:
        instance.dispose()


@pytest.mark.slow
def test_three_workers_build_and_a_killed_workers_step_is_finished_elsewhere(tmp_path):
    export = scale_demo.generate_exports(tmp_path / "conversations.json", CONVERSATIONS, months=6)
    # one request in flight per worker, so every chunk of 10 takes seconds: the kill lands mid-step
    # synix run gives up on a layer's runs before this test does, so a stuck build fails with
    # synix run's own message; the workers log every task they receive (the diagnostics)
    dep = scale_demo.Deployment(tmp_path / "deploy", 3, export, latency_s=0.3, concurrency=1,
                                max_requests_per_s=20, partitions_per_run=PER_RUN,
                                visibility_timeout_s=15, run_timeout_s=BUILD_TIMEOUT_S - 120,
                                worker_loglevel="INFO")
    dep.base.mkdir()
    try:
        dep.start()
        started = time.monotonic()
        build = dep.build()
        try:
            victim_done = set()
            deadline = time.monotonic() + BUILD_TIMEOUT_S
            while not victim_done and time.monotonic() < deadline and build.poll() is None:
                time.sleep(0.2)
                victim_done = _episodes_by(dep.project, "w2")
            assert victim_done, "w2 never built an episode"
            dep.kill_worker("w2")  # mid-step: its chunk has more episodes to go
            killed_at = set(victim_done)
            build.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            stop_group(build)
            raise AssertionError(f"the build did not end in {BUILD_TIMEOUT_S}s\n{dep.diagnostics()}") from None
        wall = time.monotonic() - started
        assert build.returncode == 0, dep.diagnostics()
        report = dep.report()
        assert report["status"] == "completed"

        reference = scale_demo.artifacts(ProjectPaths(scale_demo.single_machine_build(tmp_path, export)))
        result = scale_demo.summary(dep, wall, reference)
        assert result["artifacts_match_single_machine"] is True
        assert result["artifacts"]["episodes"] == CONVERSATIONS
        assert result["duplicate_artifacts"] == 0  # nothing built twice
        assert result["workers_used"] == 3
        assert result["max_requests_per_s"] <= 20
        # the dead worker built nothing after the kill; the others built the rest
        assert _episodes_by(dep.project, "w2") == killed_at
        assert sum(result["partitions_by_worker"].values()) >= CONVERSATIONS

        # Dagster shows every stored partition as materialized, also those the killed worker
        # stored before its step could record them (the retried step records them)
        partitioned = ["transcripts", "episodes", "monthly"]
        materialized = _materialized_partitions(dep.project, partitioned)
        shown = _partition_keys(dep.project)
        for layer in partitioned:
            assert materialized[layer] == {shown(k) for k in reference["current"][layer]}, layer
        assert {shown(k) for k in killed_at} <= materialized["episodes"]
        # each chunk checked only its own partitions; the coordinator reported the layer's check
        # once, after its last chunk (a runless evaluation): every episode current
        run_id, check = _latest_check(dep.project, "episodes")
        assert run_id == "" and check.passed, check
        assert check.metadata["cached"].value == CONVERSATIONS and check.metadata["stale"].value == 0

        # Dagster's record: one episodes run's step started on w2, then again on another worker
        starts = _celery_workers_of_runs(dep.project, "synix_build_episodes")
        taken_over = [w for w in starts.values() if len(w) >= 2 and w[0].startswith("w2@")]
        assert taken_over and not taken_over[0][-1].startswith("w2@"), starts
    finally:
        dep.stop()


@pytest.mark.slow
def test_ctrl_c_of_a_distributed_synix_run_exits_130_in_one_line_and_a_rerun_resumes(tmp_path):
    conversations = 30
    export = scale_demo.generate_exports(tmp_path / "conversations.json", conversations, months=3)
    dep = scale_demo.Deployment(tmp_path / "deploy", 1, export, latency_s=0.3, concurrency=1,
                                max_requests_per_s=20, partitions_per_run=PER_RUN,
                                visibility_timeout_s=15)
    dep.base.mkdir()
    try:
        dep.start()
        build = dep.build()
        try:
            deadline = time.monotonic() + BUILD_TIMEOUT_S
            while not _current(dep.project, "episodes") and build.poll() is None:
                assert time.monotonic() < deadline, "no episode was stored"
                time.sleep(0.2)
            build.send_signal(signal.SIGINT)  # what Ctrl-C in its terminal sends
            build.wait(timeout=120)
        except subprocess.TimeoutExpired:
            stop_group(build)
            raise
        err = (dep.base / "synix-run.err").read_text(errors="replace").strip()
        assert build.returncode == 130, err
        assert "Traceback" not in err
        assert err.splitlines()[-1] == "interrupted — rerun `synix run` to resume"
        assert dep.report()["status"] == "interrupted"
        stored = _settled(dep.project, "episodes")
        assert 1 <= len(stored) < conversations

        rerun = dep.build()
        try:
            rerun.wait(timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            stop_group(rerun)
            raise
        assert rerun.returncode == 0, (dep.base / "synix-run.err").read_text(errors="replace")[-3000:]
        report = dep.report()
        assert report["status"] == "completed"
        # only what was left is built; what the interrupted build stored is kept as it was
        assert report["layers"]["episodes"]["built"] == conversations - len(stored)
        after = _current(dep.project, "episodes")
        assert len(after) == conversations
        assert {k: after[k] for k in stored} == stored
        rows = scale_demo.artifacts(dep.project)["rows"]
        assert rows["episodes"] == conversations and rows["transcripts"] == conversations
    finally:
        dep.stop()
