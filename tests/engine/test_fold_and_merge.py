"""Fold checkpoints and merge strategies, building layers directly (no Dagster) on real SQLite."""
from __future__ import annotations

import pytest

from synix_assets.engine.context import BuildContext
from synix_assets.engine.layers import build_layer, plan_all
from synix_assets.pipeline.api import Pipeline
from synix_assets.pipeline import builtin_prompts as prompts
from synix_assets.project import ProjectPaths
from synix_resources.llm.fake import FakeClient
from synix_resources.store.artifact_store import ArtifactStore


def _months(n: int, start_year: int = 2023):
    for i in range(n):
        y, m = start_year + (i // 12), i % 12 + 1
        yield f"{y:04d}-{m:02d}-15"


def _project(tmp_path, claude_export, conversation, days, *, checkpoint_every=6, merge_kw=None):
    root = tmp_path / "p"
    (root / "exports").mkdir(parents=True)
    claude_export(root / "exports" / "a.json",
                  [conversation(f"c{i:03d}", f"Chat {i}", d, f"topic number {i} words{i}")
                   for i, d in enumerate(days)])
    p = Pipeline("t", base_dir=root)
    p.source("exports", path="exports")
    p.merge("transcripts", from_=["exports"], **(merge_kw or {}))
    p.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)
    p.aggregate("monthly", from_="episodes", period="month", prompt=prompts.monthly_rollup)
    p.fold("core", from_="monthly", prompt=prompts.core_memory, checkpoint_every=checkpoint_every)
    p.validate()
    paths = ProjectPaths(root)
    paths.state_dir.mkdir()
    store = ArtifactStore(paths.store)
    llm = FakeClient()
    return BuildContext(p, store, llm, paths, run_id=None), root


def _changed_prompt(record):
    return "Summarise differently:\n" + record.content


def _build_all(ctx):
    scan = ctx.reader.scan()
    return {layer: build_layer(ctx, layer, scan) for layer in ctx.pipeline.layer_order()}


def test_fold_inserting_a_month_in_the_middle_resumes_from_the_checkpoint_before_it(
        tmp_path, claude_export, conversation):
    days = [d for i, d in enumerate(_months(29)) if i != 7]  # 28 months, month 8 missing
    ctx, root = _project(tmp_path, claude_export, conversation, days)
    first = _build_all(ctx)
    assert first["core"].outcomes[0].llm_calls == 28
    assert [c.position for c in ctx.store.checkpoints("core", ctx.version("core"))] == [6, 12, 18, 24]
    # the missing month arrives: it is month 8 of 29
    claude_export(root / "exports" / "late.json",
                  [conversation("late", "Late chat", list(_months(29))[7], "late arrival")])
    calls_before = ctx.llm.calls
    second = _build_all(ctx)
    core = second["core"].outcomes[0]
    assert core.status == "built"
    assert core.llm_calls == 29 - 6  # resumed after the checkpoint at month 6
    assert ctx.store.current("core", "all").metadata["meta.step.resumed_from"] == 6
    assert ctx.llm.calls - calls_before == 1 + 1 + 23  # its episode, its month, 23 fold steps


def test_fold_with_unchanged_months_costs_no_call(tmp_path, claude_export, conversation):
    ctx, _ = _project(tmp_path, claude_export, conversation, list(_months(8)))
    _build_all(ctx)
    calls = ctx.llm.calls
    again = _build_all(ctx)
    assert again["core"].outcomes[0].status == "cached"
    assert ctx.llm.calls == calls


def test_fold_compresses_state_over_max_state_tokens(tmp_path, claude_export, conversation):
    ctx, _ = _project(tmp_path, claude_export, conversation, list(_months(3)))
    ctx.pipeline.steps["core"].config["max_state_tokens"] = 100
    ctx.llm = FakeClient(model="fake-v1")
    ctx.llm.summary = lambda request: "word " * 200  # every state is over budget
    out = _build_all(ctx)
    audit = ctx.store.audit(ctx.store.current("core", "all").artifact_id)
    assert out["core"].outcomes[0].llm_calls == 6  # 3 folds + 3 compressions
    assert audit.get("compressions") == 3


