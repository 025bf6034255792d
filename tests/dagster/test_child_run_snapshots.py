"""The runs `synix run` launches carry the job snapshots of the definitions the UI loads, so
"Re-execute" on one of them does not warn that the loaded version may differ (the UI compares
the run's snapshot id, or its parent's for a subset, with the loaded job's)."""
from __future__ import annotations

from synix_assets.app.run import run_build
from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance


def test_the_layer_runs_of_synix_run_have_the_job_snapshots_the_ui_loads(demo_project):
    run_build(demo_project)
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)  # what the code server loads for the UI
    runs = [r for r in instance.get_runs() if r.job_name.startswith("synix_")]
    assert {"synix_build_transcripts", "synix_build_episodes", "synix_build_monthly",
            "synix_update_projections"} <= {r.job_name for r in runs}
    for run in runs:
        loaded = defs.resolve_job_def(run.job_name).get_job_snapshot_id()
        lineage = instance.get_job_snapshot(run.job_snapshot_id).lineage_snapshot  # a subset's parent
        assert (lineage.parent_snapshot_id if lineage else run.job_snapshot_id) == loaded, run.job_name
