"""What a person watching a UI-launched run sees, in a real `dagster dev` and headless Chromium:
each episode on the run page as soon as it is stored, while the step is still building; and a
materialization's token usage and cost (`fake.*` here) on the asset's partition page.
`SYNIX_DOCS_SCREENSHOTS=1` saves both screenshots to docs/."""
from __future__ import annotations

import subprocess
import time

import pytest

from synix_assets.dagster_defs.vocabulary import EXPORTS_SENSOR
from tests.dagster.live import (BIN, CHROMIUM, DagsterDev, built_demo_project, clean_env, edit_episode_prompt,
                                screenshot_page)
from tests.support.screenshots import shot_path

pytestmark = pytest.mark.timeout(900)
EVENTS = """query($id: ID!) { runOrError(runId: $id) { ... on Run { status
    eventConnection { events { __typename ... on MessageEvent { timestamp } } } } } }"""


def _run(dev: DagsterDev, run_id: str) -> tuple[str, list[float]]:
    """The run's status and the times its materializations reached Dagster's event log."""
    run = dev.gql(EVENTS, {"id": run_id})["runOrError"]
    times = [int(e["timestamp"]) / 1000 for e in run["eventConnection"]["events"]
             if e["__typename"] == "MaterializationEvent"]
    return run["status"], times


def _step_done(dev: DagsterDev, run_id: str) -> bool:
    q = """query($id: ID!) { runOrError(runId: $id) { ... on Run {
        eventConnection { events { __typename } } } } }"""
    events = dev.gql(q, {"id": run_id})["runOrError"]["eventConnection"]["events"]
    return any(e["__typename"] == "ExecutionStepSuccessEvent" for e in events)


def _shoot_when_materializing(base: str, run_id: str, path) -> str:
    """Open the run's page in headless Chromium before its step records anything; screenshot as
    soon as an episode's materialization is listed; the page's text."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 900})
            page.goto(f"{base}/runs/{run_id}")
            page.get_by_text(run_id[:8]).first.wait_for(timeout=60_000)
            page.get_by_text("ASSET_MATERIALIZATION").first.wait_for(timeout=120_000)
            skip = page.get_by_role("button", name="Skip")  # Dagster's one-time community prompt
            if skip.count():
                skip.first.click()
            page.wait_for_timeout(300)
            page.screenshot(path=str(path))
            return page.inner_text("body")
        finally:
            browser.close()


def test_a_ui_run_shows_each_episode_while_its_step_is_building_and_each_ones_cost(tmp_path_factory):
    root = built_demo_project(tmp_path_factory, "liverun")
    edit_episode_prompt(root)  # every episode to rebuild
    # each call takes 2 s, two at a time: the 24 episodes take ~24 s
    env = clean_env(SYNIX_FAKE_LATENCY_S="2.0", SYNIX_LLM_CONCURRENCY="2")
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
        # the run page open while the run starts; the screenshot the moment episodes show on it
        shot = shot_path(root.parent, "dagster-run-streaming.png")
        text = _shoot_when_materializing(dev.base, run_id, shot)
        assert "episodes" in text and "ASSET_MATERIALIZATION" in text
        assert not _step_done(dev, run_id), "the step ended before its run page showed an episode"
        while (state := _run(dev, run_id))[0] == "STARTED" and time.monotonic() < deadline:
            time.sleep(1)
        status, times = state
        assert status == "SUCCESS", dev.output()[-3000:]
        assert len(times) >= 24
        # they reached the log as they were built, over the step's ~24 s, not together at its end
        assert times[-1] - times[0] > 10, times
        assert max(b - a for a, b in zip(times, times[1:])) < 5, times
        # one episode's cost and tokens, on its partition's page
        shot = shot_path(root.parent, "dagster-cost-metadata.png")
        text = screenshot_page(dev.base, f"/assets/episodes?view=partitions&partition={keys[0]}", shot,
                               ["fake.cost_usd"], scroll_to="fake.cost_usd")
        assert "fake.input_tokens" in text and "fake.output_tokens" in text, text[:3000]
    finally:
        dev.stop()
