"""The cosine candidates of a search are taken among the rows it may return: a memory's source
transcripts (hidden, most of its vectors) must not crowd the summaries out of an unscoped
semantic search, nor the summaries the transcripts out of a leaf search."""
from __future__ import annotations


from synix_resources.fingerprints import content_hash
from synix_resources.search.documents import IndexDoc
from synix_resources.search.index import SearchIndex
from synix_resources.search.rows import CANDIDATE_UNITS
from tests.support.embedders import LetterEmbedder




def _leaf(i: int) -> IndexDoc:
    messages = ({"index": 0, "id": "m0", "speaker": "user", "text": f"zzzz zzzz {i}"},)
    content = f"user: zzzz zzzz {i}"
    return IndexDoc(artifact_id=f"t{i}", layer="transcripts", level=0, content=content,
                    content_hash=content_hash(content), title="", searchable=False, messages=messages)


def _episode(i: int) -> IndexDoc:
    content = f"zebra zoo fizz buzz {i}"
    return IndexDoc(artifact_id=f"e{i}", layer="episodes", level=1, content=content,
                    content_hash=content_hash(content), title="", parent_ids=(f"t{i}",),
                    ancestry=(f"t{i}",))


def test_hidden_transcripts_do_not_crowd_the_summaries_out_of_their_own_ranking(tmp_path):
    leaves = [_leaf(i) for i in range(CANDIDATE_UNITS * 4 + 100)]  # more than one cosine slice
    episodes = [_episode(i) for i in range(12)]
    index = SearchIndex(tmp_path / "m.sqlite", embedder=LetterEmbedder())
    index.sync("memory", leaves + episodes)
    assert index.stats()["vectors"] >= len(leaves)  # the hidden transcripts have vectors too
    for mode in ("semantic", "hybrid"):
        hits = index.search("zzz", mode=mode, limit=10, layers=["episodes"])
        assert len(hits) == 10 and {h.layer for h in hits} == {"episodes"}, mode
        # unscoped, the transcripts rank too; one whose episode matched is folded into it
        unscoped = {h.artifact_id for h in index.search("zzz", mode=mode, limit=200)}
        assert len(unscoped) == 200 and not unscoped & {f"t{i}" for i in range(12)}, mode
        # and leaf search ranks the transcripts, which are the closest
        assert {h.layer for h in index.search("zzz", mode=mode, limit=10, leaves=True)} == {"transcripts"}
