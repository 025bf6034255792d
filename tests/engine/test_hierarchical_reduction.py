"""Aggregates and folds over more input than the model's context window holds: reduced
hierarchically, every intermediate summary stored with provenance, cached and audited."""
from __future__ import annotations

import pytest

from synix_assets.app.run import run_build
from synix_assets.engine.reduction import parts_layer
from synix_assets.project import ProjectPaths
from synix_assets.app.init import init_project
from synix_resources.errors import LLMConfigError
from synix_resources.llm.factory import make_client
from synix_resources.llm.fake import FakeClient
from synix_resources.store.artifact_store import ArtifactStore

N = 180
LONG_TITLE = "Weekly planning call about the garden, the budget spreadsheet and the move"


@pytest.fixture
def provider_calls(monkeypatch):
    labels: list[str] = []
    real = FakeClient.call_once

    def counting(self, request, model, attempt):
        labels.append(request.label)
        return real(self, request, model, attempt)

    monkeypatch.setattr(FakeClient, "call_once", counting)
    return labels


def _month_of_talks(n: int, start: int = 0) -> list[dict]:
    """n conversations in January 2025 (in date order), each with a long title."""
    talks = []
    for i in range(start, start + n):
        day, minute = 1 + i // 8, i % 8
        stamp = f"2025-01-{day:02d}T{10 + minute}:00:00Z"
        text = f"We talked about item{i} and plan{i % 13} for the garden."
        talks.append({"uuid": f"talk-{i:03d}", "name": f"{LONG_TITLE} {i}", "created_at": stamp,
                      "messages": [("human", text, stamp), ("assistant", "Noted: " + text, stamp)]})
    return talks


def _lineage_ids(store, artifact_id: str) -> dict[str, set[str]]:
    by_layer: dict[str, set[str]] = {}
    for _, node in store.lineage(artifact_id, max_depth=10).walk():
        by_layer.setdefault(node.artifact.layer, set()).add(node.artifact.artifact_id)
    return by_layer


def test_180_input_month_on_an_8k_window_is_reduced_hierarchically(tmp_path, claude_export,
                                                                    monkeypatch, provider_calls):
    monkeypatch.setenv("SYNIX_LLM_CONTEXT_TOKENS", "8192")  # a local model's default window
    paths = ProjectPaths(init_project(tmp_path / "mem"))
    claude_export(paths.root / "exports" / "talks.json", _month_of_talks(N))
    report = run_build(paths)
    assert report.failures == []
    assert report.layers["monthly"]["built"] == 1
    store = ArtifactStore(paths.store)
    try:
        monthly = store.current("monthly", "2025-01")
        parts = store.list_layer(parts_layer("monthly"))
        assert len(parts) >= 2  # the month did not fit: groups were summarised first
        reduction = monthly.audit["reduction"]
        assert reduction["window"] == 8192
        assert {s["artifact_id"] for s in reduction["summaries"]} == {p.artifact_id for p in parts}
        episodes = {a.artifact_id for a in store.list_layer("episodes")}
        assert len(episodes) == N
        # lineage: monthly → each summary → the episodes it covered; together all 180
        lineage = _lineage_ids(store, monthly.artifact_id)
        assert lineage["episodes"] == episodes
        assert lineage[parts_layer("monthly")] == {p.artifact_id for p in parts}
        covered = [pid for p in parts for pid in p.parent_ids]
        assert sorted(covered) == sorted(episodes)  # each episode in exactly one group
        for part in parts:  # each intermediate is audited with the call that wrote it
            assert part.audit["provider"] == "fake" and part.audit["rendered_prompt_hash"]
            assert part.group_key.startswith("2025-01/1.")
        assert all(len(s["inputs"]) > 1 for s in reduction["summaries"])
        # the final prompt was one of summaries, within the window
        assert monthly.audit["input_tokens"] <= 8192 - 1024
    finally:
        store.close()
    reduce_calls = [label for label in provider_calls if " reduce " in label]
    assert len(reduce_calls) == len(parts)
    assert report.layers["monthly"]["llm_calls"] == len(parts) + 1

    # a second run with nothing changed does nothing; a forced rebuild of the month reuses
    # every intermediate: not one call either way
    before = len(provider_calls)
    assert run_build(paths).to_json()["llm_calls"] == 0
    again = run_build(paths, select="monthly", full=True)
    assert again.layers["monthly"]["built"] == 1 and again.layers["monthly"]["llm_calls"] == 0
    assert len(provider_calls) == before

    # one more talk at the end of the month: its episode, the last group's summary and the
    # month are new requests; the other groups are answered from the cache
    claude_export(paths.root / "exports" / "late.json", _month_of_talks(1, start=N))
    before = len(provider_calls)
    late = run_build(paths)
    new_calls = provider_calls[before:]
    assert [l for l in new_calls if l.startswith("episodes/")] == ["episodes/talk-180"]
    assert len([l for l in new_calls if " reduce " in l]) == 1
    store = ArtifactStore(paths.store)
    try:
        lineage = _lineage_ids(store, store.current("monthly", "2025-01").artifact_id)
        assert len(lineage["episodes"]) == N + 1
        # the replaced summary is history, not current
        assert len(store.list_layer(parts_layer("monthly"))) == len(parts)
    finally:
        store.close()
    assert late.failures == []


