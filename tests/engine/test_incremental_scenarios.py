"""The design's incremental scenarios, each through `run_build` (real Dagster runs on a real
SQLite DAGSTER_HOME, real store and index), with exact per-layer built/cached counts."""
from __future__ import annotations

import json

import pytest

from synix_assets.app.init import switch_template
from synix_assets.app.run import run_build
from synix_resources.search.index import SearchIndex
from synix_resources.store.artifact_store import ArtifactStore

DEMO_CONVERSATIONS = 24
DEMO_MONTHS = 6


def _search_ids(paths, query, layers=None):
    index = SearchIndex(paths.search, embeddings=False)
    try:
        return [h.artifact_id for h in index.search(query, layers=layers, limit=20)]
    finally:
        index.close()


@pytest.fixture
def built(demo_project):
    report = run_build(demo_project)
    return demo_project, report


def test_first_build_builds_every_layer_and_both_projections(built, counts):
    paths, report = built
    assert counts(report) == {"transcripts": (24, 0), "episodes": (24, 0), "monthly": (6, 0), "core": (1, 0)}
    assert report.to_json()["llm_calls"] == 24 + 6 + 6  # episodes + months + one fold step per month
    assert report.projections == {"memory-index": {"changed": True}, "context": {"changed": True}}
    context_md = (paths.root / "context.md").read_text()
    assert context_md.startswith("# Memory of") and "Drawn from core" in context_md
    assert _search_ids(paths, "marathon")


def test_second_build_with_nothing_changed_makes_no_calls_and_builds_nothing(built, counts):
    paths, _ = built
    mtime = (paths.root / "context.md").stat().st_mtime_ns
    search_mtime = paths.search.stat().st_mtime_ns
    again = run_build(paths)
    assert again.to_json()["llm_calls"] == 0
    assert all(built == 0 for built, _ in counts(again).values())
    assert counts(again)["episodes"] == (0, 24)
    assert again.dagster_runs == []  # a no-op launches nothing
    assert (paths.root / "context.md").stat().st_mtime_ns == mtime
    assert paths.search.stat().st_mtime_ns == search_mtime


def test_new_conversation_rebuilds_its_chain_only(built, counts, claude_export, conversation):
    paths, _ = built
    claude_export(paths.root / "exports" / "new.json",
                  [conversation("new-conv-1", "Kayak trip", "2025-03-20", "sea kayaking near Sausalito")])
    report = run_build(paths)
    assert counts(report) == {"transcripts": (1, 24), "episodes": (1, 24), "monthly": (1, 5), "core": (1, 0)}
    # the fold resumes from its checkpoint: only months from March on are refolded
    store = ArtifactStore(paths.store)
    core = store.current("core", "all")
    assert core.metadata["meta.step.resumed_from"] == 0  # checkpoint_every=6 > the 2 months before March
    # the fold replays January and February with unchanged prompts: answered from the response
    # cache; March to June are new requests
    assert report.to_json()["llm_calls"] == 1 + 1 + 4


def test_episode_prompt_edit_rebuilds_episodes_and_above_only(built, counts):
    paths, _ = built
    text = (paths.root / "pipeline.py").read_text()
    text = text.replace(
        'pipeline.transform("episodes", from_="transcripts", prompt=prompts.episode_summary)',
        'def short_episode(record):\n    return "Summarise in 40 words:\\n" + record.content\n\n'
        'pipeline.transform("episodes", from_="transcripts", prompt=short_episode)')
    (paths.root / "pipeline.py").write_text(text)
    report = run_build(paths)
    assert counts(report) == {"transcripts": (0, 24), "episodes": (24, 0), "monthly": (6, 0), "core": (1, 0)}


def test_switch_to_topical_rollups_builds_topics_and_core_only(built, counts):
    paths, _ = built
    before_hits = _search_ids(paths, "sourdough starter")
    before_context = (paths.root / "context.md").read_text()
    switch_template(paths.root, "topical")
    report = run_build(paths)
    layers = counts(report)
    assert layers["transcripts"] == (0, 24) and layers["episodes"] == (0, 24)
    assert layers["topics"] == (6, 0)
    assert layers["core"] == (1, 0)
    assert "monthly" not in layers
    after_hits = _search_ids(paths, "sourdough starter")
    assert after_hits != before_hits
    assert any(h.startswith("topics-") for h in _search_ids(paths, "sourdough", layers=["topics"]))
    assert (paths.root / "context.md").read_text() != before_context


