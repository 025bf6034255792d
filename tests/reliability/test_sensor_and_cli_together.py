"""A sensor-launched run and a CLI build on one project at the same time (issue 8, fault 4).

The sensor's run request (the `synix_build_all` job) is executed the way a run worker executes it
(the project's Dagster definitions, the request's tags) in one process while `synix run` builds in
another.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import dagster as dg

from synix_assets.dagster_defs.build import build_defs
from synix_assets.dagster_defs.instance import dagster_instance
from synix_resources.store.artifact_store import ArtifactStore

SENSOR_RUN = textwrap.dedent("""
    import sys, json
    import dagster as dg
    from synix_assets.dagster_defs.build import build_defs
    from synix_assets.dagster_defs.instance import dagster_instance
    from synix_assets.project import ProjectPaths
    from pathlib import Path
    paths = ProjectPaths(Path(sys.argv[1]))
    request = json.loads(sys.argv[2])
    instance = dagster_instance(paths)
    defs = build_defs(paths.root)
    result = defs.resolve_job_def(request["job"]).execute_in_process(instance=instance, tags=request["tags"])
    print("sensor run success", result.success)
""")


def test_sensor_run_and_cli_build_at_once_make_no_duplicates_and_no_lock_errors(demo_project):
    import json

    instance = dagster_instance(demo_project)
    defs = build_defs(demo_project.root)
    for f in (demo_project.root / "exports").iterdir():
        os.utime(f, (time.time() - 60, time.time() - 60))
    with dg.build_sensor_context(instance=instance, resources=defs.resources, definitions=defs) as ctx:
        tick = defs.sensors[0](ctx)
    run = tick.run_requests[0]
    request = {"job": run.job_name or defs.sensors[0].job_name, "tags": dict(run.tags)}
    env = dict(os.environ, SYNIX_LLM_PROVIDER="fake", SYNIX_FAKE_LATENCY_S="0.05")
    synix = os.path.join(os.path.dirname(sys.executable), "synix")
    sensor = subprocess.Popen([sys.executable, "-c", SENSOR_RUN, str(demo_project.root), json.dumps(request)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cli = subprocess.Popen([synix, "-p", str(demo_project.root), "run", "--json"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sensor_out, _ = sensor.communicate(timeout=300)
    cli_out, cli_err = cli.communicate(timeout=300)
    assert sensor.returncode == 0, sensor_out[-2000:]
    assert "sensor run success True" in sensor_out
    assert cli.returncode == 0, cli_err[-2000:]
    assert "database is locked" not in sensor_out + cli_out + cli_err
    report = json.loads(cli_out)
    store = ArtifactStore(demo_project.store)
    for layer in ("transcripts", "episodes", "monthly", "core"):
        arts = store.list_layer(layer)
        assert len(arts) == len({a.group_key for a in arts})  # one current artifact per group
    assert len(store.list_layer("episodes")) == 24
    # Whichever ran first built the episodes; the other found them cached: 24 built in total.
    built_by_cli = report["layers"]["episodes"]["built"]
    assert built_by_cli in (0, 24)
    assert sum(1 for a in store.list_layer("episodes") if store.history("episodes", a.group_key)[1:]) == 0
