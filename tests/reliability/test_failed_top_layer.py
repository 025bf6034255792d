"""A failed partition of the top layer (the core) does not cost the rest of the memory (design
000 §10.2: a refused output is logged and the build goes on): the search index is written for the
layers that were built and says what is missing, `synix status` and `synix plan` name the failure,
Dagster records it, no context document is drawn from the missing core, and the build still exits
non-zero. End to end through `synix` subprocesses with the fake provider."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

import synix
from synix_assets.app.memory.service import MemoryService
from synix_assets.dagster_defs.graph import layer_key

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]

CORE_LINE = 'pipeline.fold("core", from_="monthly", prompt=prompts.core_memory, checkpoint_every=6)\n'
REFUSING_CORE = '''
def refusing_core(record, state):
    return prompts.core_memory(record, state) + "\\nSYNIX_REFUSE"


pipeline.fold("core", from_="monthly", prompt=refusing_core, checkpoint_every=6)
'''


def _cli(paths, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNIX_FAKE")}
    env.update(SYNIX_LLM_PROVIDER="fake", PYTHONPATH=str(REPO))
    return subprocess.run([PY, "-m", "synix_assets.cli.main", "-p", str(paths.root), *args],
                          env=env, capture_output=True, text=True, timeout=300)


def _materialized(paths, name: str) -> bool:
    instance = dg.DagsterInstance.from_config(str(paths.dagster_home))
    try:
        return instance.get_latest_materialization_event(layer_key(name)) is not None
    finally:
        instance.dispose()


def test_a_refused_core_leaves_the_built_layers_searchable_and_writes_no_context_document(
        small_project, monkeypatch):
    paths = small_project(4)
    original = (paths.root / "pipeline.py").read_text()
    assert CORE_LINE in original
    (paths.root / "pipeline.py").write_text(original.replace(CORE_LINE, REFUSING_CORE))

    first = _cli(paths, "run")
    assert first.returncode == 1, first.stdout + first.stderr
    line = " ".join(first.stderr.split())
    assert "core/all" in line and "refused" in line and "Traceback" not in line
    assert "Projections updated: memory-index" in first.stdout
    assert "Not written: context" in " ".join(first.stdout.split())
    assert not (paths.root / "context.md").exists()  # never drawn from no core

    found = _cli(paths, "search", "topic1", "--json")
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert answer["hits"] and {h["layer"] for h in answer["hits"]} <= {"episodes", "monthly"}
    assert "core/all" in answer["incomplete"] and "synix run" in answer["incomplete"]
    shown = _cli(paths, "search", "topic1")
    assert "the memory is incomplete" in shown.stdout and "core/all" in shown.stdout
    # the same answer through the Python API and the service HTTP and MCP search call
    assert synix.open(paths.root).search("topic1").incomplete == answer["incomplete"]
    service = MemoryService(paths)
    try:
        served = service.search("topic1")
    finally:
        service.close()
    assert served["hits"] and served["incomplete"] == answer["incomplete"]

    status = json.loads(_cli(paths, "status", "--json").stdout)
    assert status["layers"]["core"]["failed"] == 1 and status["last_run"]["status"] == "failed"
    assert [(f["layer"], f["partition"]) for f in status["failures"]] == [("core", "all")]
    assert "refused" in status["failures"][0]["error"]
    assert "failed core/all" in _cli(paths, "status").stdout
    plan = _cli(paths, "plan")
    assert "1 failed before, retried" in " ".join(plan.stdout.split()), plan.stdout

    monkeypatch.setenv("DAGSTER_HOME", str(paths.dagster_home))  # the instance's yaml reads it
    assert _materialized(paths, "memory-index") and not _materialized(paths, "core")
    assert not _materialized(paths, "context")

    # the prompt fixed: the next build fills the gap, writes the context and is a clean success
    (paths.root / "pipeline.py").write_text(original)
    fixed = _cli(paths, "run", "--json")
    assert fixed.returncode == 0, fixed.stderr
    assert json.loads(fixed.stdout)["layers"]["core"]["built"] == 1
    assert json.loads(fixed.stdout)["projections"]["context"] == {"changed": True}
    assert "Drawn from core (1 artifact" in (paths.root / "context.md").read_text()
    again = json.loads(_cli(paths, "search", "topic1", "--json").stdout)
    assert "incomplete" not in again and again["hits"]
    assert synix.open(paths.root).search("topic1").incomplete is None
    assert _materialized(paths, "core") and _materialized(paths, "context")
    assert json.loads(_cli(paths, "status", "--json").stdout)["failures"] == []
