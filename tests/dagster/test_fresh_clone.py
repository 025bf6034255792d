"""A fresh copy of the repository, used the way its README says, with no environment variable set:
`dagster definitions validate`, the one-command whole build, a readable partition key given to
`dagster asset materialize`, and `dagster dev` showing the built demo and the runs those commands
made: every command at the root uses the demo's own Dagster home (the root's dagster.yaml)."""
from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.dagster.live import BIN, DagsterDev, clean_env, dagster_stale

REPO = Path(__file__).resolve().parents[2]
SKIP = shutil.ignore_patterns(".git", ".synix-demo", ".ci-venv", "__pycache__", ".tmp_dagster_home_*",
                              "*.egg-info", ".pytest_cache", "out", "*.png")


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    root = tmp_path_factory.mktemp("fresh") / "synix"
    shutil.copytree(REPO, root, ignore=SKIP)
    return root, clean_env(PYTHONPATH=str(root))


def _dagster(clone_root: Path, env: dict, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "dagster"), *args], cwd=clone_root, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_definitions_validate_at_the_root_without_dagster_home(clone):
    root, env = clone
    out = _dagster(root, env, "definitions", "validate")
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert (root / ".synix-demo" / "pipeline.py").exists()  # the demo project was made on first load
    assert "Traceback" not in out.stderr


def test_one_documented_command_builds_the_whole_memory(clone):
    root, env = clone
    out = _dagster(root, env, "job", "execute", "-m", "synix_assets.definitions", "-j", "synix_build_all")
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    from synix_assets.project import ProjectPaths

    demo = ProjectPaths(root / ".synix-demo")
    assert "Memory of" in (demo.root / "context.md").read_text()
    assert demo.search.exists()


def _demo_instance(root: Path, monkeypatch):
    import dagster as dg

    monkeypatch.setenv("DAGSTER_HOME", str(root / ".synix-demo" / ".synix" / "dagster"))
    return dg.DagsterInstance.get()


def test_a_readable_partition_key_materializes_and_dg_launches_at_the_root_in_the_demos_own_dagster_home(clone, monkeypatch):
    root, env = clone
    with _demo_instance(root, monkeypatch) as instance:
        key = instance.get_dynamic_partitions("conversations")[0]  # what the UI lists
        assert re.match(r"\d{4}-\d{2}-\d{2}-[a-z]", key), key  # date and title, not an export id
        before = instance.get_runs_count()
    out = _dagster(root, env, "asset", "materialize", "-m", "synix_assets.definitions",
                   "--select", "episodes", "--partition", key)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    out = subprocess.run([str(BIN / "dg"), "launch", "--assets", "episodes", "--partition", key], cwd=root,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    with _demo_instance(root, monkeypatch) as instance:
        assert instance.get_runs_count() == before + 2  # kept where the UI reads, not thrown away
        assert [r.tags["dagster/partition"] for r in instance.get_runs(limit=2)] == [key, key]


def test_dagster_dev_at_the_root_shows_the_built_demo_and_the_runs_made_at_the_root(clone):
    root, env = clone
    dev = DagsterDev(root, env=env).wait_serving()
    try:
        assert {"transcripts", "episodes", "monthly", "core", "memory_index"} <= dev.asset_keys()
        runs = dev.gql("{ runsOrError { ... on Runs { results { jobName status } } } }")["runsOrError"]["results"]
        assert {"jobName": "synix_build_all", "status": "SUCCESS"} in runs  # `dagster job execute` above
        assert {"jobName": "__ASSET_JOB", "status": "SUCCESS"} in runs  # `dagster asset materialize` above
        deadline = time.monotonic() + 120
        status = {}
        while time.monotonic() < deadline:  # the sensor's first tick syncs the store into this home
            status = dev.staleness()
            if status["episodes"].get("FRESH") == 24 and status["core"].get("FRESH") == 1:
                break
            time.sleep(2)
        assert status["episodes"] == {"FRESH": 24}, status
        assert not any(dagster_stale(status).values()), status
        assert "Traceback" not in dev.output()
    finally:
        dev.stop()
