"""Scripts as pipelines, the design's own flow (000 §4.5: run, branch, promote, go on), run as
real scripts in subprocesses with the fake provider: after a promote the script and the project
agree on what main is; a branch override carries the names its prompt uses; a script's top level
runs once per load, not once per action."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.python_api.design_blocks import REPO

pytestmark = pytest.mark.slow
DEMO = REPO / "synix_assets" / "demo" / "claude_demo.json"

HEAD = '''import json
from synix import Pipeline, Record
import synix

print("TOP LEVEL RAN")


def summary(record: Record) -> str:
    return f"Summarize:\\n{record.content}"


def better(record: Record) -> str:
    return f"Summarize better, in bullets:\\n{record.content}"


pipeline = Pipeline("script-memory", agent="me")
pipeline.source("claude", file="exports/claude.json", format="claude-export")
pipeline.transform("summaries", from_="claude", prompt=summary)
pipeline.artifact("memory-index", from_=["summaries"], surface="search")
'''

FLOW = HEAD + '''
first = pipeline.run()
branch = pipeline.branch("better")
branch.transform("summaries", from_="claude", prompt=better)
branch.run()
branch.promote()
after = pipeline.run()
print("AFTER", json.dumps(after.to_json()["layers"]["summaries"]))
print("PROMPT", pipeline.steps["summaries"].prompt.__name__)
'''


def _run(folder: Path, name: str, code: str | None = None) -> subprocess.CompletedProcess:
    script = folder / name
    if code is not None:
        script.write_text(code)
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake", "PYTHONPATH": str(REPO)}
    env.pop("SYNIX_PROJECT", None)
    proc = subprocess.run([sys.executable, str(script)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _line(proc, tag: str) -> str:
    return next(l.split(" ", 1)[1] for l in proc.stdout.splitlines() if l.startswith(tag + " "))


@pytest.fixture
def folder(tmp_path) -> Path:
    root = tmp_path / "agent"
    (root / "exports").mkdir(parents=True)
    (root / "exports" / "claude.json").symlink_to(DEMO)
    return root


def _main_prompt(folder: Path) -> str:
    import synix

    return synix.open(folder).steps["summaries"].prompt.__name__


@pytest.mark.parametrize("name", ["memory.py", "pipeline.py"])
def test_after_a_promote_the_script_goes_on_with_main_as_promoted_not_the_old_prompt(folder, name):
    proc = _run(folder, name, FLOW)
    after = json.loads(_line(proc, "AFTER"))
    assert after["built"] == 0 and after["cached"] == 10  # nothing rebuilt with the old prompt
    assert _line(proc, "PROMPT") == "better"  # the script's pipeline is main's promoted one
    assert "acting on main's promoted definition" in proc.stderr
    assert _main_prompt(folder) == "better"
    # run again, unchanged: main stays the promoted definition and nothing is rebuilt
    again = _run(folder, name)
    assert json.loads(_line(again, "AFTER"))["built"] == 0
    assert _main_prompt(folder) == "better"
    # an edited script is main's definition again (as before any promote)
    (folder / name).write_text(HEAD + "pipeline.plan()\n")
    edited = _run(folder, name)
    assert "now declares the pipeline" in edited.stderr
    assert _main_prompt(folder) == "summary"
    from synix_assets.project import project_config

    config = project_config(folder)
    assert config.get("pipeline") == (None if name == "pipeline.py" else name) and "superseded" not in config


def test_a_scripts_top_level_runs_once_per_load_not_once_per_action(folder):
    proc = _run(folder, "memory.py", HEAD + '''
pipeline.sync()
pipeline.plan()
pipeline.run()
pipeline.status()
pipeline.search("sourdough")
pipeline.stats()
pipeline.sync()
''')
    # once: the script itself, taken as its declaration at its first action (not run again)
    assert proc.stdout.count("TOP LEVEL RAN") == 1


def test_a_script_reading_dunder_name_is_loaded_once_more_to_find_its_declaration(folder):
    proc = _run(folder, "memory.py", HEAD + '''
if __name__ == "__main__":
    pipeline.sync()
    pipeline.run()
    pipeline.status()
''')
    # as a loaded file it skips the block, so its declaration comes from one load of its own
    assert proc.stdout.count("TOP LEVEL RAN") == 2


def test_a_script_changed_after_its_first_action_is_still_refused(folder):
    script = folder / "memory.py"
    script.write_text(HEAD + "pipeline.plan()\n"
                      "pipeline.aggregate('monthly', from_='summaries', period='month', prompt=summary)\n"
                      "pipeline.plan()\n")
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, str(script)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 1
    assert "differs from what memory.py declares before its first action (step monthly)" in proc.stderr
    assert proc.stdout.count("TOP LEVEL RAN") == 1


DRIVER = '''import sys
import textwrap as tw

import synix
from synix import Record

PREFIX = "Summarise as bullets"


def shorten(text):
    return tw.shorten(text, 4000)


def bullets(record: Record) -> str:
    return f"{PREFIX}:\\n{shorten(record.content)}"


branch = synix.open(sys.argv[1]).branch("bullets")
branch.transform("episodes", from_="transcripts", prompt=bullets)
report = branch.run()
print("BUILT", report.to_json()["layers"]["episodes"]["built"])
'''


def test_a_branch_override_from_another_script_brings_the_names_its_prompt_uses(tmp_path):
    """`synix.open(p).branch(b).transform(prompt=f)` with `f(record: Record)`: the branch's copy
    of the project's pipeline.py has no `Record`; the override brings it (and the helper, the
    module alias and the constant f uses) instead of failing with NameError."""
    from synix_assets.app.init import demo_exports, init_project

    root = init_project(tmp_path / "mem", exports=demo_exports())
    assert "Record" not in (root / "pipeline.py").read_text()
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "experiment.py").write_text(DRIVER)
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, str(tools / "experiment.py"), str(root)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _line(proc, "BUILT") == "24"
    branch_file = (root / ".synix" / "branches" / "bullets" / "pipeline.py").read_text()
    assert "from synix_assets.pipeline.records import Record" in branch_file
    assert "import textwrap as tw" in branch_file and "PREFIX = 'Summarise as bullets'" in branch_file
    # the same script run again does not append the same override a second time
    again = subprocess.run([sys.executable, str(tools / "experiment.py"), str(root)], env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _line(again, "BUILT") == "0"
    assert (root / ".synix" / "branches" / "bullets" / "pipeline.py").read_text().count("def bullets") == 1


def test_a_prompt_using_a_value_that_cannot_be_written_is_refused_in_one_line(tmp_path):
    from synix_assets.app.init import demo_exports, init_project

    root = init_project(tmp_path / "mem", exports=demo_exports())
    before = (root / "pipeline.py").read_bytes()
    script = tmp_path / "experiment.py"
    script.write_text('''import sys
import synix

CLIENT = object()


def chatty(record):
    return f"{CLIENT}: {record.content}"


try:
    synix.open(sys.argv[1]).branch("chatty").transform("episodes", from_="transcripts", prompt=chatty)
except synix.SynixError as err:
    print("ERROR", err.one_line())
''')
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, str(script), str(root)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = _line(proc, "ERROR")
    assert "prompt chatty uses CLIENT (object)" in line and "import it" in line
    assert (root / "pipeline.py").read_bytes() == before
