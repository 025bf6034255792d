"""Ending the Dagster runs a Synix run leaves open, and settling runs whose process died.

An in-process Dagster run ends by itself when its step fails or is interrupted. A process killed
with SIGKILL (or a machine that went down) leaves its Synix run "running" and its Dagster run
STARTED for good; the next `synix run` or `synix runs` notices the owner process is gone (pid and
start time are recorded with the run) and marks both as interrupted / failed.
"""
from __future__ import annotations

KILLED = "the process building it (pid {pid}) ended before the run finished"


def close_open_runs(instance, synix_run_id: str, dagster_run_id: str | None = None, *,
                    message: str, failed: bool) -> list[str]:
    """Report every not-yet-finished Dagster run of this Synix run as failed (or canceled);
    returns their ids."""
    import dagster as dg

    from synix_assets.dagster_defs.assets import RUN_ID_TAG

    unfinished = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.QUEUED,
                  dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
                  dg.DagsterRunStatus.CANCELING]
    runs = list(instance.get_runs(filters=dg.RunsFilter(tags={RUN_ID_TAG: synix_run_id},
                                                        statuses=unfinished)))
    if dagster_run_id and dagster_run_id not in {r.run_id for r in runs}:
        runs += instance.get_runs(filters=dg.RunsFilter(run_ids=[dagster_run_id], statuses=unfinished))
    for run in runs:
        if failed:
            instance.report_run_failed(run, message=message)
        else:
            instance.report_run_canceled(run, message=message)
    return [r.run_id for r in runs]


def settle_abandoned_runs(paths, store) -> list[str]:
    """Mark runs whose process has ended without finishing them as interrupted, here and in
    Dagster; returns their Synix run ids. Loads Dagster only when there is one."""
    abandoned = store.abandoned_runs()
    for run in abandoned:
        pid = (run.stats.get("owner") or {}).get("pid")
        store.finish_run(run.run_id, "interrupted", {"error": KILLED.format(pid=pid)})
    if abandoned:
        from synix_assets.engine.runner import dagster_instance

        instance = dagster_instance(paths)
        for run in abandoned:
            pid = (run.stats.get("owner") or {}).get("pid")
            close_open_runs(instance, run.run_id, run.dagster_run_id,
                            message=f"Synix: {KILLED.format(pid=pid)}", failed=True)
    return [r.run_id for r in abandoned]
