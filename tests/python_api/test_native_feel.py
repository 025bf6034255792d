"""The Python door reads like a Python library: a `Pipeline` shows what it is in its repr,
`help(synix.Pipeline)` lists what a script declares and does (not the engine's questions of the
spec), a missing export is named as the file (or folder) it is, and an offline plan and run say
why the run counts no tokens the plan estimated. Scripts run as a user runs them: `python
memory.py` in a folder of their own."""
from __future__ import annotations

import os
import pydoc
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import synix
from synix_assets.pipeline.spec import ENGINE_METHODS

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "synix_assets" / "demo" / "chatgpt_demo.json"

SCRIPT = '''\
from synix import Pipeline
from synix_assets.pipeline import builtin_prompts as prompts

pipeline = Pipeline("personal-memory", agent="me")
pipeline.source("chatgpt", {source}, format="chatgpt-export")
pipeline.transform("summaries", from_="chatgpt", prompt=prompts.episode_summary)
pipeline.fold("core", from_="summaries", prompt=prompts.core_memory)
pipeline.artifact("memory-index", from_=["summaries"], surface="search")
'''


def _user_run(folder: Path, body: str,
              source: str = 'file="exports/conversations.json"') -> subprocess.CompletedProcess[str]:
    """`python memory.py` in `folder`, offline: no key, no provider chosen."""
    script = SCRIPT.replace("{source}", source) + textwrap.dedent(body)
    (folder / "memory.py").write_text(script, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNIX_", "ANTHROPIC_"))}
    env["DAGSTER_HOME"] = str(folder / "dagster_home_unused")
    return subprocess.run([sys.executable, "memory.py"], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)


def test_pipeline_repr_names_its_sources_steps_artifacts_and_project(tmp_path):
    pipeline = synix.Pipeline("personal-memory", base_dir=tmp_path)
    pipeline.source("chatgpt", file="exports/conversations.json", format="chatgpt-export")
    pipeline.search_index("memory-index", from_=["chatgpt"])
    assert repr(pipeline) == (f"Pipeline('personal-memory', sources=['chatgpt'], steps=[], "
                              f"artifacts=['memory-index'], project={str(tmp_path.resolve())!r})")


def test_help_of_pipeline_lists_the_public_api_and_not_the_engines_methods(tmp_path):
    text = pydoc.render_doc(synix.Pipeline, renderer=pydoc.plaintext)
    for public in ("source(", "transform(", "aggregate(", "fold(", "plan(", "run(", "search(",
                   "branch(", "purge(", "to_toml(", "from_toml(", "create_memory("):
        assert f"|  {public}" in text, public
    for hidden in (*ENGINE_METHODS, "__weakref__", "__dict__", "__abstractmethods__"):
        # the whole name: the engine's `resolve` is hidden, the ledger's `resolve_events` public
        assert f"|  {hidden}(" not in text and f"|  {hidden}\n" not in text, hidden
    assert "|  resolve_events(" in text
    # unlisted, not gone: the engine still asks the spec
    pipeline = synix.Pipeline("p", base_dir=tmp_path)
    pipeline.source("chatgpt", file="x.json")
    assert pipeline.layer_order() == []


@pytest.mark.parametrize("declared, message", [
    ('file="exports/conversations.json"', "the export file {root}/exports/conversations.json does not exist"),
    ('path="exports"', "no export files in the folder {root}/exports"),
    ('path="chats"', "the export folder {root}/chats does not exist"),
])
def test_a_missing_export_is_named_as_the_file_or_folder_it_is(tmp_path, declared, message):
    (tmp_path / "exports").mkdir()
    body = '''
    try:
        pipeline.plan()
    except Exception as exc:
        print(exc)
    '''
    done = _user_run(tmp_path, body, source=declared)
    root = tmp_path.resolve()
    assert message.format(root=root) in done.stdout, done.stdout + done.stderr
    assert "no export files in " + str(root / "exports" / "conversations.json") not in done.stdout


def test_offline_plan_and_run_say_why_the_run_counts_no_tokens(tmp_path):
    (tmp_path / "exports").mkdir()
    shutil.copy(DEMO, tmp_path / "exports" / "conversations.json")
    done = _user_run(tmp_path, '''
    print(pipeline.plan())
    print(pipeline.run())
    ''')
    assert done.returncode == 0, done.stderr
    estimate = next(line for line in done.stdout.splitlines() if line.startswith("Estimated tokens:"))
    assert not estimate.startswith("Estimated tokens: 0 ")
    assert "the offline extractive summariser calls no model, so it counts no tokens" in estimate
    counted = next(line for line in done.stdout.splitlines() if line.strip().startswith("Tokens:"))
    assert counted.strip().startswith("Tokens: 0 input / 0 output (the offline extractive summariser "
                                      "calls no model, so it counts no tokens; set ANTHROPIC_API_KEY")
