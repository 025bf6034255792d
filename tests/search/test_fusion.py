"""Hybrid score fusion, artifact score aggregation and dated unit titles."""
import numpy as np
import pytest

from synix_resources.fingerprints import content_hash
from synix_resources.search import fusion
from synix_resources.search.documents import IndexDoc
from synix_resources.search.embeddings import embeddings_available
from synix_resources.search.fusion import (SPREAD_WEIGHT, aggregate_by_doc, fuse_scores,
                                           with_document_prior)
from synix_resources.search.index import SearchIndex
from synix_resources.search.units import unit_title


def test_fusion_mixes_normalised_scores_with_the_given_weight():
    unit_ids = np.array([1, 2, 3, 4])
    sims = np.array([0.9, 0.5, 0.1, 0.3], dtype=np.float32)  # min 0.1, max 0.9
    lexical = [(3, 10.0), (2, 5.0)]
    semantic = [(1, 0.9), (2, 0.5)]
    fused = dict(fuse_scores(lexical, semantic, unit_ids, sims, weight=0.4))
    assert fused[3] == pytest.approx(0.6 * 1.0 + 0.4 * 0.0)
    assert fused[2] == pytest.approx(0.6 * 0.5 + 0.4 * 0.5)
    assert fused[1] == pytest.approx(0.4 * 1.0)  # no shared words: cosine only
    assert 4 not in fused  # found by neither ranker


def test_fusion_looks_up_the_cosine_of_a_unit_only_full_text_found():
    unit_ids = np.array([1, 2, 3])
    sims = np.array([0.0, 1.0, 0.5], dtype=np.float32)
    fused = dict(fuse_scores([(3, 2.0)], [(2, 1.0)], unit_ids, sims, weight=0.5))
    assert fused[3] == pytest.approx(0.5 + 0.5 * 0.5)
    # A unit without a vector (not in unit_ids) gets no semantic credit.
    assert dict(fuse_scores([(9, 2.0)], [], unit_ids, sims, 0.5))[9] == pytest.approx(0.5)


def test_fusion_is_deterministic_and_breaks_ties_on_unit_id():
    unit_ids = np.array([1, 2, 3])
    sims = np.array([0.2, 0.2, 0.2], dtype=np.float32)
    lexical = [(3, 1.0), (1, 1.0), (2, 1.0)]
    first = fuse_scores(lexical, [], unit_ids, sims, 0.4)
    assert first == fuse_scores(list(reversed(lexical)), [], unit_ids, sims, 0.4)
    assert [uid for uid, _ in first] == [1, 2, 3]


def test_artifact_with_several_good_units_outranks_one_lucky_unit():
    scored = [(10, 1.0), (20, 0.9), (21, 0.8), (22, 0.7), (11, 0.0)]
    doc_of = {10: 1, 11: 1, 20: 2, 21: 2, 22: 2}
    picked = aggregate_by_doc(scored, doc_of)
    assert [uid for uid, _ in picked] == [20, 10]  # doc 2 first, named by its best unit
    assert dict(picked)[20] == pytest.approx(0.9 + SPREAD_WEIGHT * (0.8 + 0.7))
    assert dict(picked)[10] == pytest.approx(1.0)


def test_aggregation_counts_at_most_spread_units_and_no_negative_scores(monkeypatch):
    monkeypatch.setattr(fusion, "SPREAD_UNITS", 2)
    picked = aggregate_by_doc([(1, 0.5), (2, 0.4), (3, 0.4), (4, -0.3)],
                              {1: 7, 2: 7, 3: 7, 4: 8})
    assert dict(picked) == {1: pytest.approx(0.5 + SPREAD_WEIGHT * 0.4), 4: -0.3}


def test_passage_in_the_best_matching_document_outranks_an_equal_lone_passage():
    # Doc 1 answers with three units; doc 2 has one unit scoring the same as doc 1's best.
    scored = [(20, 1.0), (10, 1.0), (11, 0.6), (12, 0.5)]
    doc_of = {10: 1, 11: 1, 12: 1, 20: 2}
    ranked = with_document_prior(scored, doc_of, weight=0.5)
    assert [uid for uid, _ in ranked][:2] == [10, 20]
    best_doc = 1.0 + SPREAD_WEIGHT * (0.6 + 0.5)
    assert dict(ranked)[10] == pytest.approx(1.0 + 0.5)
    assert dict(ranked)[20] == pytest.approx(1.0 + 0.5 * 1.0 / best_doc)
    assert dict(ranked)[12] == pytest.approx(0.5 + 0.5)


def test_document_prior_of_zero_keeps_the_passage_order():
    scored = [(3, 0.9), (1, 0.5), (2, 0.5)]
    assert with_document_prior(scored, {1: 1, 2: 1, 3: 2}, weight=0.0) == scored


