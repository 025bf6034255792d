"""The asset graph Dagster sees, pinned as reviewed JSON: every asset's key, deps (with partition
mapping), partitions, code version and the inputs it is hashed from, group, kinds, tags, owners,
description, metadata, automation and policies, checks; the jobs with their selections, the
sensors, schedules, resources and executor. One snapshot per project shape: the monthly, topical
and live templates, and a project with one branch (tests/support/asset_graph.py builds them).

A change to what Dagster sees fails here with a unified diff; when it is intended, rewrite the
snapshots with `--update-asset-snapshots` and review the JSON diff in the commit.
"""
from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from synix_resources.fingerprints import config_hash, sha256_text
from tests.support.asset_graph import PROJECTS, dumps, make_project, snapshot

REPO = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = ("PYTHONPATH=$PWD python -m pytest -p no:cacheprovider "
          "tests/dagster/test_asset_graph_snapshot.py --update-asset-snapshots")


def snapshot_file(kind: str) -> Path:
    return SNAPSHOTS / f"{kind}.json"


def mismatch(kind: str, expected: str | None, actual: str) -> str | None:
    """None when `actual` is the reviewed snapshot, else what to tell the developer."""
    shown = snapshot_file(kind).relative_to(REPO)
    if expected is None:
        return f"no asset-graph snapshot {shown} yet; write it with:\n  {UPDATE}"
    if expected == actual:
        return None
    diff = "".join(difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                        fromfile=f"{shown} (reviewed)", tofile="compiled now"))
    return (f"the {kind} project's asset graph differs from {shown}:\n{diff}\n"
            f"If the change is intended, rewrite the snapshots and review their diff:\n  {UPDATE}")


@pytest.mark.parametrize("kind", PROJECTS)
def test_compiled_asset_graph_matches_its_reviewed_snapshot(kind, tmp_path, update_asset_snapshots):
    actual = dumps(snapshot(make_project(kind, tmp_path / "mem")))
    path = snapshot_file(kind)
    if update_asset_snapshots:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    problem = mismatch(kind, path.read_text(encoding="utf-8") if path.exists() else None, actual)
    if problem:
        pytest.fail(problem, pytrace=False)


@pytest.mark.parametrize("kind", PROJECTS)
def test_every_code_version_is_the_hash_of_the_inputs_the_snapshot_records(kind, tmp_path):
    """The recorded inputs are all there is: the step's version is the hash of its
    Pipeline.version_inputs, and the code version hashes it with the upstream code versions."""
    assets = {a["key"]: a for a in snapshot(make_project(kind, tmp_path / "mem"))["assets"]}
    versioned = {k: a for k, a in assets.items() if a["code_version"] is not None}
    assert versioned and all(a["code_version_inputs"] is not None for a in versioned.values())
    assert all(a["code_version_inputs"] is None for k, a in assets.items() if k not in versioned)
    for key, a in versioned.items():
        inputs = a["code_version_inputs"]
        own = config_hash(inputs["step"]) if "step" in inputs else inputs["projection"]
        ups = [assets[u]["code_version"] for u in inputs["upstream"]]
        assert sha256_text("\n".join([own, *ups]))[:16] == a["code_version"], key


def test_snapshot_is_the_same_from_another_folder_and_another_process(tmp_path):
    here = dumps(snapshot(make_project("branch", tmp_path / "mem")))
    path = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": os.pathsep.join(path)}
    other = subprocess.run([sys.executable, "-m", "tests.support.asset_graph", "branch",
                            str(tmp_path / "elsewhere" / "another memory")],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert other.returncode == 0, other.stderr[-2000:]
    assert mismatch("branch", here, other.stdout) is None, mismatch("branch", here, other.stdout)


def test_a_prompt_edit_fails_the_comparison_with_a_diff_naming_the_changed_versions(tmp_path):
    root = make_project("monthly", tmp_path / "mem")
    pipeline = root / "pipeline.py"
    text = pipeline.read_text(encoding="utf-8")
    pipeline.write_text(text.replace("prompt=prompts.episode_summary",
                                     "prompt=lambda r: 'Shorter: ' + r.content"), encoding="utf-8")
    reviewed = snapshot_file("monthly").read_text(encoding="utf-8")
    problem = mismatch("monthly", reviewed, dumps(snapshot(root)))
    assert problem is not None and "--update-asset-snapshots" in problem
    assert "--- tests/dagster/snapshots/monthly.json (reviewed)" in problem
    changed = [line for line in problem.splitlines() if line.startswith("+") and "code_version\"" in line]
    assert len(changed) == 5  # episodes, monthly, core and both projections; transcripts keeps its own


def test_snapshot_records_automation_policies_mappings_and_standalone_checks_synix_may_add(tmp_path):
    """Dagster features no Synix project uses yet are recorded in full when one starts to, and a
    value the snapshot cannot record deterministically stops it instead of landing as a repr."""
    import dagster as dg

    from tests.support.asset_graph import Normaliser, describe

    daily = dg.DailyPartitionsDefinition(start_date="2024-01-01")

    @dg.asset(partitions_def=daily, automation_condition=dg.AutomationCondition.eager(),
              metadata={"where": dg.MetadataValue.path(str(tmp_path / "file"))})
    def upstream():
        ...

    @dg.asset(partitions_def=daily,
              deps=[dg.AssetDep(upstream, partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-1))])
    def downstream():
        ...

    @dg.asset_check(asset=upstream)
    def fresh():
        return dg.AssetCheckResult(passed=True)

    defs = dg.Definitions(assets=[upstream, downstream], asset_checks=[fresh],
                          schedules=[dg.ScheduleDefinition(name="nightly", cron_schedule="0 1 * * *",
                                                           target=[downstream])])
    shot = describe(defs, tmp_path, {})
    assets = {a["key"]: a for a in shot["assets"]}
    assert assets["upstream"]["automation_condition"]["label"] == "eager"
    assert assets["upstream"]["metadata"]["where"] == {"metadata_type": "PathMetadataValue",
                                                       "value": "<project>/file"}
    assert assets["upstream"]["partitions_def"]["cron_schedule"] == "0 0 * * *"
    assert assets["downstream"]["deps"] == [{"asset": "upstream", "partition_mapping": {
        "__class__": "TimeWindowPartitionMapping", "allow_nonexistent_upstream_partitions": False,
        "end_offset": 0, "start_offset": -1}}]
    assert [(c["asset"], c["name"]) for c in shot["standalone_checks"]] == [("upstream", "fresh")]
    assert [(s["name"], s["cron_schedule"]) for s in shot["schedules"]] == [("nightly", "0 1 * * *")]
    with pytest.raises(TypeError, match="teach tests/support/asset_graph.py"):
        Normaliser(tmp_path).plain({"opaque": object()})