def test_reexported_conversation_with_one_more_message_rebuilds_its_chain(built, counts):
    paths, _ = built
    export = paths.root / "exports" / "claude_demo.json"
    data = json.loads(export.read_text())
    conv = data[3]  # 2025-03 "Preparing questions for Priya Raman"
    extra = dict(conv["chat_messages"][-1])
    extra.update(uuid="extra-msg", sender="human", text="One more thing: Priya prefers async updates.",
                 content=[{"type": "text", "text": "One more thing: Priya prefers async updates."}],
                 created_at="2025-03-03T23:59:00Z", updated_at="2025-03-03T23:59:00Z")
    conv["chat_messages"].append(extra)
    export.write_text(json.dumps(data))
    report = run_build(paths)
    assert counts(report) == {"transcripts": (1, 23), "episodes": (1, 23), "monthly": (1, 5), "core": (1, 0)}
    store = ArtifactStore(paths.store)
    key = conv["uuid"]
    assert len(store.history("transcripts", key)) == 2  # the old version is kept, superseded
    assert "async updates" in store.current("transcripts", key).content


def test_two_conversations_with_identical_text_stay_two_transcripts_and_episodes(
        demo_project, claude_export, conversation):
    twin_a = conversation("twin-a", "Same words", "2025-02-01", "identical content")
    twin_b = dict(twin_a, uuid="twin-b")
    claude_export(demo_project.root / "exports" / "twins.json", [twin_a, twin_b])
    run_build(demo_project)
    store = ArtifactStore(demo_project.store)
    assert store.current("episodes", "twin-a") is not None
    assert store.current("episodes", "twin-b") is not None
    assert store.current("episodes", "twin-a").artifact_id != store.current("episodes", "twin-b").artifact_id


def test_context_doc_is_clean_markdown_without_source_markers(demo_project, monkeypatch):
    import re

    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "extractive")
    run_build(demo_project)
    text = (demo_project.root / "context.md").read_text()
    body = text.split("\n---\n")[0]
    assert not re.search(r"\[(state|episodes-[0-9a-f]{16}|monthly-[0-9a-f]{16})\]", body)
    assert "marathon" in body.lower()
    assert "Built offline by the extractive summariser" in text


def test_a_plan_of_some_partitions_equals_the_whole_plan_restricted_to_them(
        built, claude_export, conversation):
    """What a chunk of a distributed build plans (only its own partitions, docs/scale.md) is
    exactly the whole layer's plan for those partitions: same stale keys, reasons and
    materialization keys, same cached ones, nothing retired."""
    from synix_assets.engine import transcripts, transform
    from synix_assets.engine.context import BuildContext
    from synix_assets.engine.layers import plan_layer
    from synix_resources.llm.factory import make_client

    paths, _ = built
    claude_export(paths.root / "exports" / "new.json",
                  [conversation("new-conv-1", "Kayak trip", "2025-03-20", "sea kayaking near Sausalito")])
    store = paths.open_store()
    try:
        ctx = BuildContext(paths.load_pipeline(), store, make_client(provider="fake"), paths)
        scan = ctx.reader.scan()
        old = sorted(store.current_index("episodes"))
        store.retire("episodes", old[:2])  # two episodes to rebuild ("new"), the rest current
        for layer, partial in (("transcripts", lambda keys: transcripts.plan(ctx, "transcripts", scan, keys)),
                               ("episodes", lambda keys: transform.plan(ctx, "episodes", keys=keys))):
            whole = plan_layer(ctx, layer, scan, None)
            keys = {*whole.stale_keys, *whole.cached[:3], "no-such-partition"}
            part = partial(keys)
            assert whole.stale_keys and part.cached
            assert [(w.group_key, w.key, w.reason) for w in part.stale] == \
                [(w.group_key, w.key, w.reason) for w in whole.stale if w.group_key in keys]
            assert part.cached == [k for k in whole.cached if k in keys]
            assert part.retire == []
    finally:
        store.close()