def test_fold_over_inputs_larger_than_a_small_window(tmp_path, claude_export, monkeypatch,
                                                     provider_calls):
    monkeypatch.setenv("SYNIX_LLM_CONTEXT_TOKENS", "2048")
    paths = ProjectPaths(init_project(tmp_path / "mem"))
    pipeline = paths.pipeline_file.read_text()
    # a fold straight over large transcripts: each input is several times the window
    pipeline = pipeline.replace('pipeline.fold("core", from_="monthly"',
                                'pipeline.fold("core", from_="transcripts"')
    paths.pipeline_file.write_text(pipeline)
    sentence = "On this day we compared seed catalogues, soil tests and the watering rota. "
    talks = []
    for i in range(6):
        stamp = f"2025-0{1 + i % 3}-1{i}T10:00:00Z"
        talks.append({"uuid": f"big-{i}", "name": f"Long talk {i}", "created_at": stamp,
                      "messages": [("human", f"Part {j} of talk {i}. " + sentence * 12, stamp)
                                   for j in range(20)]})
    claude_export(paths.root / "exports" / "big.json", talks)
    report = run_build(paths)
    assert report.failures == []
    store = ArtifactStore(paths.store)
    try:
        core = store.current("core", "all")
        assert core is not None and len(core.parent_ids) == 6
        assert "map_reduce" in core.audit["flags"] and core.audit["part_prompt_hashes"]
    finally:
        store.close()
    assert report.layers["core"]["built"] == 1
    before = len(provider_calls)
    again = run_build(paths, select="core", full=True)  # every step and part from the cache
    assert len(provider_calls) == before and again.layers["core"]["llm_calls"] == 0


def test_context_window_is_read_from_the_environment():
    client = make_client(env={"SYNIX_LLM_PROVIDER": "openai-compatible", "SYNIX_LLM_MODEL": "m",
                              "SYNIX_LLM_BASE_URL": "http://127.0.0.1:1/v1",
                              "SYNIX_LLM_CONTEXT_TOKENS": "32768"})
    assert client.context_window_for("m") == 32768
    local = make_client(env={"SYNIX_LLM_PROVIDER": "openai-compatible", "SYNIX_LLM_MODEL": "m",
                             "SYNIX_LLM_BASE_URL": "http://127.0.0.1:1/v1"})
    assert local.context_window_for("m") == 8192  # the local default without the variable
    fake = make_client(env={"SYNIX_LLM_PROVIDER": "fake", "SYNIX_LLM_CONTEXT_TOKENS": "4096"})
    assert fake.context_window_for("fake-v1") == 4096
    for bad in ("big", "-5", "100"):
        with pytest.raises(LLMConfigError) as info:
            make_client(env={"SYNIX_LLM_PROVIDER": "fake", "SYNIX_LLM_CONTEXT_TOKENS": bad})
        assert "SYNIX_LLM_CONTEXT_TOKENS" in info.value.one_line()


