"""The eval as a workbench, end to end: `synix eval locomo` in a real subprocess and
`pipeline.eval()` from Python show the builds and questions with an ETA, name the branch they
build (not the project folder), head the table with strict recall_all beside recall_any, and
record where the misses' evidence was lost."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from synix_assets.app.init import init_project
from synix_assets.eval import workspace
from synix_assets.project import ProjectPaths

REPO = Path(__file__).resolve().parents[2]


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY", "SYNIX_PROJECT", "SYNIX_STORE_PATH")}
    return {**env, "SYNIX_LLM_PROVIDER": "extractive", "DAGSTER_HOME": str(home), "PYTHONPATH": str(REPO)}


def test_cli_eval_shows_build_and_question_progress_naming_the_branch_not_the_folder(tmp_path, locomo_file):
    init_project(tmp_path / "mem", template="monthly")  # the folder is "mem", the branch main
    proc = subprocess.run(
        [sys.executable, "-m", "synix_assets.cli.main", "-p", str(tmp_path / "mem"), "eval", "locomo",
         "--data", str(locomo_file), "--modes", "fts", "--baseline", "raw-rag"],
        capture_output=True, text=True, timeout=900, env=_env(tmp_path / "dagster"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert any(line.startswith("branch main: building conv-t (case 1/1) through the pipeline "
                               "(memories built 0/1") for line in lines), proc.stderr
    assert not any(line.startswith("branch mem") for line in lines)
    assert any(line.startswith("branch main: built conv-t") and "memories built 1/1" in line for line in lines)
    last = [line for line in lines if "questions" in line][-1]
    assert last.startswith("branch main: questions 5/5") and "ETA 0 s" in last
    assert "S all@5" in proc.stdout and "T all@10" in proc.stdout  # strict recall beside recall_any
    # the memory's vectors went to the project's shared file, and raw RAG found its turns there
    assert workspace.vector_cache(ProjectPaths(tmp_path / "mem")).is_file()


def test_pipeline_eval_from_python_reports_progress_and_where_misses_were_lost(tmp_path, locomo_file):
    init_project(tmp_path / "mem", template="monthly")
    script = tmp_path / "mem" / "measure.py"
    script.write_text(
        "import sys\n"
        "from synix import Pipeline\n"
        "from synix_assets.eval.progress import Progress\n"
        "pipeline = Pipeline.load('pipeline.py')\n"
        "seen = []\n"
        f"result = pipeline.eval('locomo', data={str(locomo_file)!r}, modes=('fts',), progress=seen.append)\n"
        "print('STAGES', sorted({p.stage for p in seen}), 'BRANCHES', sorted({p.branch for p in seen}))\n"
        "print('LAST', seen[-1].done, seen[-1].total, seen[-1].eta_s)\n"
        "print('ALL', result.figures['turn_recall_all@10'], 'ATTRIBUTION', result.figures['attribution']['missed_questions'])\n"
        "pipeline.eval('locomo', data=" + repr(str(locomo_file)) + ", modes=('fts',))\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path / "mem", capture_output=True, text=True,
                          timeout=900, env=_env(tmp_path / "dagster"))
    assert proc.returncode == 0, proc.stderr
    stages = proc.stdout.split("STAGES ")[1].split(" BRANCHES")[0]
    assert all(f"'{stage}'" in stages for stage in ("build", "built", "layer", "questions"))
    assert "BRANCHES ['main']" in proc.stdout
    assert "LAST 5 5 0.0" in proc.stdout
    all10 = float(proc.stdout.split("ALL ")[1].split()[0])
    missed = int(proc.stdout.split("ATTRIBUTION ")[1].split()[0])
    assert 0.0 <= all10 <= 1.0 and missed == round((1 - all10) * 5)  # every strict miss is explained
    # the default prints the same lines as the CLI on stderr
    assert "branch main: building conv-t (case 1/1)" in proc.stderr and "branch main: questions 5/5" in proc.stderr
