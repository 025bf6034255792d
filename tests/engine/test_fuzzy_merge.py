"""merge(dedupe="fuzzy"): an edited re-export under another id becomes one transcript listing the
duplicate it absorbed; distinct conversations on the same topic stay apart; keys of other merges
do not change; 10,000 conversations group fast."""
from __future__ import annotations

import time

import pytest

from synix_assets.engine.context import BuildContext
from synix_assets.engine.layers import build_layer
from synix_assets.pipeline.api import Pipeline
from synix_assets.project import ProjectPaths
from synix_assets.sources import fuzzy
from synix_assets.sources.model import ConversationSummary
from synix_resources.errors import PipelineDefinitionError
from synix_resources.llm.fake import FakeClient
from synix_resources.store.artifact_store import ArtifactStore

SOURDOUGH = [
    ("human", "I want to bake a sourdough loaf this weekend but my starter has been sluggish lately."),
    ("assistant", "Feed the starter twice a day at room temperature and wait until it doubles within "
                  "six hours before you mix the dough, then use it at its peak."),
    ("human", "Should I use whole wheat flour for the feedings or keep using the white bread flour?"),
    ("assistant", "A little whole wheat or rye in the feedings wakes a slow starter up, because the "
                  "bran carries more wild yeast and nutrients than white flour does."),
]
SOURDOUGH_OTHER = [  # the same topic, another conversation
    ("human", "What hydration do you recommend for a first sourdough bake with a young starter?"),
    ("assistant", "Start around seventy percent hydration, which keeps the dough manageable while "
                  "you learn how it should feel during the stretch and folds."),
    ("human", "And how long should the bulk fermentation take in a cool kitchen in winter?"),
    ("assistant", "In a cool kitchen bulk fermentation can take eight hours or more, so watch for a "
                  "fifty percent rise and a domed, bubbly surface rather than the clock."),
]


def _export(claude_export, path, convs):
    out = []
    for cid, title, day, turns in convs:
        out.append({"uuid": cid, "name": title, "created_at": f"{day}T10:00:00Z",
                    "messages": [(who, text, f"{day}T10:{i:02d}:00Z") for i, (who, text) in enumerate(turns)]})
    claude_export(path, out)


def _ctx(tmp_path, **merge_kw):
    root = tmp_path / "p"
    (root / "exports").mkdir(parents=True)
    p = Pipeline("t", base_dir=root)
    p.source("exports", path="exports")
    p.merge("transcripts", from_=["exports"], **merge_kw)
    p.validate()
    paths = ProjectPaths(root)
    paths.state_dir.mkdir()
    return BuildContext(p, ArtifactStore(paths.store), FakeClient(), paths, run_id=None), root


def test_an_edited_re_export_under_another_id_merges_into_one_transcript(tmp_path, claude_export):
    ctx, root = _ctx(tmp_path, dedupe="fuzzy")
    edited = [*SOURDOUGH[:3], ("assistant", SOURDOUGH[3][1].replace("wakes a slow starter up",
                                                                    "revives a slow starter"))]
    _export(claude_export, root / "exports" / "claude.json", [("a-1", "Sourdough starter", "2025-03-01", SOURDOUGH)])
    _export(claude_export, root / "exports" / "other-tool.json",
            [("b-7", "Sourdough starter", "2025-03-01", edited)])
    build_layer(ctx, "transcripts", ctx.reader.scan())
    (art,) = ctx.store.list_layer("transcripts")
    (dup,) = art.metadata["meta.custom.duplicates"]
    assert {dup["conversation_id"], art.metadata["meta.chat.conversation_id"]} == {"a-1", "b-7"}
    assert 0.8 <= dup["similarity"] < 1 and dup["path"].endswith(".json")
    # a rebuild with nothing new changes nothing
    again = build_layer(ctx, "transcripts", ctx.reader.scan())
    assert [o.status for o in again.outcomes] == ["cached"]


def test_distinct_conversations_on_the_same_topic_and_day_stay_apart(tmp_path, claude_export):
    ctx, root = _ctx(tmp_path, dedupe="fuzzy")
    _export(claude_export, root / "exports" / "claude.json",
            [("a-1", "Sourdough", "2025-03-01", SOURDOUGH), ("a-2", "Sourdough", "2025-03-01", SOURDOUGH_OTHER)])
    build_layer(ctx, "transcripts", ctx.reader.scan())
    arts = ctx.store.list_layer("transcripts")
    assert len(arts) == 2 and not any("meta.custom.duplicates" in a.metadata for a in arts)


def test_metadata_match_does_not_merge_the_re_export_and_keeps_its_key(tmp_path, claude_export):
    ctx, root = _ctx(tmp_path)
    _export(claude_export, root / "exports" / "claude.json", [("a-1", "Sourdough starter", "2025-03-01", SOURDOUGH)])
    _export(claude_export, root / "exports" / "other.json", [("b-7", "Sourdough starter", "2025-03-01", SOURDOUGH)])
    build_layer(ctx, "transcripts", ctx.reader.scan())
    assert len(ctx.store.list_layer("transcripts")) == 2
    assert "threshold" not in ctx.pipeline.steps["transcripts"].config  # config, version as before


def test_threshold_is_checked_and_round_trips_through_toml():
    p = Pipeline("t", base_dir="/tmp")
    p.source("exports", path="exports")
    p.merge("transcripts", from_=["exports"], dedupe="fuzzy", threshold=0.9)
    q = Pipeline.from_toml(p.validate().to_toml(), base_dir="/tmp")
    assert q.steps["transcripts"].config["threshold"] == 0.9
    assert q.version("transcripts") == p.version("transcripts")
    for bad in (0, 1.5, "high"):
        with pytest.raises(PipelineDefinitionError) as err:
            Pipeline("t", base_dir="/tmp").merge("m", from_=["x"], dedupe="fuzzy", threshold=bad)
        assert "threshold=" in err.value.one_line()
    with pytest.raises(PipelineDefinitionError) as err:
        Pipeline("t", base_dir="/tmp").merge("m", from_=["x"], threshold=0.5)
    assert 'dedupe="fuzzy"' in err.value.one_line()


def test_grouping_ten_thousand_conversations_is_fast_and_deterministic():
    words = [f"w{i}" for i in range(5000)]
    summaries, texts = [], {}
    for i in range(10_000):
        text = " ".join(words[(i * 37 + k * 11) % 5000] for k in range(60))  # distinct texts
        h = f"h{i:05d}"
        texts[h] = text
        summaries.append(ConversationSummary(f"k{i:05d}", f"c{i}", "New chat" if i % 3 == 0 else f"Talk {i}",
                                             f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T00:00:00Z", None,
                                             h, 4, "exports", "a.json", "claude", len(text)))
    texts["h00003"] = texts["h00000"] + " and one more line"  # a near-duplicate of conversation 0
    chosen = {s.key: [s] for s in summaries}
    started = time.monotonic()
    out, merged = fuzzy.merge_near_duplicates(chosen, lambda items: {s.content_hash: texts[s.content_hash]
                                                                      for s in items},
                                              0.8, lambda items: items[0])
    assert time.monotonic() - started < 30
    assert list(merged) == ["k00000"] and [d.summary.key for d in merged["k00000"]] == ["k00003"]
    assert len(out) == 9_999
    again, _ = fuzzy.merge_near_duplicates(chosen, lambda items: {s.content_hash: texts[s.content_hash]
                                                                   for s in items},
                                           0.8, lambda items: items[0])
    assert again == out
