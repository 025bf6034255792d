"""A pipeline declared in a script (not a `synix init` project): where its state lives, how
relative paths resolve, and that the CLI and Dagster load the same pipeline from the script."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.python_api.design_blocks import CHATGPT, REPO, run_script

pytestmark = pytest.mark.slow

SCRIPT = '''
from synix import Pipeline, Record


def summary(record: Record) -> str:
    return f"Summarize:\\n{record.content}"


pipeline = Pipeline("script-memory", agent="me")
pipeline.source("chatgpt", file="exports/chatgpt.json", format="chatgpt-export")
pipeline.transform("summaries", from_="chatgpt", prompt=summary)
pipeline.artifact("memory-index", from_=["summaries"], surface="search")
'''


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SYNIX_LLM_PROVIDER", "SYNIX_PROJECT")}
    return {**env, "PYTHONPATH": str(REPO), **extra}


@pytest.fixture
def folder(tmp_path) -> Path:
    root = tmp_path / "agent"
    (root / "exports").mkdir(parents=True)
    (root / "exports" / "chatgpt.json").symlink_to(CHATGPT)  # read in place, not copied
    return root


@pytest.mark.corpus
def test_a_scripts_state_lives_next_to_it_and_relative_paths_resolve_there_not_in_the_cwd(folder, tmp_path):
    (folder / "memory.py").write_text(SCRIPT + "report = pipeline.run()\nprint('BUILT', report.total('built'))\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run([sys.executable, str(folder / "memory.py")], cwd=elsewhere, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "BUILT" in proc.stdout
    assert (folder / ".synix" / "synix.db").is_file() and not (elsewhere / ".synix").exists()
    assert 'pipeline = "memory.py"' in (folder / ".synix" / "config.toml").read_text()
    # the CLI finds the project from inside the folder and loads the script's pipeline
    stats = subprocess.run([sys.executable, "-m", "synix_assets.cli", "stats", "--json"], cwd=folder,
                           env=_env(), capture_output=True, text=True, timeout=120)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["steps"]["summaries"]["records"] > 150


@pytest.mark.corpus
def test_dagster_builds_the_scripts_pipeline_through_its_definitions(folder):
    (folder / "memory.py").write_text(SCRIPT + "print(pipeline.plan().steps)\n")
    proc = subprocess.run([sys.executable, str(folder / "memory.py")], env=_env(), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    env = _env(SYNIX_PROJECT=str(folder), DAGSTER_HOME=str(folder / ".synix" / "dagster"))
    (folder / ".synix" / "dagster").mkdir(parents=True, exist_ok=True)
    listed = subprocess.run([sys.executable, "-m", "dagster", "asset", "list", "-m", "synix_assets.definitions"],
                            env=env, capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert {"chatgpt_conversations", "summaries", "memory_index"} <= set(listed.stdout.split())  # Dagster names: - becomes _
    run = subprocess.run([sys.executable, "-m", "dagster", "job", "execute", "-m", "synix_assets.definitions",
                          "-j", "synix_build_all"], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    import synix

    assert synix.open(folder).stats()["steps"]["summaries"]["records"] > 150


@pytest.mark.corpus
def test_a_script_beside_another_projects_pipeline_py_is_refused_with_the_fix(folder):
    (folder / "pipeline.py").write_text(SCRIPT)
    proc = run_script(folder, "experiment.py", SCRIPT + "pipeline.plan()\n")
    assert proc.returncode == 1
    line = proc.stderr.strip().splitlines()[-1]
    assert "is the project of its pipeline.py, and experiment.py declares another pipeline there" in line
    assert not (folder / ".synix").exists()


@pytest.mark.corpus
def test_a_pipeline_changed_after_its_first_action_is_refused(folder):
    proc = run_script(folder, "memory.py", SCRIPT + "pipeline.plan()\n"
                      "pipeline.aggregate('monthly', from_='summaries', period='month', prompt=summary)\n"
                      "pipeline.plan()\n")
    assert proc.returncode == 1
    assert "differs from what memory.py declares before its first action (step monthly)" in proc.stderr


def test_a_pipeline_declared_outside_a_file_says_how_to_act_on_it():
    import synix

    # as in a REPL: the code that makes the pipeline has no file
    pipeline = eval(compile("synix.Pipeline('repl')", "<stdin>", "eval"), {"synix": synix})
    assert pipeline.declared_in is None
    with pytest.raises(synix.SynixError, match="was declared outside a file"):
        pipeline.plan()
