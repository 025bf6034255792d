"""The semantic side of the index: the embedder (loaded on first use), the vectors stored per
(model, text) key, the matrix of every unit's vector (loaded once per index generation) and the
cosine candidates of a query."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from synix_resources.fingerprints import sha256_text
from synix_resources.search.embeddings import load_embedder
from synix_resources.search.filters import Filters
from synix_resources.search.rows import CANDIDATE_UNITS, Rows
from synix_resources.search.vector_cache import VectorCache

QUERY_VECTOR_CACHE = 64       # recent query vectors kept: one search often runs twice


class Vectors:
    """`embeddings="auto"` loads the MiniLM model when it is installed, False never embeds;
    `embedder`, when given, is used instead of MiniLM; `vector_cache`, when given, is a
    `VectorCache` consulted before embedding and given every new vector."""

    def __init__(self, db, rows: Rows, *, embeddings: bool | str, embedder,
                 vector_cache: VectorCache | None = None):
        self.db = db
        self.vector_cache = vector_cache
        self.rows = rows
        self._want_embeddings = embeddings
        self._embedder = embedder
        self._embedder_loaded = embedder is not None
        self._matrix: np.ndarray | None = None
        self._matrix_units: np.ndarray | None = None
        self._matrix_searchable: np.ndarray | None = None
        self._matrix_leaf: np.ndarray | None = None
        self._matrix_generation: str | None = None
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    def embedder(self):
        if self._want_embeddings is False:
            return None
        if not self._embedder_loaded:
            self._embedder = load_embedder()
            self._embedder_loaded = True
        return self._embedder

    @staticmethod
    def key(model: str, text: str) -> str:
        return sha256_text(model + "\x00" + text)

    def embed_missing(self, texts: dict[str, str]) -> None:
        """Embed the texts (key → text) that have no stored vector yet."""
        embedder = self.embedder()
        if embedder is None or not texts:
            return
        keys = list(texts)
        have = {r[0] for r in self.rows.rows_in(
            "SELECT key FROM vectors WHERE key IN ({marks})", keys)}
        todo = [k for k in keys if k not in have]
        if not todo:
            return
        shared = self.vector_cache.get(todo, embedder.name, embedder.dim * 4) if self.vector_cache else {}
        rows = [(k, embedder.name, shared[k]) for k in todo if k in shared]
        todo = [k for k in todo if k not in shared]
        if todo:
            vecs = embedder.embed([texts[k] for k in todo])
            new = [(k, embedder.name, vecs[i].tobytes()) for i, k in enumerate(todo)]
            if self.vector_cache is not None:
                self.vector_cache.put(new)
            rows += new
        self.db.conn.executemany("INSERT OR REPLACE INTO vectors(key, model, vec) VALUES (?, ?, ?)", rows)

    def has_vectors(self) -> bool:
        return self.db.execute("SELECT 1 FROM vectors LIMIT 1").fetchone() is not None

    def _load_matrix(self) -> None:
        """All unit vectors as one contiguous float32 matrix, loaded once per generation."""
        generation = self.rows.generation()
        if self._matrix is not None and self._matrix_generation == generation:
            return
        embedder = self.embedder()
        rows = self.db.execute(
            "SELECT u.id, v.vec, u.searchable, u.level FROM units u JOIN vectors v ON v.key = u.vec_key "
            "WHERE v.model = ? ORDER BY u.id", [embedder.name]).fetchall()
        dim = embedder.dim
        matrix = np.empty((len(rows), dim), dtype=np.float32)
        for i, (_, blob, _, _) in enumerate(rows):
            matrix[i] = np.frombuffer(blob, dtype=np.float32)
        self._matrix = matrix
        self._matrix_units = np.array([r[0] for r in rows], dtype=np.int64)
        # which rows an unscoped search may return, and which are source transcripts: the
        # transcripts' vectors (most of a memory's) must not crowd a summary search's top slice
        self._matrix_searchable = np.array([bool(r[2]) for r in rows], dtype=bool)
        self._matrix_leaf = np.array([r[3] == 0 for r in rows], dtype=bool)
        self._matrix_generation = generation

    def _eligible(self, include_hidden: bool, leaves: bool) -> np.ndarray | None:
        """Matrix rows a search may return before its SQL filters (None: every row)."""
        mask = None if include_hidden else self._matrix_searchable
        if leaves:
            mask = self._matrix_leaf if mask is None else mask & self._matrix_leaf
        return mask

    def clear_query_vectors(self) -> None:
        self._query_vectors.clear()

    def _query_vector(self, text: str) -> np.ndarray:
        vec = self._query_vectors.get(text)
        if vec is None:
            vec = self.embedder().embed([text])[0]
            self._query_vectors[text] = vec
            if len(self._query_vectors) > QUERY_VECTOR_CACHE:
                self._query_vectors.popitem(last=False)
        else:
            self._query_vectors.move_to_end(text)
        return vec

    def similarities(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(unit ids sorted ascending, cosine of each with the query) over every vector."""
        self._load_matrix()
        if self._matrix is None or not len(self._matrix):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return self._matrix_units, self._matrix @ self._query_vector(text)

    def scale_rows(self, unit_ids: np.ndarray, sims: np.ndarray, include_hidden: bool,
                   leaves: bool) -> tuple[np.ndarray, np.ndarray]:
        """The (unit ids, cosines) a search's cosines are min-max scaled over: the rows it may
        return. A leaf search over a memory is then scaled over the transcripts alone, as the
        same turns indexed without any summary would be; the summaries' cosines (a summary
        sits closer to a question than any single turn) would otherwise shrink every turn's
        semantic share against its BM25."""
        mask = self._eligible(include_hidden, leaves) if len(sims) == len(self._matrix_units) else None
        if mask is None or mask.all():
            return unit_ids, sims
        return unit_ids[mask], sims[mask]

    def vector_units(self, unit_ids: np.ndarray, sims: np.ndarray, filters: Filters,
                     include_hidden: bool, restrict: set | None) -> list[tuple[int, float]]:
        if not len(sims):
            return []
        # Take a generous top slice of the rows the search may return, then filter: filters
        # are applied in SQL on that slice.
        mask = self._eligible(include_hidden, filters.leaves) if len(sims) == len(self._matrix_units) else None
        rows = np.nonzero(mask)[0] if mask is not None else np.arange(len(sims))
        if not len(rows):
            return []
        take = min(len(rows), CANDIDATE_UNITS * 4 if restrict is None else len(rows))
        top = rows[np.argpartition(-sims[rows], take - 1)[:take]] if take < len(rows) else rows
        kept = self._allowed(unit_ids, sims, top, filters, include_hidden)
        if len(kept) < CANDIDATE_UNITS and take < len(rows) and filters.narrows():
            # The filter left fewer than a full slice: its best units may lie below the slice,
            # so rank every unit the filter allows (found in SQL) instead.
            allowed = np.fromiter(self.rows.allowed_units(filters, include_hidden), dtype=np.int64)
            within = np.nonzero(np.isin(unit_ids, allowed))[0]
            if len(within) > take:
                within = within[np.argpartition(-sims[within], take - 1)[:take]]
            kept = self._allowed(unit_ids, sims, within, filters, include_hidden)
        if restrict is not None:
            kept = self.rows.restrict(kept, restrict)
        return kept[:CANDIDATE_UNITS]

    def _allowed(self, unit_ids: np.ndarray, sims: np.ndarray, picked: np.ndarray,
                 filters: Filters, include_hidden: bool) -> list[tuple[int, float]]:
        """(unit id, cosine) of the `picked` positions the filters allow, best first."""
        order = sorted(picked.tolist(), key=lambda i: (-float(sims[i]), int(unit_ids[i])))
        candidates = [(int(unit_ids[i]), float(sims[i])) for i in order]
        allowed = self.rows.filter_units([c[0] for c in candidates], filters, include_hidden)
        return [c for c in candidates if c[0] in allowed]
