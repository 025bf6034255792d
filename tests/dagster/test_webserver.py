"""The Dagster UI, checked for real: dagster-webserver on loopback for an initialised, built
project; its GraphQL endpoint shows the layer assets, their partitions and the latest
materializations with Synix's metadata."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from synix_assets.app.run import run_build

QUERY = """{ assetNodes { assetKey { path } groupName description partitionKeys
  assetMaterializations(limit: 1) { partition metadataEntries { label
    ... on TextMetadataEntry { text } ... on IntMetadataEntry { intValue } } } } }"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, query: str) -> dict:
    req = urllib.request.Request(url, data=json.dumps({"query": query}).encode(),
                                 # `synix ui`'s guard wants a same-origin Origin or this header on a POST
                                 headers={"Content-Type": "application/json", "X-Synix-Request": "1"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def _wait_until_serving(base: str, proc, timeout_s: float, output) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{base}/server_info", timeout=2):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"nothing served {base}: {output()[-2000:]}")
            time.sleep(0.5)


@pytest.fixture
def webserver(demo_project):
    run_build(demo_project)
    port = _free_port()
    env = dict(os.environ, DAGSTER_HOME=str(demo_project.dagster_home))
    proc = subprocess.Popen(
        [sys.executable, "-m", "dagster_webserver", "-w", "workspace.yaml", "-h", "127.0.0.1",
         "-p", str(port)], cwd=demo_project.root, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(base, proc, 120, lambda: proc.stderr.read().decode())
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_webserver_shows_layers_partitions_and_synix_metadata(webserver):
    data = _post(f"{webserver}/graphql", QUERY)
    nodes = {"/".join(n["assetKey"]["path"]): n for n in data["data"]["assetNodes"]}
    assert {"transcripts", "episodes", "monthly", "core", "memory_index", "synix_context",
            "sources/exports"} <= set(nodes)
    assert nodes["episodes"]["groupName"] == "memory"
    assert len(nodes["episodes"]["partitionKeys"]) == 24
    assert nodes["monthly"]["partitionKeys"] == ["2025-01", "2025-02", "2025-03", "2025-04",
                                                 "2025-05", "2025-06"]
    latest = nodes["episodes"]["assetMaterializations"][0]
    entries = {e["label"]: e for e in latest["metadataEntries"]}
    assert latest["partition"] in nodes["episodes"]["partitionKeys"]
    assert entries["artifact_id"]["text"].startswith("episodes-")
    assert entries["cache"]["text"] == "built"
    assert entries["fake.calls"]["intValue"] == 1
    assert {"fake.input_tokens", "fake.cost_usd", "model", "preview"} <= set(entries)
    core = nodes["core"]["assetMaterializations"][0]
    assert {e["label"] for e in core["metadataEntries"]} >= {"artifact_id", "input_count"}


def test_a_launchpad_run_overriding_the_llm_model_is_refused_at_launch_and_marks_no_partition_failed(webserver):
    """The Launchpad's Launch button sends this mutation: the override is a config error there, so
    no run exists and no partition of the layer is marked Failed (a refused run would mark all)."""
    count = '{ runsOrError { ... on Runs { count } } }'
    before = _post(f"{webserver}/graphql", count)["data"]["runsOrError"]["count"]
    key = _post(f"{webserver}/graphql", QUERY)["data"]["assetNodes"]
    key = next(n for n in key if n["assetKey"]["path"] == ["episodes"])["partitionKeys"][0]
    launched = _post(f"{webserver}/graphql", """mutation { launchRun(executionParams: {
        selector: {repositoryLocationName: "synix", repositoryName: "__repository__",
                   jobName: "synix_build_episodes"},
        runConfigData: {resources: {llm: {config: {model: "claude-opus-4"}}}},
        executionMetadata: {tags: [{key: "dagster/partition", value: %s}]} }) {
        __typename ... on RunConfigValidationInvalid { errors { message } } } }""" % json.dumps(key))
    result = launched["data"]["launchRun"]
    assert result["__typename"] == "RunConfigValidationInvalid", result
    assert 'unexpected config entry "model"' in result["errors"][0]["message"]
    assert _post(f"{webserver}/graphql", count)["data"]["runsOrError"]["count"] == before
    statuses = _post(f"{webserver}/graphql", """{ assetNodeOrError(assetKey: {path: ["episodes"]}) {
        ... on AssetNode { assetPartitionStatuses { ... on DefaultPartitionStatuses {
        materializedPartitions failedPartitions } } } } }""")["data"]["assetNodeOrError"]["assetPartitionStatuses"]
    assert statuses["failedPartitions"] == [] and len(statuses["materializedPartitions"]) == 24


@contextlib.contextmanager
def _synix_ui(project):
    """`synix ui` on a free loopback port, serving; stopped by its process group at the end."""
    port = _free_port()
    synix = shutil.which("synix") or str(Path(sys.executable).with_name("synix"))
    proc = subprocess.Popen([synix, "-p", str(project), "ui", "--port", str(port), "--no-open"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(base, proc, 150, lambda: proc.stdout.read().decode())
        yield base, proc
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_synix_ui_starts_the_dagster_ui_for_the_project_on_loopback(demo_project):
    with _synix_ui(demo_project.root) as (base, proc):
        nodes = _post(f"{base}/graphql", "{ assetNodes { assetKey { path } } }")["data"]["assetNodes"]
        assert {"episodes", "core"} <= {"/".join(n["assetKey"]["path"]) for n in nodes}
    assert base in proc.stdout.read().decode()


def test_synix_ui_reloads_the_definitions_when_the_pipeline_is_edited(demo_project):
    """No "Reload definitions" click: the edited prompt's code version shows by itself."""
    query = '{ assetNodes { assetKey { path } opVersion } }'
    with _synix_ui(demo_project.root) as (base, _proc):
        def versions() -> dict:
            nodes = _post(f"{base}/graphql", query)["data"]["assetNodes"]
            return {"/".join(n["assetKey"]["path"]): n["opVersion"] for n in nodes}
        before = versions()
        pipeline = demo_project.root / "pipeline.py"
        pipeline.write_text(pipeline.read_text().replace(
            "prompt=prompts.core_memory", "prompt=lambda r: 'Terser: ' + r.content"))
        deadline = time.monotonic() + 90
        after = before
        while time.monotonic() < deadline and after["core"] == before["core"]:
            time.sleep(1)
            after = versions()
        assert after["core"] != before["core"], "the UI still shows the old core after 90 s"
        assert after["episodes"] == before["episodes"]  # only what the edit touches changed
