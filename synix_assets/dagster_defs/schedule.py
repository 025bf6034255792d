"""The synthesis loop on a schedule (design 003: "runs after new events are ingested, daemon syncs
every 15 minutes"): `synix_synthesis_schedule` ticks every 15 minutes and launches
`synix_build_all` — the build of every layer above the evidence — only when there is new evidence.

A schedule, not an automation condition: what decides is not a Dagster asset's state but the
evidence ledger, which takes in new export messages, live turns and appended events outside
any asset. Each tick first feeds the ledger from the exports and live inboxes (idempotent, cheap
when nothing changed), then counts the events that arrived since the last clean build began (the
build records that mark, app/run.py). None: a `SkipReason` saying so. A build of this branch still
queued or running: skipped too, so a long build never has a second one stacked behind it. A build
that fails leaves the mark where it was, so the next tick tries again.
"""
from __future__ import annotations

import dagster as dg

from synix_assets.dagster_defs.vocabulary import (BRANCH_TAG, SYNTHESIS_SCHEDULE,
                                                 TRIGGER_SYNTHESIS_SCHEDULE, TRIGGER_TAG)
from synix_assets.sources.evidence import feed, unsynthesised
from synix_resources.ledger.store import EvidenceLedger

EVERY_15_MINUTES = "*/15 * * * *"
UNFINISHED = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED,
              dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


def synthesis_schedule(paths, pipeline, job: dg.JobDefinition, *,
                       cron: str = EVERY_15_MINUTES) -> dg.ScheduleDefinition:
    """The schedule of main's `synix_build_all` (`job`) for the project at `paths`."""

    @dg.schedule(name=SYNTHESIS_SCHEDULE, cron_schedule=cron, job=job,
                 default_status=dg.DefaultScheduleStatus.RUNNING,
                 description="Every 15 minutes: take new exports and live turns into the evidence "
                             "ledger, then build the layers above it if any evidence is new "
                             "(skipped, saying why, when none is).")
    def _synthesis(context: dg.ScheduleEvaluationContext):
        busy = context.instance.get_runs(dg.RunsFilter(job_name=job.name, statuses=UNFINISHED), limit=1)
        if busy:
            return dg.SkipReason(f"build run {busy[0].run_id} is still {busy[0].status.value.lower()}; "
                                 "new evidence waits for the next tick")
        store = paths.open_store()
        try:
            with EvidenceLedger(paths.ledger) as ledger:
                fed = feed(pipeline, store, ledger)
                new, mark = unsynthesised(ledger), ledger.high_water()
        finally:
            store.close()
        if not new:
            return dg.SkipReason("no new evidence since the last synthesis "
                                 f"({fed.files_unchanged} export file(s) unchanged, no new events)")
        return dg.RunRequest(
            # one request per tick: a build that failed is tried again at the next tick
            run_key=f"evidence-{mark}-{int(context.scheduled_execution_time.timestamp())}"
            if context.scheduled_execution_time else f"evidence-{mark}",
            tags={TRIGGER_TAG: TRIGGER_SYNTHESIS_SCHEDULE, BRANCH_TAG: "main",
                  "synix/new_events": str(new)})

    return _synthesis
