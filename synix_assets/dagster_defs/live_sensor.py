"""The live sensor: closed sessions in the inbox's outbox become Dagster builds.

Each tick (1) closes sessions idle past the gap, (2) settles the batch being built from its
Dagster run (tagged `synix/live_batch`): success marks its sessions built, a failed or canceled
run sends them back with backoff (or dead-letters them after the last attempt) with the run's
error as the reason, and (3) claims the due sessions as a new batch — only when none is building,
which is the guard that hands a session to one build at a time — registers the conversation and
period partitions the build will need, and requests one `synix_build_all` run (the same job the
export sensor launches: one road to a build). The layers above follow in that run.

Under `dagster dev` the daemon evaluates it; `synix serve --home` / `synix live work` evaluate the
same sensor for each tenant and execute the run it requests (synix_assets/live/worker.py).
"""
from __future__ import annotations

import time
from pathlib import Path

import dagster as dg

from synix_assets.dagster_defs.records import register_partitions
from synix_assets.dagster_defs.sensors import new_partitions
from synix_assets.dagster_defs.vocabulary import (BRANCH_TAG, LIVE_BATCH_TAG, LIVE_SENSOR, TRIGGER_LIVE_SENSOR,
                                                 TRIGGER_TAG)
from synix_assets.engine.context import BuildContext
from synix_assets.project import MAIN
from synix_assets.sources.reader import SourceReader
from synix_resources.live.inbox import Inbox
from synix_resources.live.window import fold_all
from synix_resources.store.resource import ArtifactStoreResource

SENSOR_NAME = LIVE_SENSOR
BATCH_TAG = LIVE_BATCH_TAG
TRIGGER = TRIGGER_LIVE_SENSOR
INTERVAL_SECONDS = 5
CLAIM_TIMEOUT_S = 600.0  # a claimed batch whose run never appeared is retried after this


def live_inboxes(pipeline) -> list[Path]:
    """The inbox files of the pipeline's live sources."""
    return [pipeline.resolve(s.path) for s in pipeline.sources.values() if s.kind == "live"]


def run_error(instance, run) -> str:
    """One line saying why a run failed: the innermost error of its first failed step."""
    return run_failure(instance, run)[0]


def run_failure(instance, run) -> tuple[str, bool]:
    """(why a run failed, whether retrying cannot help: every partition that failed failed for
    good — a refusal, a 4xx answer — so the batch is dead-lettered without retries)."""
    for record in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        data = record.dagster_event.step_failure_data
        if data.user_failure_data is not None and data.user_failure_data.description:
            permanent = data.user_failure_data.metadata.get("permanent")
            return (" ".join(data.user_failure_data.description.split()),
                    bool(permanent is not None and permanent.value))
        error = data.error
        while error is not None and error.cause is not None:
            error = error.cause
        if error is not None:
            return f"{error.cls_name}: {' '.join(error.message.split())}"[:500], False
    return f"the build run {run.run_id} ended {run.status.value.lower()}", False


def settle(instance, inbox: Inbox, now: float) -> dict | None:
    """Finish the batch being built if its run has ended (see the module docstring)."""
    batch, claimed_at, _ = inbox.building()
    if batch is None:
        return None
    runs = instance.get_runs(filters=dg.RunsFilter(tags={BATCH_TAG: batch}), limit=1)
    if not runs:
        if now - (claimed_at or now) > CLAIM_TIMEOUT_S:
            return inbox.finish(batch, ok=False, error="the build of this batch was never launched", now=now)
        return None
    run = runs[0]
    if run.status == dg.DagsterRunStatus.SUCCESS:
        return inbox.finish(batch, ok=True, now=now)
    if run.is_finished:
        error, permanent = run_failure(instance, run)
        return inbox.finish(batch, ok=False, error=error, permanent=permanent, now=now)
    return None


def tick(instance, pipeline, paths, store, *, now: float | None = None) -> dg.SensorResult:
    """One evaluation of the live sensor (also called directly by the worker and tests)."""
    now = time.time() if now is None else now
    requests, notes = [], []
    windows = {pipeline.resolve(s.path): s.window for s in pipeline.sources.values() if s.kind == "live"}
    for path in live_inboxes(pipeline):
        if not path.is_file():
            notes.append("nothing posted yet")
            continue
        inbox = Inbox.from_env(path)
        try:
            inbox.close_idle(now=now)
            if windows.get(path):  # the janitor's pass (synapse): evicted turns into the
                fold_all(inbox, size=windows[path])  # rolling summaries, each exactly once
            settle(instance, inbox, now)
            batch, sessions = inbox.claim(now=now)
        finally:
            inbox.close()
        if batch is None:
            continue
        reader = SourceReader(pipeline, store)
        scan = reader.scan()
        ctx = BuildContext(pipeline, store, llm=None, paths=paths, reader=reader)
        register_partitions(instance, pipeline, new_partitions(pipeline, ctx, scan))
        requests.append(dg.RunRequest(run_key=f"live-{batch}",
                                      tags={TRIGGER_TAG: TRIGGER, BRANCH_TAG: MAIN, BATCH_TAG: batch}))
        notes.append(f"{len(sessions)} closed session(s) handed to the build as batch {batch}")
    return dg.SensorResult(run_requests=requests,
                           skip_reason=None if requests else ("; ".join(notes) or "no closed sessions due"))


def live_sensors(pipeline, paths, build_job) -> list[dg.SensorDefinition]:
    """The live sensor, when the pipeline has a live source."""
    if not live_inboxes(pipeline):
        return []

    @dg.sensor(name=SENSOR_NAME, minimum_interval_seconds=INTERVAL_SECONDS, job=build_job,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Watches the live inbox: closes idle sessions, hands closed sessions to "
                           "one synix_build_all run at a time, retries failed builds with backoff "
                           "and dead-letters them after the last attempt (docs/live.md).")
    def _sensor(context: dg.SensorEvaluationContext, store: ArtifactStoreResource):
        result = tick(context.instance, pipeline, paths, store.get_store())
        if result.run_requests:
            context.log.info(f"live: requesting {len(result.run_requests)} build(s)")
        return result

    return [_sensor]
