"""Declarative automation: every layer and projection says in Dagster what keeps it current (an
AutomationCondition), each has its own automation sensor (off by default), and with them turned
on in a running `dagster dev` a dropped-in export becomes searchable, in context.md and fresh
everywhere without the export sensor launching a whole build."""
from __future__ import annotations

import shutil
import time

import dagster as dg
import pytest

from synix_assets.dagster_defs.automation import automation_on, sensor_name
from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance
from tests.dagster.live import DagsterDev, built_demo_project, screenshot_page, wait_until
from tests.support.screenshots import shot_path

WAIT_S = 420
START_SENSOR = """mutation($sel: SensorSelector!) { startSensor(sensorSelector: $sel) {
  __typename ... on Sensor { sensorState { status } } ... on PythonError { message } } }"""
ASSETS = ("transcripts", "episodes", "monthly", "core", "memory_index", "synix_context")
RUNS = "{ runsOrError { ... on Runs { results { runId jobName status tags { key value } } } } }"


def test_every_synix_asset_has_an_automation_condition_and_its_own_stopped_sensor(demo_project):
    defs = build_defs(demo_project.root)
    repo = defs.get_repository_def()
    memory = [k for k in repo.asset_graph.get_all_asset_keys() if not k.path[0].startswith("sources")]
    assert {k.to_user_string() for k in memory} >= {"transcripts", "episodes", "monthly", "core",
                                                    "memory_index", "synix_context"}
    for key in memory:
        condition = repo.asset_graph.get(key).automation_condition
        assert condition is not None and "inputs change" in condition.get_label()
        sensor = repo.get_sensor_def(sensor_name(key))
        assert sensor.default_status == dg.DefaultSensorStatus.STOPPED
    assert not automation_on(dagster_instance(demo_project))


@pytest.fixture(scope="module")
def automated(tmp_path_factory):
    root = built_demo_project(tmp_path_factory, "auto")
    dev = DagsterDev(root).wait_serving()
    try:
        # the export sensor's first tick sees every export as new and builds (a no-op here):
        # let that build and the runs it launches end before automation is turned on
        wait_until(lambda: any(r["jobName"] == "synix_build_all"
                               for r in dev.gql(RUNS)["runsOrError"]["results"])
                   and dev.active_runs() == 0, "the export sensor's first build ended", dev, WAIT_S)
        yield root, dev
    finally:
        dev.stop()


def test_automation_sensors_turned_on_build_a_dropped_in_export_without_a_whole_build(automated, claude_export, conversation):
    root, dev = automated
    for asset in ASSETS:
        started = dev.gql(START_SENSOR, {"sel": {"repositoryLocationName": "synix",
                                                 "repositoryName": "__repository__",
                                                 "sensorName": sensor_name(dg.AssetKey(asset))}})
        assert started["startSensor"]["sensorState"]["status"] == "RUNNING", started
    # automation is on before the export lands: each sensor has evaluated twice, so the drop
    # never meets a sensor's first evaluation (which only records the state it starts from)
    names = [sensor_name(dg.AssetKey(a)) for a in ASSETS]
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not all(
            dev.output().count(f"Finished auto-materialization tick for {n} ") >= 2 for n in names):
        time.sleep(1)
    before_runs = {r["runId"] for r in dev.gql(RUNS)["runsOrError"]["results"]}
    incoming = root / "incoming.json"
    claude_export(incoming, [conversation("axo-1", "Axolotl care", "2025-08-03", "axolotl gills water")])
    dropped = time.monotonic()
    shutil.copy(incoming, root / "exports" / "axolotl.json")

    # The first hops are what is checked: the automation sensors build the new conversation's
    # transcript and episode (through a backfill, which Dagster's daemon picks up every 30 s);
    # the whole cascade to context.md takes one to three minutes (docs/dagster.md).
    from synix_assets.project import ProjectPaths
    from synix_resources.store.artifact_store import ArtifactStore

    def built() -> bool:
        with ArtifactStore(ProjectPaths(root).store) as store:
            return store.current("episodes", "axo-1") is not None
    deadline = dropped + WAIT_S
    while time.monotonic() < deadline and not built():
        time.sleep(3)
    assert built(), (f"no episode for the new conversation within {WAIT_S}s\nruns: "
                     f"{[(r['jobName'], r['status']) for r in dev.gql(RUNS)['runsOrError']['results']]}\n"
                     + "\n".join(l for l in dev.output().splitlines() if any(
                         w in l for w in ("export file", "requested", "Submitted", "RUN_", "rror")))[-6000:])
    print(f"export dropped → its episode built by automation: {time.monotonic() - dropped:.1f}s")
    new_runs = [r for r in dev.gql(RUNS)["runsOrError"]["results"] if r["runId"] not in before_runs]
    assert new_runs and not [r for r in new_runs if r["jobName"].endswith("synix_build_all")], new_runs
    assert "partitions registered; automation is on" in dev.output()
    # the Automation page lists each asset's sensor, running
    shot = shot_path(root.parent, "dagster-automation.png")
    text = screenshot_page(dev.base, "/automation", shot, ["synix_automate_core", "synix_automate_episodes"])
    assert all(f"synix_automate_{a}" in text for a in ("transcripts", "monthly", "synix_context")), text[:2000]
