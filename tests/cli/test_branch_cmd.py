"""The branch flow from the command line, as real `synix` processes: create, plan, run, search,
status, diff, promote, undo, delete and gc — each with --json and exact counts."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOPICAL = REPO / "synix_assets" / "examples" / "topical.py"


def synix(*args: str, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "SYNIX_LLM_PROVIDER": "extractive"}
    env.pop("DAGSTER_HOME", None)
    proc = subprocess.run([sys.executable, "-m", "synix_assets.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    if ok:
        assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


def as_json(*args: str, cwd: Path) -> dict:
    return json.loads(synix(*args, "--json", cwd=cwd).stdout)


def counts(report: dict) -> dict:
    return {k: (v["built"], v["cached"]) for k, v in report["layers"].items()}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def project(tmp_path):
    synix("init", "mem", "--demo", cwd=tmp_path)
    root = tmp_path / "mem"
    assert as_json("run", cwd=root)["branch"] == "main"
    return root


def test_branch_flow_from_the_cli_with_json_and_exact_counts(project):
    main_context = digest(project / "context.md")
    created = as_json("branch", "create", "topical", "--pipeline", str(TOPICAL), cwd=project)
    assert created["branch"] == "topical" and created["from"] == "main"

    plan = as_json("plan", "--branch", "topical", cwd=project)
    assert plan["branch"] == "topical"
    assert plan["layers"]["episodes"]["stale"] == 0 and plan["layers"]["topics"]["stale"] == 6

    run = as_json("run", "--branch", "topical", cwd=project)
    assert run["branch"] == "topical"
    assert counts(run) == {"transcripts": (0, 24), "episodes": (0, 24), "topics": (6, 0), "core": (1, 0)}
    assert digest(project / "context.md") == main_context  # main's files untouched
    text = synix("run", "--branch", "topical", cwd=project).stdout
    assert "Nothing changed" in text and "Branch: topical" in text

    status = as_json("status", "--branch", "topical", cwd=project)
    assert status["branch"] == "topical" and status["layers"]["topics"]["stale"] == 0
    hits = as_json("search", "marathon", "--branch", "topical", "--layers", "topics", cwd=project)["hits"]
    assert hits and all(h["layer"] == "topics" for h in hits)

    diff = as_json("branch", "diff", "topical", cwd=project)
    steps = {s["step"]: s["change"] for s in diff["steps"]}
    assert steps["monthly"] == "removed" and steps["topics"] == "added" and steps["core"] == "changed"
    layers = {d["layer"]: d for d in diff["layers"]}
    assert len(layers["topics"]["added"]) == 6 and len(layers["monthly"]["removed"]) == 6
    assert layers["episodes"]["shared"] == 24 and len(layers["core"]["changed"]) == 1
    record = as_json("branch", "diff", "topical", "--record", layers["core"]["changed"][0]["branch"],
                     cwd=project)
    assert record["layer"] == "core"

    listed = {b["name"]: b for b in as_json("branch", "list", cwd=project)}
    assert listed["topical"]["built"] is True

    promoted = as_json("branch", "promote", "topical", cwd=project)
    assert promoted["promoted"] == "topical"
    assert digest(project / "context.md") == digest(project / ".synix/branches/topical/context.md")
    after = as_json("run", cwd=project)
    assert after["llm_calls"] == 0 and counts(after)["topics"] == (0, 6)

    as_json("branch", "promote", "main@previous", cwd=project)
    assert digest(project / "context.md") == main_context

    as_json("branch", "delete", "topical", cwd=project)
    dry = as_json("gc", "--dry-run", cwd=project)
    assert dry["dry_run"] is True and dry["removed"] == 0


def test_building_an_unknown_branch_is_one_clear_line(project):
    proc = synix("run", "--branch", "ghost", cwd=project, ok=False)
    assert proc.returncode != 0
    assert "no branch 'ghost'" in proc.stderr and len(proc.stderr.strip().splitlines()) <= 2
