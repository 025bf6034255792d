"""Ending the Dagster runs a Synix run leaves open, and settling runs whose process died.

An in-process Dagster run ends by itself when its step fails or is interrupted. A process killed
with SIGKILL (or a machine that went down) leaves its Synix run "running" and its Dagster run
STARTED for good; the next `synix run` or `synix runs` notices the owner process is gone (pid and
start time are recorded with the run) and marks both as interrupted / failed.
"""
from __future__ import annotations

from synix_assets.dagster_defs.vocabulary import OUTCOME_TAG, RUN_ID_TAG

KILLED = "the process building it (pid {pid}) ended before the run finished"


def close_open_runs(instance, synix_run_id: str, dagster_run_id: str | None = None, *,
                    outcome: str, message: str, cancel: bool = False) -> list[str]:
    """End every not-yet-finished Dagster run of this Synix run (reported canceled with
    `cancel`, failed otherwise) and tag each of its runs that did not succeed with the Synix
    outcome, so the UI says "interrupted" where Dagster only knows FAILURE; returns the ids of
    the runs it ended."""
    import dagster as dg

    runs = list(instance.get_runs(filters=dg.RunsFilter(tags={RUN_ID_TAG: synix_run_id})))
    if dagster_run_id and dagster_run_id not in {r.run_id for r in runs}:
        runs += instance.get_runs(filters=dg.RunsFilter(run_ids=[dagster_run_id]))
    ended = []
    for run in runs:
        if run.status == dg.DagsterRunStatus.SUCCESS:
            continue
        if not run.is_finished:
            if cancel:
                instance.report_run_canceled(run, message=message)
            else:
                instance.report_run_failed(run, message=message)
            ended.append(run.run_id)
        instance.add_run_tags(run.run_id, {OUTCOME_TAG: outcome})
    return ended


def settle_abandoned_runs(paths, store, identity: str | None = None) -> list[str]:
    """Mark runs whose process has ended without finishing them as interrupted, here and in
    Dagster; returns their Synix run ids. Loads Dagster only when there is one. With `identity`
    (the LLM identity of a build about to start), what they stored and Dagster's log lacks is
    recorded, so Dagster agrees with Synix's plan about it."""
    abandoned = store.abandoned_runs()
    for run in abandoned:
        pid = (run.owner or {}).get("pid")
        store.finish_run(run.run_id, "interrupted", {"error": KILLED.format(pid=pid)})
    if abandoned:
        from synix_assets.dagster_defs.instance import dagster_instance

        with dagster_instance(paths) as instance:
            for run in abandoned:
                pid = (run.owner or {}).get("pid")
                close_open_runs(instance, run.run_id, run.dagster_run_id, outcome="interrupted",
                                message=f"Synix: {KILLED.format(pid=pid)}")
            if identity is not None:
                from synix_assets.dagster_defs.compile import branch_graph
                from synix_assets.dagster_defs.records import record_lost

                graph = branch_graph(paths, identity)
                for run in abandoned:
                    record_lost(instance, graph.pipeline, store, graph.versions, graph.names,
                                store.keys_built_in_run(run.run_id))
    return [r.run_id for r in abandoned]