@pytest.fixture
def month_in_store(tmp_path):
    """A project whose store holds n January episodes (no LLM needed to make them), and a
    function building its monthly layer with a fake on a 1,024-token window."""
    from synix_assets.engine import aggregate
    from synix_assets.engine.context import BuildContext
    from synix_assets.pipeline.loader import load_pipeline

    paths = ProjectPaths(init_project(tmp_path / "mem"))
    original = paths.pipeline_file.read_text()
    stores: list[ArtifactStore] = []

    def make(n: int, marked: int | None = None, max_tokens: int = 600):
        paths.pipeline_file.write_text(original.replace(
            'period="month", prompt=prompts.monthly_rollup)',
            f'period="month", prompt=prompts.monthly_rollup, max_tokens={max_tokens})'))
        store = ArtifactStore(paths.store)
        stores.append(store)
        for i in range(n):
            day = f"2025-01-{1 + i * 28 // n:02d}T{10 + i % 10}:00:00Z"
            body = f"[fake {i:010d}] summary of: item{i}, plan{i % 13}, garden, budget."
            if i == marked:
                body += " SYNIX_FAIL_400"
            store.put(layer="episodes", group_key=f"talk-{i:03d}", content=body,
                      materialization_key=f"k{i}", level=1,
                      metadata={"meta.time.created_at": day,
                                "meta.chat.title": f"{LONG_TITLE} {i}"})
        client = FakeClient(context_tokens=1024)
        ctx = BuildContext(load_pipeline(paths.pipeline_file), store, client, paths, run_id="r1")
        return ctx, lambda: aggregate.build(ctx, "monthly")

    yield make
    for store in stores:
        store.close()


def test_reduction_recurses_until_the_prompt_fits_and_every_request_fits_the_window(
        month_in_store, monkeypatch):
    from synix_resources.llm.mapreduce import estimate_tokens

    sent = []
    real = FakeClient.call_once

    def checking(self, request, model, attempt):
        sent.append(estimate_tokens(request.prompt) + request.max_tokens)
        return real(self, request, model, attempt)

    monkeypatch.setattr(FakeClient, "call_once", checking)
    ctx, build = month_in_store(N)
    result = build()
    [outcome] = result.outcomes
    assert outcome.status == "built", outcome.error
    assert max(sent) <= 1024  # no request ever exceeded the window
    monthly = ctx.store.current("monthly", "2025-01")
    reduction = monthly.audit["reduction"]
    assert reduction["levels"] == 2
    by_level: dict[int, list] = {}
    for part in ctx.store.list_layer(parts_layer("monthly")):
        by_level.setdefault(part.metadata["meta.custom.reduction"]["level"], []).append(part)
    assert len(by_level[1]) > len(by_level[2]) >= 1
    level_one = {p.artifact_id for p in by_level[1]}
    # a level-2 summary is built from level-1 summaries, and the month from the level-2 ones
    assert {pid for p in by_level[2] for pid in p.parent_ids} == level_one
    assert {p.artifact_id for p in by_level[2]} <= set(monthly.parent_ids)
    assert len(_lineage_ids(ctx.store, monthly.artifact_id)["episodes"]) == N
    assert outcome.llm_calls == len(by_level[1]) + len(by_level[2]) + 1 == len(sent)


def test_failed_group_summary_fails_the_partition_naming_the_group(month_in_store):
    ctx, build = month_in_store(60, marked=7)
    [outcome] = build().outcomes
    assert outcome.status == "failed"
    assert "monthly/2025-01" in outcome.error and "group 1." in outcome.error
    assert "400" in outcome.error
    assert ctx.store.current("monthly", "2025-01") is None
    assert [f.group_key for f in ctx.store.failures("monthly")] == ["2025-01"]


def test_window_too_small_for_even_one_summary_fails_at_once_without_calls(month_in_store):
    ctx, build = month_in_store(60, max_tokens=1000)  # leaves ~24 tokens of a 1,024 window
    [outcome] = build().outcomes
    assert outcome.status == "failed" and ctx.llm.calls == 0
    assert "max_tokens 1000" in outcome.error and "1024-token" in outcome.error
    assert "SYNIX_LLM_CONTEXT_TOKENS" in outcome.error
