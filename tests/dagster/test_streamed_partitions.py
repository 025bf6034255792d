"""A layer step launched from Dagster (the UI, a backfill, `dagster asset materialize`) records
each partition as soon as it is stored, not all of them at the end of the step."""
from __future__ import annotations

import os
import time

import dagster as dg

from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance


def _register_conversations(defs, instance, project):
    """The export sensor's tick: the conversations' partitions."""
    for f in (project.root / "exports").iterdir():  # settled: older than the settle time
        os.utime(f, (time.time() - 60, time.time() - 60))
    with dg.build_sensor_context(instance=instance, resources=defs.resources, definitions=defs) as ctx:
        defs.sensors[0](ctx)


def _range_run(defs, instance, layer: str, keys: list[str]) -> dg.ExecuteInProcessResult:
    """One run of the layer's job over every partition, as the UI's "Launch 1 run" over a range
    (or a single-run backfill) launches it."""
    result = defs.resolve_job_def(f"synix_build_{layer}").execute_in_process(
        instance=instance, tags={"dagster/asset_partition_range_start": keys[0],
                                 "dagster/asset_partition_range_end": keys[-1]})
    assert result.success
    return result


def test_episodes_reach_the_event_log_while_their_step_is_still_building(demo_project, monkeypatch):
    monkeypatch.setenv("SYNIX_FAKE_LATENCY_S", "0.25")  # each call takes a while…
    monkeypatch.setenv("SYNIX_LLM_CONCURRENCY", "2")  # …and two at a time: 24 episodes take ~3 s
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    _register_conversations(defs, instance, demo_project)
    keys = instance.get_dynamic_partitions("conversations")
    assert len(keys) == 24
    _range_run(defs, instance, "transcripts", keys)

    run = _range_run(defs, instance, "episodes", keys)
    logs = instance.all_logs(run.run_id)
    mats = [e.timestamp for e in logs if e.dagster_event and e.dagster_event.event_type_value == "ASSET_MATERIALIZATION"
            and "cache" in e.dagster_event.event_specific_data.materialization.metadata]
    step_end = next(e.timestamp for e in logs if e.dagster_event and e.dagster_event.event_type_value == "STEP_SUCCESS")
    assert len(mats) == 24
    # the first episode is in Dagster's log seconds before the step ends, and they arrive spread
    # over the build rather than together (they came within a few ms of each other before)
    assert step_end - mats[0] > 1.5, (step_end - mats[0])
    assert mats[-1] - mats[0] > 1.5, (mats[-1] - mats[0])
    gaps = [b - a for a, b in zip(mats, mats[1:])]
    assert max(gaps) < 1.0  # nothing kept back more than the next call's time
