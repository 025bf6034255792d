"""`dagster asset wipe` under a running `dagster dev`: the Synix store still holds what was built,
so the export sensor's next tick records it again from the store — saying so in its log — and
evaluates the layer's `synix_up_to_date` check for that record (never "Not evaluated")."""
from __future__ import annotations

import subprocess

from tests.dagster.live import BIN, DagsterDev, built_demo_project, clean_env, plan_stale, wait_until

WAIT_S = 180


def _core(dev: DagsterDev) -> dict:
    q = """{ assetNodeOrError(assetKey: {path: ["core"]}) { ... on AssetNode {
        assetMaterializations(limit: 1) { runId }
        assetChecksOrError { ... on AssetChecks { checks { name
            executionForLatestMaterialization { status evaluation { success } } } } } } } }"""
    node = dev.gql(q)["assetNodeOrError"]
    check = node["assetChecksOrError"]["checks"][0]
    return {"materialized": bool(node["assetMaterializations"]),
            "check": (check["executionForLatestMaterialization"] or {}).get("status")}


def _tick_messages(dev: DagsterDev) -> list[str]:
    """What the export sensor's recent ticks logged (the UI shows it on each tick)."""
    q = """{ sensorOrError(sensorSelector: {repositoryLocationName: "synix",
        repositoryName: "__repository__", sensorName: "synix_exports_sensor"}) { ... on Sensor {
        sensorState { ticks(limit: 500) { logEvents { events { message } } } } } } }"""
    ticks = dev.gql(q)["sensorOrError"]["sensorState"]["ticks"]
    return [e["message"] for t in ticks for e in t["logEvents"]["events"]]


def test_a_wiped_layer_is_recorded_again_from_the_store_with_its_check_evaluated(tmp_path_factory):
    root = built_demo_project(tmp_path_factory, "wipe")
    dev = DagsterDev(root).wait_serving()
    try:
        assert _core(dev) == {"materialized": True, "check": "SUCCEEDED"}
        wiped = subprocess.run([str(BIN / "dagster"), "asset", "wipe", "core", "--noprompt"], cwd=root,
                               env=clean_env(), capture_output=True, text=True, timeout=120)
        assert wiped.returncode == 0, wiped.stdout + wiped.stderr
        wait_until(lambda: _core(dev) == {"materialized": True, "check": "SUCCEEDED"},
                   "core recorded again from the store, its check evaluated", dev, WAIT_S)
        # said where it happened: the sensor's tick, or a process that loaded the definitions
        # first (a run worker, the code server), whose warning is in `dagster dev`'s output
        said = "core (main) had no Dagster record (wiped?)"
        assert any(said in m for m in _tick_messages(dev)) or said in dev.output(), dev.output()[-3000:]
        assert not any(plan_stale(root).values())  # nothing was rebuilt, nothing is owed
    finally:
        dev.stop()
