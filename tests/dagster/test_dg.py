"""`dg`, Dagster's project CLI, works in a project made by `synix init` and at the repository's
root: `dg check defs`, `dg list defs`, `dg launch` (the whole-build job and single assets) and
`dg dev`, whose UI then shows the runs `dg launch` made. The `dagster` commands keep working."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.dagster.live import BIN, DagsterDev, clean_env, plan_stale

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "synix_assets" / "demo" / "chatgpt_demo.json"


def dg(cwd: Path, *args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "dg"), *args], cwd=cwd, env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("dg") / "mem"
    out = subprocess.run([str(BIN / "synix"), "init", str(root), "--from", str(DEMO)], env=clean_env(),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return root


def test_synix_init_makes_a_dg_project_whose_definitions_check(project):
    assert '[tool.dg]' in (project / "pyproject.toml").read_text()
    out = dg(project, "check", "defs")
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert "All definitions loaded successfully" in out.stdout + out.stderr


def test_dg_list_defs_shows_every_layer_job_and_the_export_sensor(project):
    out = dg(project, "list", "defs", "--json")
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    listed = json.loads(out.stdout)
    assert {"transcripts", "episodes", "monthly", "core", "memory_index", "synix_context"} <= {
        a["asset_key"] for a in listed["assets"]}
    assert "synix_build_all" in {j["name"] for j in listed["jobs"]}
    assert "synix_exports_sensor" in {s["name"] for s in listed["sensors"]}


def test_dg_launch_of_the_build_job_builds_what_synix_plan_asked_for(project):
    assert sum(plan_stale(project).values()) > 0
    out = dg(project, "launch", "--job", "synix_build_all")
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert not any(plan_stale(project).values()), plan_stale(project)
    assert "Memory of" in (project / "context.md").read_text()


def test_dg_launch_of_one_partition_of_a_layer_reruns_it_without_changing_the_memory(project, monkeypatch):
    import dagster as dg_api

    monkeypatch.setenv("DAGSTER_HOME", str(project / ".synix" / "dagster"))  # its dagster.yaml reads it
    with dg_api.DagsterInstance.get() as instance:
        key = instance.get_dynamic_partitions("conversations")[0]
        before = instance.get_runs_count()
    out = dg(project, "launch", "--assets", "episodes", "--partition", key)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert "RUN_SUCCESS" in out.stdout + out.stderr
    with dg_api.DagsterInstance.get() as instance:
        assert instance.get_runs_count() == before + 1
    assert not any(plan_stale(project).values()), plan_stale(project)


def test_dg_launch_of_a_projection_rewrites_the_context_document(project):
    (project / "context.md").unlink()
    out = dg(project, "launch", "--assets", "synix_context")
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert "Memory of" in (project / "context.md").read_text()


def test_dg_dev_serves_the_project_and_shows_the_runs_dg_launch_made(project):
    dev = DagsterDev(project, env=clean_env(), program="dg").wait_serving()
    try:
        runs = dev.gql("{ runsOrError { ... on Runs { results { jobName status } } } }")["runsOrError"]["results"]
        assert any(r["jobName"] == "synix_build_all" and r["status"] == "SUCCESS" for r in runs), runs
        assert "synix_build_episodes" in {r["jobName"] for r in runs}
        assert {"episodes", "core", "synix_context"} <= dev.asset_keys()
        assert "Traceback" not in dev.output()
    finally:
        dev.stop()


def test_dg_works_at_the_repository_root_on_the_project_named_by_synix_project(project):
    env = clean_env(SYNIX_PROJECT=str(project))
    checked = dg(REPO, "check", "defs", env=env)
    assert checked.returncode == 0, (checked.stdout + checked.stderr)[-3000:]
    listed = dg(REPO, "list", "defs", "--json", env=env)
    assert listed.returncode == 0, (listed.stdout + listed.stderr)[-3000:]
    assert "synix_build_all" in {j["name"] for j in json.loads(listed.stdout)["jobs"]}
    launched = dg(REPO, "launch", "--job", "synix_build_all", env=env)
    assert launched.returncode == 0, (launched.stdout + launched.stderr)[-3000:]
    assert not any(plan_stale(project).values())


def test_at_the_root_dg_launch_and_dagster_asset_materialize_use_the_projects_home_and_readable_keys(
        project, monkeypatch):
    """Without DAGSTER_HOME a command at the root would make a throwaway home before loading any
    Synix code (no partitions: DagsterUnknownPartitionError; runs the UI never shows): the root's
    dagster.yaml gives it the project's own storage instead."""
    import dagster as dg_api

    monkeypatch.setenv("DAGSTER_HOME", str(project / ".synix" / "dagster"))
    with dg_api.DagsterInstance.get() as instance:
        key = instance.get_dynamic_partitions("conversations")[-1]  # a readable key the UI lists
        before = instance.get_runs_count()
    env = clean_env(SYNIX_PROJECT=str(project))
    for command in (["dagster", "asset", "materialize", "-m", "synix_assets.definitions"], ["dg", "launch"]):
        out = subprocess.run([str(BIN / command[0]), *command[1:], "--assets" if command[0] == "dg" else "--select",
                              "episodes", "--partition", key], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    launched = dg(REPO, "launch", "--job", "synix_build_all", env=env)
    assert launched.returncode == 0, (launched.stdout + launched.stderr)[-3000:]
    with dg_api.DagsterInstance.get() as instance:
        runs = instance.get_runs(limit=3)
        assert instance.get_runs_count() == before + 3  # all three in the home the project's UI reads
    assert [r.job_name for r in runs] == ["synix_build_all", "__ASSET_JOB", "__ASSET_JOB"]
    assert runs[1].tags["dagster/partition"] == runs[2].tags["dagster/partition"] == key
    assert not list(REPO.glob(".tmp_dagster_home_*"))  # Dagster's scratch folder is gone again