def test_passage_search_puts_the_answering_conversations_turn_first(tmp_path, monkeypatch):
    index = SearchIndex(tmp_path / "p.sqlite", embeddings=False)
    index.sync("t", [
        _session("garden", None, ["My tomatoes finally ripened after a long wet summer.",
                                  "The tomatoes in the back bed are turning red now.",
                                  "I planted those tomatoes in May with the kids."]),
        _session("chat", None, ["Tomatoes!", "Then we talked about cars all evening."]),
    ])
    # On words alone the one-word line wins; the conversation about tomatoes lifts its turns.
    monkeypatch.setattr(fusion, "DOCUMENT_PRIOR", 0.0)
    assert index.search("tomatoes", per="passage", limit=4)[0].artifact_id == "chat"
    monkeypatch.setattr(fusion, "DOCUMENT_PRIOR", 0.5)
    hits = index.search("tomatoes", per="passage", limit=4)
    assert [h.artifact_id for h in hits] == ["garden", "garden", "garden", "chat"]
    index.close()


def test_unit_title_spells_out_the_date():
    assert unit_title("Trip", "2023-05-08T13:56:00") == "Trip 8 May 2023"
    assert unit_title("", "2024-03-02") == "2 March 2024"
    assert unit_title("Notes", None) == "Notes"
    assert unit_title("Notes", "sometime") == "Notes"


def _session(aid, date, lines):
    messages = tuple({"index": i, "id": f"{aid}-{i}", "speaker": "ann", "text": t}
                     for i, t in enumerate(lines))
    content = "\n".join(lines)
    return IndexDoc(artifact_id=aid, layer="transcripts", level=0, content=content,
                    content_hash=content_hash(content), date=date, messages=messages)


def test_a_date_in_the_query_finds_the_conversation_held_that_day(tmp_path):
    index = SearchIndex(tmp_path / "d.sqlite", embeddings=False)
    index.sync("t", [_session("s1", "2023-05-08T10:00:00", ["We talked about painting."]),
                     _session("s2", "2023-10-13T10:00:00", ["We talked about painting."])])
    hits = index.search("painting on 13 October 2023")
    assert hits[0].artifact_id == "s2"
    index.close()


def test_an_index_written_before_dated_titles_is_upgraded_on_sync(tmp_path):
    path = tmp_path / "old.sqlite"
    index = SearchIndex(path, embeddings=False)
    docs = [_session("s1", "2023-10-13T10:00:00", ["Fixed the bike."])]
    index.sync("t", docs)
    # Simulate the old format: plain titles, no format marker.
    index.db.execute("UPDATE units SET title = ''")
    index.db.execute("DELETE FROM meta WHERE key = 'unit_titles'")
    index.db.conn.commit()
    count = "SELECT count(*) FROM units_fts WHERE units_fts MATCH 'title:october'"
    assert index.db.execute(count).fetchone()[0] == 0
    index.sync("t", docs)
    titles = [r[0] for r in index.db.execute("SELECT title FROM units")]
    assert titles == ["13 October 2023"]
    assert index.db.execute(count).fetchone()[0] == 1
    index.close()


@pytest.mark.skipif(not embeddings_available(), reason="embedding model not installed")
def test_hybrid_ranks_a_meaning_match_and_a_word_match(tmp_path):
    index = SearchIndex(tmp_path / "h.sqlite")
    index.sync("t", [_session("pets", None, ["I adopted a kitten last week.",
                                              "We went to the vet."]),
                     _session("boats", None, ["I bought a kayak.", "Paddling is fun."]),
                     _session("food", None, ["The bakery sells croissants."])])
    hits = index.search("kitten", mode="hybrid")
    assert hits[0].artifact_id == "pets"
    hits = index.search("a small cat", mode="hybrid")
    assert hits[0].artifact_id == "pets"
    again = index.search("a small cat", mode="hybrid")
    assert [h.to_dict() for h in hits] == [h.to_dict() for h in again]
    index.close()


@pytest.mark.skipif(not embeddings_available(), reason="embedding model not installed")
def test_a_query_embeds_single_threaded_to_the_same_vector_and_threads_are_restored():
    from synix_resources.search import embeddings as emb

    embedder = emb.load_embedder()
    blas = emb._BlasThreads()
    before = blas._get() if blas._set is not None else None
    texts = ["where did my sister move?"] + [f"filler text number {i}" for i in range(8)]
    alone = embedder.embed(texts[:1])[0]  # single-threaded path
    batched = embedder.embed(texts)[0]    # threaded path
    assert np.allclose(alone, batched, atol=1e-5)
    if before is not None:
        assert blas._get() == before
