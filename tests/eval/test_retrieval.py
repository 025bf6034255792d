"""The pieces of memory retrieval: leaf search below the summaries, rank fusion, the speaker of
a role-prefixed message, and the per-query score cache."""
from __future__ import annotations

from synix_assets.eval.retrieval import fuse_ranks
from synix_assets.eval import retrieval
from synix_resources.fingerprints import content_hash
from synix_resources.search.documents import IndexDoc
from synix_resources.search.fusion import message_speaker
from synix_resources.search.index import SearchIndex


def _transcript(aid: str, lines: list[tuple[str, str]], *, searchable: bool) -> IndexDoc:
    messages = tuple({"index": i, "id": str(i + 1), "speaker": who, "text": text}
                     for i, (who, text) in enumerate(lines))
    content = "\n".join(f"{w}: {t}" for w, t in lines)
    return IndexDoc(artifact_id=aid, layer="transcripts", level=0, content=content,
                    content_hash=content_hash(content), messages=messages, searchable=searchable,
                    sources=({"conversation_id": aid, "message_range": [0, len(lines) - 1]},))


def _episode(aid: str, text: str, leaf: str) -> IndexDoc:
    return IndexDoc(artifact_id=aid, layer="episodes", level=1, content=text, content_hash=content_hash(text),
                    parent_ids=(leaf,), leaf_ids=(leaf,), ancestry=(leaf,),
                    sources=({"conversation_id": leaf, "message_range": [0, 1]},))


def _memory(tmp_path) -> SearchIndex:
    index = SearchIndex(tmp_path / "m.sqlite", embeddings=False)
    index.sync("memory", [
        _transcript("t1", [("User", "Alice: my sister moved to Lisbon"), ("Assistant", "Bob: the glacier hike was cold")],
                    searchable=False),
        _transcript("t2", [("User", "Alice: pottery class downtown"), ("Assistant", "Bob: Kiwi the parrot talks")],
                    searchable=False),
        _episode("e1", "Alice and Bob talked about family and travel.", "t1"),
        _episode("e2", "Alice and Bob talked about hobbies and pets.", "t2"),
    ])
    return index


def test_leaf_search_ranks_only_the_hidden_transcripts(tmp_path):
    index = _memory(tmp_path)
    try:
        # only in a hidden transcript: ordinary search finds it too (issue 41), the summaries
        # having left the word out
        assert [h.artifact_id for h in index.search("parrot", limit=5)] == ["t2"]
        passages = index.search("parrot", limit=5, per="passage", leaves=True)
        assert (passages[0].artifact_id, passages[0].message_ids) == ("t2", ("2",))
        assert {h.artifact_id for h in passages} == {"t2"}  # its neighbour matches by context
        docs = index.search("Lisbon glacier", limit=5, leaves=True)
        assert [h.artifact_id for h in docs] == ["t1"]
        assert all(h.level == 0 for h in index.search("Alice", limit=10, leaves=True))
        assert {h.layer for h in index.search("talked", limit=10)} == {"episodes"}  # summaries as before
    finally:
        index.close()


def test_repeated_query_reuses_scores_until_the_index_changes(tmp_path):
    index = _memory(tmp_path)
    try:
        first = [(h.artifact_id, h.score) for h in index.search("Lisbon", per="passage", leaves=True)]
        assert [(h.artifact_id, h.score) for h in index.search("Lisbon", per="passage", leaves=True)] == first
        index.sync("memory", [_transcript("t3", [("User", "Alice: Lisbon trams are yellow")], searchable=False)])
        assert index.search("Lisbon trams", per="passage", leaves=True)[0].artifact_id == "t3"
        assert "t1" not in [h.artifact_id for h in index.search("Lisbon", per="passage", leaves=True)]  # t1 gone
    finally:
        index.close()


def test_role_prefixed_message_names_both_speakers():
    assert message_speaker("User: Caroline: I went to a support group.") == "user caroline"
    assert message_speaker("Caroline: I went to a support group.") == "caroline"
    assert message_speaker("no speaker here") is None


def test_rank_fusion_prefers_items_high_in_the_weighted_lists():
    # c: 1/5 + 0.3/3 = 0.30 passes b (1/4) but not a (1/3); d: 0.3/4 comes last
    assert fuse_ranks([["a", "b", "c"], ["c", "d"]], (1.0, 0.3), 2) == ["a", "c", "b", "d"]
    assert fuse_ranks([["a", "b"], ["b", "a"]], (1.0, 1.0), 2)[0] in {"a", "b"}
    assert fuse_ranks([["a"], ["b"]], (1.0, 2.0), 2) == ["b", "a"]
    assert fuse_ranks([[], []]) == []


def _units(index: SearchIndex, aid: str) -> list[tuple[str, str]]:
    return index.db.execute(
        "SELECT u.body, u.context FROM units u JOIN docs d ON d.id = u.doc_id "
        "WHERE d.artifact_id = ? ORDER BY u.ord", [aid]).fetchall()


def test_a_relayed_transcript_is_indexed_as_its_people_said_it(tmp_path):
    index = SearchIndex(tmp_path / "r.sqlite", embeddings=False)
    try:
        index.sync("memory", [
            _transcript("relayed", [("User", "Alice: my sister moved to Lisbon"),
                                    ("Assistant", "Bob: the glacier hike was cold")], searchable=False),
            _transcript("named", [("Alice", "my sister moved to Lisbon"),
                                  ("Bob", "the glacier hike was cold")], searchable=False),
            # one message without a name: an ordinary chat whose user once typed "Note: …"
            _transcript("chat", [("User", "Note: the build failed"), ("Assistant", "Try a clean build.")],
                        searchable=False)])
        assert _units(index, "relayed") == _units(index, "named") == [
            ("Alice: my sister moved to Lisbon", "Bob: the glacier hike was cold"),
            ("Bob: the glacier hike was cold", "Alice: my sister moved to Lisbon")]
        assert [body for body, _ in _units(index, "chat")] == ["User: Note: the build failed",
                                                             "Assistant: Try a clean build."]
    finally:
        index.close()


def test_summaries_never_displace_the_leaf_rankings_first_five():
    # the leaf ranking is raw RAG's: whatever the summaries credit, the memory's first five
    # sessions/turns are raw RAG's first five, in order; summaries only move items further down
    leaves = [f"l{i}" for i in range(10)]
    for summaries in (list(reversed(leaves)), ["x1", "x2", "x3"], leaves[5:] + ["x1"]):
        fused = fuse_ranks([leaves, summaries], (1.0, retrieval.SUMMARY_WEIGHT), retrieval.FUSION_K)
        assert fused[:5] == leaves[:5], summaries
    # around rank 10 a summary does count: the leaves' 11th with the summaries' best credit
    # passes the leaves' 10th
    fused = fuse_ranks([leaves + ["l10"], ["l10"]], (1.0, retrieval.SUMMARY_WEIGHT), retrieval.FUSION_K)
    assert fused.index("l10") < fused.index("l9")
