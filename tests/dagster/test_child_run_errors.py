"""A layer run's failure names each failed conversation by the partition key Dagster shows (its
readable key), as the run that launched it and `synix run` do — not by its export id."""
from __future__ import annotations

import os
import time

import dagster as dg

from synix_assets.dagster_defs.assets import layer_key
from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance

UUID = "347c7a0d-a98c-5ab8-bfcf-c1de69c3734a"
READABLE = "2025-01-06-rust-cli-for-dotfile-sync"


def test_a_failed_partition_is_named_by_its_readable_key_in_the_runs_error(demo_project):
    pipeline = demo_project.root / "pipeline.py"  # the fake provider answers this marker with a 400
    pipeline.write_text(pipeline.read_text().replace(
        "prompt=prompts.episode_summary", 'prompt=lambda r: "SYNIX_FAIL_400 " + r.content'))
    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    for f in (demo_project.root / "exports").iterdir():  # settled: older than the settle time
        os.utime(f, (time.time() - 60, time.time() - 60))
    with dg.build_sensor_context(instance=instance, resources=defs.resources, definitions=defs) as ctx:
        defs.sensors[0](ctx)  # the export sensor's tick registers the conversations
    for layer in ("transcripts", "episodes"):
        result = dg.materialize(list(defs.assets), selection=[layer_key(layer)], partition_key=READABLE,
                                instance=instance, resources=defs.resources, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    data = failure.step_failure_data
    assert f"1 partition(s) failed: {READABLE}." in data.error.message
    assert UUID not in data.error.message
    assert data.user_failure_data.metadata["failed"].value == [READABLE]
