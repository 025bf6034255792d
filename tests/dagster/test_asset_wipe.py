"""`dagster asset wipe` under a running `dagster dev`: the Synix store still holds what was built,
so it is recorded again from the store (by the export sensor's next tick, or by a process that
loads the definitions first; each says so in its log) and Dagster evaluates the layer's
`synix_up_to_date` check for that record (never "Not evaluated")."""
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
        # Which process re-records first is a race under `dagster dev` (the sensor's tick, the
        # code server, or a run worker whose log is not in the UI's), so the warning each of
        # them gives (records.rerecorded_note) is checked where the sensor does it:
        # tests/dagster/test_definitions_and_sensor.py
        assert not any(plan_stale(root).values())  # nothing was rebuilt, nothing is owed
    finally:
        dev.stop()
