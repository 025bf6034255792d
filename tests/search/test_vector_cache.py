"""Vectors shared between indexes (vector_cache.py), and the MiniLM forward pass's dtype."""
import numpy as np
import pytest

from synix_resources.fingerprints import content_hash
from synix_resources.search import embeddings
from synix_resources.search.documents import IndexDoc
from synix_resources.search.embeddings import embeddings_available
from synix_resources.search.index import SearchIndex
from tests.support.embedders import LetterEmbedder


class CountingEmbedder(LetterEmbedder):
    def __init__(self):
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts += list(texts)
        return super().embed(texts)


def _doc(aid: str, text: str) -> IndexDoc:
    return IndexDoc(artifact_id=aid, layer="episodes", level=1, content=text,
                    content_hash=content_hash(text), title=aid)


def test_a_second_index_sharing_the_vector_cache_embeds_only_texts_no_index_embedded_before(tmp_path):
    cache = tmp_path / "vectors.db"
    first = CountingEmbedder()
    a = SearchIndex(tmp_path / "a.sqlite", embedder=first, vector_cache=cache)
    a.sync("c", [_doc("one", "sourdough starter fed every morning"), _doc("two", "provenance of the memory")])
    b_embedder = CountingEmbedder()
    b = SearchIndex(tmp_path / "b.sqlite", embedder=b_embedder, vector_cache=cache)
    b.sync("c", [_doc("one", "sourdough starter fed every morning"), _doc("three", "a new text only b has")])
    assert len(first.texts) == 2
    assert b_embedder.texts == ["a new text only b has"]
    # the reused vector is the one embedding the text would store, so searches rank alike
    key = b.vectors.key(b_embedder.name, "sourdough starter fed every morning")
    get = "SELECT vec FROM vectors WHERE key = ?"
    assert b.db.execute(get, [key]).fetchone()[0] == a.db.execute(get, [key]).fetchone()[0]
    assert [h.artifact_id for h in b.search("sourdough", mode="semantic", limit=1)] == ["one"]
    a.close()
    b.close()


def test_without_a_vector_cache_every_new_index_embeds_its_texts_again(tmp_path):
    first, second = CountingEmbedder(), CountingEmbedder()
    for name, emb in (("a", first), ("b", second)):
        idx = SearchIndex(tmp_path / f"{name}.sqlite", embedder=emb)
        idx.sync("c", [_doc("one", "sourdough starter fed every morning")])
        idx.close()
    assert first.texts == second.texts == ["sourdough starter fed every morning"]


def test_a_cached_vector_of_another_size_is_embedded_again_not_reused(tmp_path):
    cache = tmp_path / "vectors.db"
    idx = SearchIndex(tmp_path / "a.sqlite", embedder=CountingEmbedder(), vector_cache=cache)
    key = idx.vectors.key("letters-26", "short")
    idx.vectors.vector_cache.put([(key, "letters-26", b"\x00" * 8)])  # not 26 float32s
    emb = CountingEmbedder()
    other = SearchIndex(tmp_path / "b.sqlite", embedder=emb, vector_cache=cache)
    other.sync("c", [_doc("s", "short")])
    assert emb.texts == ["short"]
    idx.close()
    other.close()


@pytest.mark.skipif(not embeddings_available(), reason="embedding model not installed")
def test_the_minilm_forward_pass_stays_float32_so_numpy_2_does_not_run_it_in_float64(monkeypatch):
    # A float64 scalar (np.sqrt of an int) used to promote every layer after the first
    # attention to float64 under NumPy 2: the same vectors at twice the CPU.
    seen = []
    norm = embeddings._layer_norm

    def recording(x, weight, bias, eps):
        seen.append(x.dtype)
        return norm(x, weight, bias, eps)

    monkeypatch.setattr(embeddings, "_layer_norm", recording)
    vec = embeddings.load_embedder().embed(["Caroline: I went to a support group yesterday."])
    assert vec.dtype == np.float32 and len(seen) == 13
    assert set(seen) == {np.dtype(np.float32)}
