"""What a person watching a UI-launched run sees, in a real `dagster dev` and headless Chromium:
each episode on the run page as soon as it is stored, while the step is still building; and a
materialization's token usage and cost (`fake.*` here) on the asset's partition page.
`SYNIX_DOCS_SCREENSHOTS=1` saves both screenshots to docs/."""
from __future__ import annotations

import subprocess
import time

import pytest

from synix_assets.dagster_defs.vocabulary import EXPORTS_SENSOR
from tests.dagster.live import (BIN, DagsterDev, built_demo_project, clean_env, edit_episode_prompt,
                                screenshot_page)
from tests.support.screenshots import shot_path

pytestmark = pytest.mark.timeout(900)
EVENTS = """query($id: ID!) { runOrError(runId: $id) { ... on Run { status
    eventConnection { events { __typename timestamp ... on MaterializationEvent { partition } } } } } }"""


def _run(dev: DagsterDev, run_id: str) -> tuple[str, list[float]]:
    """The run's status and the times its materializations reached Dagster's event log."""
    run = dev.gql(EVENTS, {"id": run_id})["runOrError"]
    times = [int(e["timestamp"]) / 1000 for e in run["eventConnection"]["events"]
             if e["__typename"] == "MaterializationEvent"]
    return run["status"], times


def test_a_ui_run_shows_each_episode_while_its_step_is_building_and_each_ones_cost(tmp_path_factory):
    root = built_demo_project(tmp_path_factory, "liverun")
    edit_episode_prompt(root)  # every episode to rebuild
    # each call takes 1 s, two at a time: the 24 episodes take ~12 s
    env = clean_env(SYNIX_FAKE_LATENCY_S="1.0", SYNIX_LLM_CONCURRENCY="2")
    stop = subprocess.run([str(BIN / "dagster"), "sensor", "stop", EXPORTS_SENSOR], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert stop.returncode == 0, stop.stderr[-2000:]  # only this run builds
    dev = DagsterDev(root, env=env).wait_serving()
    try:
        keys = dev.gql("""{ assetNodeOrError(assetKey: {path: ["episodes"]}) {
            ... on AssetNode { partitionKeys } } }""")["assetNodeOrError"]["partitionKeys"]
        # the UI's "Launch 1 run" over every partition of the layer's job
        run_id = dev.launch("synix_build_episodes", {"dagster/asset_partition_range_start": keys[0],
                                                     "dagster/asset_partition_range_end": keys[-1]})
        deadline = time.monotonic() + 300
        while (state := _run(dev, run_id))[0] in ("QUEUED", "NOT_STARTED", "STARTING", "STARTED") \
                and len(state[1]) < 3 and time.monotonic() < deadline:
            time.sleep(0.3)
        status, seen = state
        assert status == "STARTED" and len(seen) >= 3, (status, len(seen), dev.output()[-3000:])
        # the run page mid-step: episodes listed, the step still running
        shot = shot_path(root.parent, "dagster-run-streaming.png")
        text = screenshot_page(dev.base, f"/runs/{run_id}", shot, [run_id[:8], "ASSET_MATERIALIZATION"])
        assert "episodes" in text
        mid, _ = _run(dev, run_id)
        assert mid == "STARTED", "the run ended before its page was seen mid-step"
        while (state := _run(dev, run_id))[0] == "STARTED" and time.monotonic() < deadline:
            time.sleep(1)
        status, times = state
        assert status == "SUCCESS", dev.output()[-3000:]
        assert len(times) >= 24
        # they reached the log as they were built, over the step's ~12 s, not together at its end
        assert times[-1] - times[0] > 5, times
        assert max(b - a for a, b in zip(times, times[1:])) < 3, times
        # one episode's cost and tokens, on its partition's page
        shot = shot_path(root.parent, "dagster-cost-metadata.png")
        text = screenshot_page(dev.base, f"/assets/episodes?view=partitions&partition={keys[0]}", shot,
                               ["fake.cost_usd"])
        assert "fake.input_tokens" in text and "fake.output_tokens" in text, text[:3000]
    finally:
        dev.stop()