@pytest.mark.parametrize("conflict,expected_text", [("prefer_latest", "newer"), ("prefer_first", "older")])
def test_merge_same_conversation_in_two_exports_follows_the_conflict_rule(
        tmp_path, claude_export, conversation, conflict, expected_text):
    ctx, root = _project(tmp_path, claude_export, conversation, [],
                         merge_kw={"dedupe": "metadata_match", "conflict": conflict})
    older = conversation("same", "Same", "2025-01-01", "older version")
    newer = conversation("same", "Same", "2025-01-01", "newer version", n=6)
    claude_export(root / "exports" / "a.json", [older])
    claude_export(root / "exports" / "b.json", [newer])
    scan = ctx.reader.scan()
    build_layer(ctx, "transcripts", scan)
    arts = ctx.store.list_layer("transcripts")
    assert len(arts) == 1 and expected_text in arts[0].content


def test_merge_keep_all_keeps_both_versions(tmp_path, claude_export, conversation):
    ctx, root = _project(tmp_path, claude_export, conversation, [],
                         merge_kw={"conflict": "keep_all"})
    claude_export(root / "exports" / "a.json", [conversation("same", "Same", "2025-01-01", "one")])
    claude_export(root / "exports" / "b.json", [conversation("same", "Same", "2025-01-01", "two")])
    build_layer(ctx, "transcripts", ctx.reader.scan())
    assert len(ctx.store.list_layer("transcripts")) == 2


def test_merge_content_dedupe_collapses_identical_text_only(tmp_path, claude_export, conversation):
    ctx, root = _project(tmp_path, claude_export, conversation, [], merge_kw={"dedupe": "content"})
    c = conversation("x1", "Same", "2025-01-01", "identical")
    claude_export(root / "exports" / "a.json", [c, conversation("x2", "Other", "2025-01-02", "other")])
    claude_export(root / "exports" / "b.json", [c])
    build_layer(ctx, "transcripts", ctx.reader.scan())
    assert len(ctx.store.list_layer("transcripts")) == 2


def test_plan_reports_reasons_and_agrees_with_build_on_calls(tmp_path, claude_export, conversation):
    ctx, root = _project(tmp_path, claude_export, conversation, list(_months(4)))
    plans = plan_all(ctx, ctx.reader.scan())
    assert {w.reason for w in plans["episodes"].stale} == {"new"}
    planned = sum(p.est_calls for p in plans.values())
    before = ctx.llm.calls
    _build_all(ctx)
    assert ctx.llm.calls - before == planned
    ctx.pipeline.steps["episodes"].prompt = _changed_prompt
    plans = plan_all(ctx, ctx.reader.scan())
    assert {w.reason for w in plans["episodes"].stale} == {"prompt/model changed"}
    assert {w.reason for w in plans["monthly"].stale} == {"upstream changed"}
    assert plans["transcripts"].stale == []


def test_after_a_prompt_edit_the_partitions_not_yet_rebuilt_still_say_the_prompt_changed(
        tmp_path, claude_export, conversation):
    ctx, root = _project(tmp_path, claude_export, conversation, list(_months(4)))
    _build_all(ctx)
    ctx.pipeline.steps["episodes"].prompt = _changed_prompt
    keys = sorted(ctx.store.current_index("episodes"))
    build_layer(ctx, "episodes", None, {keys[0]})  # one partition rebuilt (a UI run of one key)
    plans = plan_all(ctx, ctx.reader.scan())
    assert sorted(w.group_key for w in plans["episodes"].stale) == keys[1:]
    assert {w.reason for w in plans["episodes"].stale} == {"prompt/model changed"}
    build_layer(ctx, "episodes", None)  # the rest: the layer is on the new prompt as a whole
    assert plan_all(ctx, ctx.reader.scan())["episodes"].stale == []
    ctx.pipeline.steps["episodes"].prompt = prompts.episode_summary  # and back
    assert {w.reason for w in plan_all(ctx, ctx.reader.scan())["episodes"].stale} == {"prompt/model changed"}
