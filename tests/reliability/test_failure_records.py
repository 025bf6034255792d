"""A failure record holds only while its partition still has to be built: one whose input is gone
(its export was removed) or whose partition is current again (a reverted prompt finds it cached)
leaves no gap. The rollups and the core are built from what is there around a failure (design
§10.2), with the gap recorded; a build that leaves a gap is never a success. Each scenario end to end through `synix run` in a
subprocess with the fake provider."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from synix_resources.store.artifact_store import ArtifactStore

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]

EPISODE_LINE = 'pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)\n'
RAISING_EPISODES = '''
def episode_prompt(record):
    if "topic2 " in record.content:
        raise ValueError("no topic2 here")
    return prompts.episode_summary(record)


pipeline.transform("episodes", from_="transcripts", prompt=episode_prompt)
'''


def _cli(paths, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNIX_FAKE")}
    env.update(SYNIX_LLM_PROVIDER="fake", PYTHONPATH=str(REPO))
    return subprocess.run([PY, "-m", "synix_assets.cli.main", "-p", str(paths.root), *args],
                          env=env, capture_output=True, text=True, timeout=300)


def _one_line(out) -> str:
    return " ".join(out.stderr.split())


def _built(out) -> dict[str, int]:
    return {k: v["built"] for k, v in json.loads(out.stdout)["layers"].items()}


def _store(paths) -> ArtifactStore:
    return ArtifactStore(paths.store)


def _shown(paths, group_key: str) -> str:
    """The conversation's partition key as Dagster and the failure lines show it."""
    with _store(paths) as store:
        return store.partition_names([group_key])[group_key]


def _context(paths) -> str:
    return (paths.root / "context.md").read_text(encoding="utf-8")


def _body(context: str) -> str:
    """A context document without its last line (the time it was written)."""
    return context.rstrip("\n").rpartition("\n")[0]


def _latest_check(paths, layer: str):
    """The latest `synix_up_to_date` evaluation of `layer` in the project's Dagster instance."""
    import dagster as dg
    import pytest

    with pytest.MonkeyPatch.context() as env:
        env.setenv("DAGSTER_HOME", str(paths.dagster_home))  # the instance's yaml reads it
        instance = dg.DagsterInstance.from_config(str(paths.dagster_home))
    try:
        for record in instance.get_event_records(  # as tests/engine/test_work_graph.py reads them
                dg.EventRecordsFilter(event_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION),
                limit=100, ascending=False):
            evaluation = record.event_log_entry.dagster_event.event_specific_data
            if evaluation.asset_key == dg.AssetKey([layer]):
                return evaluation
        raise AssertionError(f"no check evaluation of {layer}")
    finally:
        instance.dispose()


def test_a_refused_conversation_whose_export_is_removed_blocks_nothing_and_the_core_is_built(
        small_project, claude_export, conversation):
    paths = small_project(4)  # conv-0..3 in 2025-01 / 2025-02
    refused = claude_export(paths.root / "exports" / "refused.json",
                            [conversation("bad-1", "Bad", "2025-01-20", "topicbad SYNIX_REFUSE item")])
    first = _cli(paths, "run")
    assert first.returncode == 1
    line = _one_line(first)
    assert "episodes/bad-1" in line and "refused" in line and "built around by monthly (1), core (1)" in line
    # the core is built from the episodes there are, and the context drawn from it
    assert not _latest_check(paths, "core").passed  # its gap shows
    assert "Covers: 2025-01, 2025-02" in _context(paths)
    refused.unlink()
    plan = _cli(paths, "plan", "--json")
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)["layers"]
    assert all(v["blocked"] == 0 and v["failed"] == 0 and v["partial"] == 0 for v in planned.values()), planned
    assert planned["core"]["stale"] == 0  # built without bad-1 already: nothing is missing now
    again = _cli(paths, "run", "--json")
    assert again.returncode == 0, again.stderr
    assert _built(again)["core"] == 0
    store = _store(paths)
    try:
        assert store.failures() == []
        core = store.current("core", "all")
        assert core is not None and core.metadata["meta.custom.groups"] == ["2025-01", "2025-02"]
    finally:
        store.close()
    assert core.artifact_id in _context(paths) and "Covers: 2025-01, 2025-02" in _context(paths)
    assert _latest_check(paths, "core").passed
    status = json.loads(_cli(paths, "status", "--json").stdout)
    assert {l: v["failed"] for l, v in status["layers"].items()} == dict.fromkeys(status["layers"], 0)
    assert json.loads(_cli(paths, "run", "--json").stdout)["llm_calls"] == 0


