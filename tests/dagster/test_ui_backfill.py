""""Materialize all" on the memory group, every partition (the UI's `launchPartitionBackfill`),
under a real `dagster dev`: the backfill builds what `synix run` builds on a copy of the same
project — the same artifacts, the same layer runs — and completes without a daemon loop per
layer (benchmarks/bench_ui_backfill.py times it beside `synix run`)."""
from __future__ import annotations

import subprocess
import time

import pytest

from synix_assets.app.init import demo_exports, init_project
from synix_assets.dagster_defs.vocabulary import EXPORTS_SENSOR
from synix_resources.store.artifact_store import ArtifactStore
from tests.dagster.live import BIN, DagsterDev, clean_env, edit_episode_prompt, plan_stale, synix

pytestmark = pytest.mark.timeout(900)
GROUP = ["transcripts", "episodes", "monthly", "core", "memory_index", "synix_context"]


def _current(root) -> dict:
    with ArtifactStore(root / ".synix" / "synix.db") as store:
        return {layer: {k: r.artifact_id for k, r in store.current_index(layer).items()}
                for layer in ("transcripts", "episodes", "monthly", "core")}


def _cli_jobs(root) -> list[str]:
    """The Dagster jobs the last `synix run` launched."""
    import dagster as dg

    from synix_assets.dagster_defs.instance import dagster_instance
    from synix_assets.project import ProjectPaths

    with ArtifactStore(root / ".synix" / "synix.db") as store:
        run = store.list_runs(limit=1)[0]
    with dagster_instance(ProjectPaths(root)) as instance:
        runs = instance.get_runs(dg.RunsFilter(tags={"synix/run_id": run.run_id}))
    return sorted(r.job_name for r in runs)


def test_a_ui_backfill_of_the_whole_memory_builds_what_synix_run_builds_in_one_daemon_loop(tmp_path):
    roots = [init_project(tmp_path / name, exports=demo_exports()) for name in ("cli", "ui")]
    for root in roots:
        assert synix(root, "run").returncode == 0
        edit_episode_prompt(root)
    cli, ui = roots
    assert synix(cli, "run").returncode == 0
    stop = subprocess.run([str(BIN / "dagster"), "sensor", "stop", EXPORTS_SENSOR], cwd=ui, env=clean_env(),
                          capture_output=True, text=True, timeout=300)
    assert stop.returncode == 0, stop.stderr[-2000:]  # only the backfill builds
    dev = DagsterDev(ui).wait_serving()
    try:
        backfill_id = dev.launch_backfill(GROUP, dev.partition_keys("transcripts"))
        deadline = time.monotonic() + 300
        while (b := dev.backfill(backfill_id))["status"] == "REQUESTED" and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        dev.stop()
    assert b["status"] == "COMPLETED_SUCCESS", (b, dev.output()[-3000:])
    assert all(r["status"] == "SUCCESS" for r in b["runs"]), b["runs"]
    # the backfill's own run (transcripts and episodes: one partitioning, one range run), then
    # the layer runs `synix run` launches, carrying the backfill's tag; nothing launched per layer
    # by the daemon after it
    jobs = sorted(r["jobName"] for r in b["runs"])
    assert jobs == sorted(["__ASSET_JOB", *_cli_jobs(cli)]), jobs
    assert _current(ui) == _current(cli)
    assert set(plan_stale(ui).values()) == {0}
    # the same document but for the line saying when it was written
    assert (ui / "context.md").read_text().rsplit("<!--", 1)[0] == (cli / "context.md").read_text().rsplit("<!--", 1)[0]
