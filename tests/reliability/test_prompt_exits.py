"""A prompt function that ends the process (os._exit, sys.exit, exec) while a build renders it:
the build never passes for a success with nothing built; the partition fails naming the layer,
the partition and the prompt, and `synix run` exits non-zero in one line."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from synix_assets.app.run import run_build
from synix_resources.errors import BuildFailed
from synix_resources.process import endings
from synix_resources.store.artifact_store import ArtifactStore

EPISODES = 'pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)\n'


def _swap_episode_prompt(root, body: str) -> None:
    path = root / "pipeline.py"
    text = path.read_text()
    assert EPISODES in text
    path.write_text(text.replace(EPISODES, f'''
import os, sys


def episode_summary(record):
    if "weird" in record.content:
{body}
    return prompts.episode_summary(record)


pipeline.transform("episodes", from_="transcripts", prompt=episode_summary)
'''))


def test_synix_run_whose_prompt_calls_os_exit_0_fails_naming_the_prompt_and_exits_1(small_project):
    paths = small_project(4, marker_at={2: "weird"})
    _swap_episode_prompt(paths.root, "        os._exit(0)")
    env = {**os.environ, "SYNIX_LLM_PROVIDER": "fake"}
    out = subprocess.run([sys.executable, "-m", "synix_assets.cli.main", "-p", str(paths.root), "run"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, (out.stdout, out.stderr)
    errors = [l for l in out.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in out.stderr
    assert "episodes/" in errors[0] and "prompt episode_summary called os._exit(0)" in errors[0]
    store = ArtifactStore(paths.store)
    try:  # the other conversations were built and kept; the one whose prompt exited was not
        assert set(store.current_index("episodes")) == {"conv-0", "conv-1", "conv-3"}
        assert [f.group_key for f in store.failures()] == ["conv-2"]
        assert store.list_runs(limit=1)[0].status == "failed"
    finally:
        store.close()


@pytest.mark.parametrize("body,says", [
    ("        sys.exit(0)", "called sys.exit(0)"),
    ("        raise SystemExit", "called sys.exit(None)"),
    ("        os._exit(3)", "called os._exit(3)"),
    ("        os.execl('/bin/true', 'true')", "called os.execv('/bin/true', ('true',))"),
    ("        raise KeyboardInterrupt", "raised KeyboardInterrupt"),
])
def test_a_prompt_that_exits_fails_its_partition_and_the_rest_is_built(small_project, body, says):
    real_exit = os._exit
    paths = small_project(4, marker_at={2: "weird"})
    _swap_episode_prompt(paths.root, body)
    with pytest.raises(BuildFailed) as info:
        run_build(paths)
    report = info.value.report
    assert [(f["layer"], f["group_key"]) for f in report.failures] == [("episodes", "conv-2")]
    assert report.failures[0]["error"].startswith(f"prompt episode_summary {says}")
    assert report.layers["episodes"]["built"] == 3
    assert os._exit is real_exit and not endings.guarded_threads  # the guard is gone after the build