def test_a_reverted_prompt_clears_the_failure_and_a_new_conversation_reaches_its_month_and_context(
        small_project, claude_export, conversation):
    paths = small_project(4)  # conv-2 is in 2025-01
    assert _cli(paths, "run").returncode == 0
    original = (paths.root / "pipeline.py").read_text()
    (paths.root / "pipeline.py").write_text(original.replace(EPISODE_LINE, RAISING_EPISODES))
    broken = _cli(paths, "run")
    assert broken.returncode == 1
    assert f"episodes/{_shown(paths, 'conv-2')}: prompt episode_prompt raised ValueError: no topic2 here" \
        in _one_line(broken)
    assert not _latest_check(paths, "core").passed  # built with a gap: never shown up to date
    (paths.root / "pipeline.py").write_text(original)  # revert: conv-2's episode is cached again
    plan = _cli(paths, "plan")
    assert plan.returncode == 0 and "blocked" not in plan.stdout, plan.stdout
    reverted = _cli(paths, "run", "--json")
    assert reverted.returncode == 0, reverted.stderr
    assert "Nothing to do." in _cli(paths, "plan").stdout
    with _store(paths) as store:
        assert store.failures() == []
    claude_export(paths.root / "exports" / "late.json",
                  [conversation("late-1", "Late", "2025-01-25", "latetopic zebra item")])
    late = _cli(paths, "run", "--json")
    assert late.returncode == 0, late.stderr
    assert _built(late) == {"transcripts": 1, "episodes": 1, "monthly": 1, "core": 1}
    store = _store(paths)
    try:
        episode = store.current("episodes", "late-1")
        month = store.current("monthly", "2025-01")
        core = store.current("core", "all")
    finally:
        store.close()
    assert episode.artifact_id in month.parent_ids and month.artifact_id in core.parent_ids
    assert core.artifact_id in _context(paths)
    assert _latest_check(paths, "core").passed


def test_a_layer_blocked_by_a_failure_it_did_not_retry_exits_non_zero_naming_it(small_project):
    paths = small_project(4)
    assert _cli(paths, "run").returncode == 0
    before = _context(paths)
    original = (paths.root / "pipeline.py").read_text()
    (paths.root / "pipeline.py").write_text(original.replace(EPISODE_LINE, RAISING_EPISODES))
    # --full retires every layer first; the core is rebuilt from the three episodes there are
    full = _cli(paths, "run", "--full")
    conv2 = _shown(paths, "conv-2")
    assert full.returncode == 1 and f"episodes/{conv2}" in _one_line(full)
    with _store(paths) as store:
        assert store.current("core", "all") is not None
    gapped = _context(paths)
    # a build that does not retry the failed episode: monthly and core keep their gap
    partial = _cli(paths, "run", "--from", "monthly")
    assert partial.returncode == 1
    errors = [l for l in partial.stderr.splitlines() if l.startswith("error:")]
    assert len(errors) == 1, partial.stderr
    line = _one_line(partial)
    assert "built with a gap: monthly (1), core (1) — wait(s) for 1 partition(s) that failed in an " \
           f"earlier build (episodes/{conv2})" in line
    assert "no topic2 here" in line and "run the whole build (`synix run`" in line
    assert "Traceback" not in partial.stdout + partial.stderr
    assert _context(paths) == gapped
    (paths.root / "pipeline.py").write_text(original)
    fixed = _cli(paths, "run", "--json")
    assert fixed.returncode == 0, fixed.stderr
    # the gap filled: the document says what it said before (all but the time it was written)
    assert _built(fixed)["core"] == 1 and _body(_context(paths)) == _body(before) != _body(gapped)
