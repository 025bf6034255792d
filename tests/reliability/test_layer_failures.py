"""Failures that are not LLM errors: a prompt function that raises or returns a non-string for
some conversations, and a layer whose code raises. Neither may pass for success: the build exits
non-zero naming what failed and the clean-build marker is not recorded. A failed partition leaves
a gap the layers above build around (design §10.2, tests/reliability/test_validate_and_gaps.py);
a layer that raises stops the build before anything reads it; the next run builds what is left."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from synix_assets.app.run import run_build
from synix_assets.dagster_defs.instance import dagster_instance
from synix_resources.errors import BuildFailed
from synix_resources.store.artifact_store import ArtifactStore

PY = sys.executable
CLEAN = "build:fingerprint"

# Pinned version: fixing the bug below is not a new prompt, so only the failed episodes rebuild.
MARATHON_PROMPT = '''
from synix_assets.pipeline.prompts import prompt


@prompt(version="1")
def episode_prompt(record):
    if "marathon" in record.content.lower():
        raise ValueError("no marathons here")
    return prompts.episode_summary(record)


pipeline.transform("episodes", from_="transcripts", prompt=episode_prompt)
'''


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNIX_FAKE")}
    env["SYNIX_LLM_PROVIDER"] = "fake"
    return env


def _cli(paths, *args):
    return subprocess.run([PY, "-m", "synix_assets.cli.main", "-p", str(paths.root), *args],
                          env=_env(), capture_output=True, text=True, timeout=300)


def _swap_episode_prompt(root, replacement: str) -> str:
    path = root / "pipeline.py"
    text = path.read_text()
    line = 'pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)\n'
    assert line in text
    path.write_text(text.replace(line, replacement))
    return text


def _marathon_conversations(paths) -> dict[str, str]:
    """conversation id → month of the demo conversations that mention a marathon."""
    store = ArtifactStore(paths.store)
    try:
        return {a.group_key: a.metadata["meta.time.created_at"][:7]
                for a in store.list_layer("transcripts") if "marathon" in a.content.lower()}
    finally:
        store.close()


def _partition_names(paths, group_keys) -> dict[str, str]:
    store = ArtifactStore(paths.store)
    try:
        return store.partition_names(group_keys)
    finally:
        store.close()


def test_prompt_raising_for_some_conversations_fails_those_and_keeps_the_rest(demo_project):
    paths = demo_project
    _swap_episode_prompt(paths.root, MARATHON_PROMPT)
    out = _cli(paths, "run")
    assert out.returncode == 1, out.stdout + out.stderr
    marathons = _marathon_conversations(paths)
    assert len(marathons) >= 2
    # the CLI names each failed conversation (by its readable partition key, as Dagster shows
    # it) and the cause, and shows no Dagster traceback
    shown = _partition_names(paths, marathons)
    assert set(shown) == set(marathons)
    for cid in marathons:
        assert f"episodes/{shown[cid]}: prompt episode_prompt raised ValueError: no marathons here" in \
            " ".join(out.stderr.split())
    assert "Traceback" not in out.stdout + out.stderr
    assert "STEP_FAILURE" not in out.stdout + out.stderr
    store = ArtifactStore(paths.store)
    try:
        failures = {(f.layer, f.group_key): f.error for f in store.failures()}
        assert set(failures) == {("episodes", cid) for cid in marathons}
        episodes = store.current_index("episodes")
        assert set(episodes) == set(store.current_index("transcripts")) - set(marathons)
        # the months and the core are built from the episodes there are (design §10.2); the
        # gap is recorded and filled by the next build once the episodes exist
        months = set(store.current_index("monthly"))
        assert months >= set(marathons.values())
        assert store.current("core", "all") is not None
        assert store.get_meta(CLEAN) is None
        run = store.list_runs(limit=1)[0]
        assert run.status == "failed"
    finally:
        store.close()
    status = json.loads(_cli(paths, "status", "--json").stdout)["layers"]
    assert status["episodes"]["failed"] == len(marathons)
    # fixed prompt: the next run builds exactly those episodes, their months and the core
    fixed = (paths.root / "pipeline.py").read_text().replace('raise ValueError("no marathons here")', "pass")
    (paths.root / "pipeline.py").write_text(fixed)
    again = _cli(paths, "run", "--json")
    assert again.returncode == 0, again.stderr
    built = {k: v["built"] for k, v in json.loads(again.stdout)["layers"].items()}
    assert built == {"transcripts": 0, "episodes": len(marathons),
                     "monthly": len(set(marathons.values())), "core": 1}


@pytest.mark.parametrize("bad,expected", [
    ("None", "returned NoneType, expected str"),
    ("b'bytes'", "returned bytes, expected str"),
    ("{'text': 'a dict'}", "returned dict, expected str"),
    ("1 / 0", "raised ZeroDivisionError: division by zero"),
    ('"bad \\ud800 text"', "returned text that is not valid Unicode (surrogates not allowed: '\\ud800' at position 4)"),
])
def test_prompt_returning_a_non_string_or_invalid_text_fails_that_partition_naming_it(small_project, bad, expected):
    paths = small_project(4, marker_at={2: "weird"})
    _swap_episode_prompt(paths.root, f'''
def episode_summary(record):
    if "weird" in record.content:
        return {bad}
    return prompts.episode_summary(record)


pipeline.transform("episodes", from_="transcripts", prompt=episode_summary)
''')
    with pytest.raises(BuildFailed) as info:
        run_build(paths)
    report = info.value.report
    assert [(f["layer"], f["group_key"]) for f in report.failures] == [("episodes", "conv-2")]
    assert report.failures[0]["error"].startswith(f"prompt episode_summary {expected}")
    shown = _partition_names(paths, ["conv-2"])["conv-2"]
    assert report.failures[0]["partition"] == shown
    assert f"episodes/{shown}" in info.value.one_line() and expected in info.value.one_line()
    assert report.layers["episodes"]["built"] == 3
    store = ArtifactStore(paths.store)
    try:
        assert set(store.current_index("episodes")) == {"conv-0", "conv-1", "conv-3"}
        # January is built from conv-0 alone (conv-2 is its gap), the core over both months (§10.2)
        assert set(store.current_index("monthly")) == {"2025-01", "2025-02"}
        assert store.current("monthly", "2025-01").metadata["meta.chat.conversation_count"] == 1
        assert store.current("core", "all") is not None
    finally:
        store.close()


def test_a_layer_that_raises_stops_the_build_before_anything_reads_it(small_project, monkeypatch):
    from synix_assets.engine import aggregate

    paths = small_project(4)
    real_build = aggregate.build

    def broken(ctx, layer, keys=None):
        raise RuntimeError("rollup code is broken")

    monkeypatch.setattr(aggregate, "build", broken)
    with pytest.raises(BuildFailed) as info:
        run_build(paths)
    line = info.value.one_line()
    assert line.startswith("monthly did not finish: RuntimeError: rollup code is broken")
    report = info.value.report
    assert report.status == "failed"
    assert report.layers["episodes"]["built"] == 4
    assert report.layers["monthly"]["built"] == 0 and report.layers["monthly"]["unfinished"] == 2
    assert "core" not in report.layers and report.projections == {}
    store = ArtifactStore(paths.store)
    try:
        assert store.current_index("monthly") == {} and store.current("core", "all") is None
        assert store.get_meta(CLEAN) is None
        run = store.get_run(report.run_id)
        assert run.status == "failed"
    finally:
        store.close()
    assert not (paths.root / "context.md").exists()  # no projection built from a partial memory
    instance = dagster_instance(paths)
    statuses = [r.status.name for r in instance.get_runs()]
    assert "FAILURE" in statuses and "STARTED" not in statuses
    # the code is fixed: the next run builds exactly the two months and the core
    monkeypatch.setattr(aggregate, "build", real_build)
    again = run_build(paths)
    assert {k: v["built"] for k, v in again.layers.items()} == \
        {"transcripts": 0, "episodes": 0, "monthly": 2, "core": 1}
    assert run_build(paths).noop


def test_failing_run_prints_one_line_and_debug_shows_dagsters_records(small_project):
    paths = small_project(2, marker_at={1: "SYNIX_FAIL_400"})
    quiet = _cli(paths, "run")
    assert quiet.returncode == 1
    assert "Traceback" not in quiet.stderr and "STEP_FAILURE" not in quiet.stderr
    assert " - dagster - " not in quiet.stderr
    errors = [l for l in quiet.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == 1 and "episodes/conv-1" in errors[0]
    debug = _cli(paths, "--debug", "run")
    assert debug.returncode == 1
    assert " - dagster - ERROR - " in debug.stderr  # Dagster's own records, on request
