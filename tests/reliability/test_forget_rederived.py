"""A forget can always finish: an answer re-derived without the forgotten conversation that is
byte-identical to one derived from it is told apart by its derivation record, so verify passes
and the next `synix run` builds; a forget that cannot verify is shown by `synix status` with the
command that finishes it. End to end through the CLI in subprocesses with the fake provider."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from synix_resources.store.artifact_store import ArtifactStore

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]

MONTHLY_LINE = 'pipeline.aggregate("monthly", from_="episodes", period="month", prompt=prompts.monthly_rollup)\n'
# A rollup that shows the model only a month's first two conversations (as a budget would): a
# conversation added later leaves the month's prompt, its answer and the fold over it unchanged.
FIRST_TWO = '''
from synix_assets.pipeline.prompts import prompt


@prompt(version="1")
def first_two(records, period):
    return prompts.monthly_rollup(records[:2], period)


pipeline.aggregate("monthly", from_="episodes", period="month", prompt=first_two)
'''


def _cli(paths, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNIX_FAKE")}
    env.update(SYNIX_LLM_PROVIDER="fake", PYTHONPATH=str(REPO))
    return subprocess.run([PY, "-m", "synix_assets.cli.main", "-p", str(paths.root), *args],
                          env=env, capture_output=True, text=True, timeout=300)


def _current(paths, layer: str, key: str):
    store = ArtifactStore(paths.store)
    try:
        return store.current(layer, key)
    finally:
        store.close()


def test_forgetting_a_late_conversation_that_left_the_fold_byte_identical_verifies_and_run_builds(
        small_project, claude_export, conversation):
    paths = small_project(6)  # three conversations in each of 2025-01 and 2025-02
    text = (paths.root / "pipeline.py").read_text()
    assert MONTHLY_LINE in text
    (paths.root / "pipeline.py").write_text(text.replace(MONTHLY_LINE, FIRST_TWO))
    assert _cli(paths, "run").returncode == 0
    month, core = _current(paths, "monthly", "2025-02"), _current(paths, "core", "all")
    claude_export(paths.root / "exports" / "late.json",
                  [conversation("late-1", "Late", "2025-02-27", "latetopic zebra item")])
    assert _cli(paths, "run").returncode == 0
    with_late = _current(paths, "monthly", "2025-02")
    assert _current(paths, "episodes", "late-1") is not None
    # the premise: the month was rolled up again with the late conversation, to the same bytes
    assert with_late.artifact_id != month.artifact_id and with_late.content == month.content
    assert _current(paths, "core", "all").content == core.content
    forgot = _cli(paths, "forget", "late-1")
    assert forgot.returncode == 0, forgot.stderr
    assert "verified: no trace" in forgot.stdout
    status = json.loads(_cli(paths, "status", "--json").stdout)
    assert status["pending_forget"] is None
    again = _cli(paths, "run", "--json")
    assert again.returncode == 0, again.stderr
    assert _current(paths, "episodes", "late-1") is None
    assert _current(paths, "core", "all").content == core.content


def test_status_names_a_pending_forget_and_the_command_that_finishes_it(small_project):
    paths = small_project(4)
    assert _cli(paths, "run").returncode == 0
    transcript = _current(paths, "transcripts", "conv-1").content
    copy = paths.root / "notes.txt"  # a copy the user made: forget cannot verify while it exists
    copy.write_text(transcript)
    forgot = _cli(paths, "forget", "conv-1")
    assert forgot.returncode == 1 and "forget of conv-1 is not finished" in forgot.stderr
    shown = _cli(paths, "status")
    assert shown.returncode == 0, shown.stderr
    assert "forget of conv-1 is not finished — finish it: synix forget" in " ".join(shown.stdout.split())
    status = json.loads(_cli(paths, "status", "--json").stdout)
    assert status["pending_forget"] == {"target": "conv-1", "finish_with": "synix forget"}
    copy.unlink()
    finished = _cli(paths, "forget")
    assert finished.returncode == 0, finished.stderr
    assert json.loads(_cli(paths, "status", "--json").stdout)["pending_forget"] is None
    assert "not finished" not in _cli(paths, "status").stdout
