"""The search index projection: FTS5 (BM25) + MiniLM vectors over artifacts, provenance-aware.

Retrieval unit: a document is cut into *units* before indexing. A transcript that comes with its
messages gets one unit per message, searched with its neighbouring messages as a lower-weighted
`context` column (BM25F-style), so a hit names the exact messages (`message_range`) while a
question whose words are spread over two adjacent turns still matches. Other documents are cut
into ~120-word paragraph chunks. Artifact-level results take each artifact's best unit.

Everything lives in one SQLite file owned by the index (WAL, busy timeout); the index never
reads the artifact store: callers hand over `IndexDoc`s that already carry their provenance.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Collection, Iterable

import sqlite_utils

from synix_resources.disk import disk_full_error, is_disk_full, maps_disk_full
from synix_resources.errors import SearchError
from synix_resources.private import private_file
from synix_resources.search import schema
from synix_resources.search.documents import IndexDoc, SearchResults, SyncStats
from synix_resources.search.index_read import MODES, IndexReader
from synix_resources.search.index_write import IndexWriter
from synix_resources.search.rows import Rows
from synix_resources.search.units import UNIT_TITLE_FORMAT
from synix_resources.search.vector_cache import VectorCache
from synix_resources.search.vectors import Vectors

__all__ = ["MODES", "SearchIndex"]


class SearchIndex:
    """A search index in its own SQLite file. `embeddings="auto"` computes MiniLM vectors at sync
    when the optional model is installed; False keeps the index FTS-only. `embedder` replaces
    the MiniLM model with any object that has `name`, `dim` and `embed(texts) -> array`.
    `vector_cache` names a file of vectors shared with other indexes (vector_cache.py): a text
    already embedded by any of them is not embedded again.

    It owns the connection; the work is done by the parts sharing it: `rows` (row reads and
    BM25 candidates), `vectors` (embedder, vectors, cosine candidates), a writer and a reader."""

    def __init__(self, path: str | Path, *, embeddings: bool | str = "auto", embedder=None,
                 vector_cache: str | Path | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        private_file(self.path)  # memory text: 0600, and SQLite's -wal/-shm follow it
        try:
            conn = sqlite3.connect(str(self.path), timeout=10, check_same_thread=False)
            self.db = sqlite_utils.Database(conn)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA busy_timeout=10000")
            self.db.execute("PRAGMA secure_delete=ON")
            self._ensure_schema()
        except sqlite3.DatabaseError as exc:
            if is_disk_full(exc, self.path):
                raise disk_full_error(self.path, "opening the search index") from exc
            raise SearchError(f"search index {self.path} cannot be opened: {exc}",
                              hint="delete the file and rebuild the index") from exc
        self.rows = Rows(self.db)
        self.vectors = Vectors(self.db, self.rows, embeddings=embeddings, embedder=embedder,
                               vector_cache=VectorCache(vector_cache) if vector_cache else None)
        self._writer = IndexWriter(self.db, self.vectors)
        self._reader = IndexReader(self.db, self.path, self.rows, self.vectors)

    def _ensure_schema(self) -> None:
        db = self.db
        if "docs" in db.table_names():
            schema.upgrade(db)
            return
        with db.conn:
            db.execute("BEGIN IMMEDIATE")  # DDL too: a half-created file must not survive
            if "docs" not in db.table_names():  # another process may have won the race
                schema.create(db, UNIT_TITLE_FORMAT)

    # -- writing ----------------------------------------------------------------------------

    def doc_hashes(self, name: str) -> dict[str, tuple[str, str]]:
        """artifact id → (content hash, meta hash) of every doc in collection `name`: what a
        caller diffs its documents against to `update` only what changed."""
        return self._writer.doc_hashes(name)

    @maps_disk_full("updating the search index")
    def sync(self, name: str, docs: Iterable[IndexDoc], *, reindex: bool = False,
             batch: int | None = None) -> SyncStats:
        """Make collection `name` hold exactly `docs`: only changed docs are re-indexed, docs no
        longer present are removed, and a sync with nothing to change writes nothing.
        `reindex=True` writes every doc again (after embeddings were switched on or off) and
        drops the vectors no unit uses any more. `docs` is read lazily and written `batch` docs
        per transaction (see `update`); the removals come last, once every doc was seen."""
        return self._writer.sync(name, docs, reindex=reindex, batch=batch)

    @maps_disk_full("updating the search index")
    def update(self, name: str, docs: Iterable[IndexDoc], *, remove: Iterable[str] = (),
               reindex: bool = False, batch: int | None = None) -> SyncStats:
        """Add or replace `docs` in collection `name` (a doc equal to the indexed one is left
        alone) and remove the ids in `remove`; other docs stay as they are.

        `docs` is read lazily, `batch` docs at a time: each batch is cut into units, embedded
        (outside any write transaction) and written in one transaction, so memory is bounded
        by a batch however many docs change, and an interrupted update keeps the batches it
        wrote (every doc is whole; the caller's next update finds the rest still different)."""
        return self._writer.update(name, docs, remove=remove, reindex=reindex, batch=batch)

    def provenance(self, artifact_ids: Iterable[str]) -> dict[str, dict]:
        """artifact id -> {collection, ancestry, leaf_ids, sources} of those indexed: what a
        document built on them (an agent's memory citing them) inherits."""
        return {r[0]: {"collection": r[1], "ancestry": json.loads(r[2]),
                       "leaf_ids": json.loads(r[3]), "sources": json.loads(r[4])}
                for r in self.rows.rows_in(
                    "SELECT artifact_id, collection, ancestry, leaf_ids, sources FROM docs "
                    "WHERE artifact_id IN ({marks})", list(artifact_ids))}

    def layer_ids(self, layer: str) -> list[str]:
        """The ids of the documents of `layer`, whatever their collection."""
        return [r[0] for r in self.db.execute("SELECT artifact_id FROM docs WHERE layer = ?",
                                              [layer])]

    def has_vectors(self) -> bool:
        return self.vectors.has_vectors()

    def remove(self, artifact_ids: Iterable[str]) -> int:
        """Delete these artifacts (and their vectors) from the index; returns how many were."""
        return self._writer.remove(artifact_ids)

    def delete_where_content_contains(self, marker: str) -> list[str]:
        """Forget every artifact whose content contains `marker` (case-sensitive); returns ids."""
        return self._writer.delete_where_content_contains(marker)

    def purge_free_pages(self) -> None:
        """Make forgotten text unrecoverable from the file: drop vectors no unit uses, rewrite
        the FTS segments, checkpoint the WAL and VACUUM (secure_delete zeroes freed pages)."""
        self._writer.purge_free_pages()

    def stats(self) -> dict:
        # searchable: found by an unscoped search; the other layers only when a search names them
        by_layer = {r[0]: {"level": r[1], "docs": r[2], "searchable": bool(r[3])} for r in self.db.execute(
            "SELECT layer, MIN(level), COUNT(*), MAX(searchable) FROM docs GROUP BY layer ORDER BY layer")}
        return {
            "path": str(self.path),
            "docs": self.db.execute("SELECT COUNT(*) FROM docs").fetchone()[0],
            "units": self.db.execute("SELECT COUNT(*) FROM units").fetchone()[0],
            "vectors": self.db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0],
            "layers": by_layer,
            "collections": [r[0] for r in self.db.execute(
                "SELECT DISTINCT collection FROM docs ORDER BY collection")],
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
        }

    def close(self) -> None:
        self.db.conn.close()

    # -- reading ----------------------------------------------------------------------------

    def search(self, query: str, *, layers: Iterable[str] | None = None, mode: str = "fts",
               exact: bool = False, limit: int = 10, since: str | None = None,
               until: str | None = None, source: str | None = None,
               per: str = "artifact", leaves: bool = False, period: str | None = None,
               conversation: str | None = None, dates: bool = True,
               exclude: Collection[str] = ()) -> SearchResults:
        """Ranked hits for `query`.

        `layers` scopes to those layers; unscoped, the summaries and the source transcripts
        rank together and a matching record built from at most `fusion.NARROW_COVER`
        conversations stands for the matching records below it (reached by `drill_down`); a
        wider one (the core) ranks beside them. `exact=True` finds the literal phrase in the leaves.
        `per="passage"` returns one hit per matched unit (a message of a transcript) instead of
        one per artifact. `leaves=True` ranks only the leaves (level-0 artifacts, hidden
        transcripts included): the words of the conversations themselves, below every summary
        ("leaf bypass").

        Filters (`filters.py`, each SQL, in every mode): `since`/`until` bound the document's
        date, inclusive (a year, month, day or ISO date-time; a rollup is dated by its earliest
        source); `period` is the document's own `meta.time.period` (2024-03, 2024-W09,
        2024-Q1); `conversation` keeps the documents built from that conversation (its
        transcript, its episode, the rollups over it); `source` is the export kind.

        A query naming a calendar period ("in May 2023", "on 7 May 2023", `when.py`) with no
        date filter of its own prefers the documents dated inside it (the memory knows when
        each conversation happened): the same search restricted to each period (padded by a
        few days) is fused ahead of the plain ranking; hits keep their own scores. `dates=False`
        ranks by the words alone (the raw-RAG baseline, which has no pipeline's dates to use).
        `exclude`: artifact ids ranked as if not indexed (a brief as of a date leaves out the
        records that took in later sources, and what lies below them surfaces).
        """
        return self._reader.search(query, layers=layers, mode=mode, exact=exact, limit=limit,
                                   since=since, until=until, source=source, per=per,
                                   leaves=leaves, period=period, conversation=conversation,
                                   dates=dates, exclude=exclude)

    def drill_down(self, artifact_id: str, query: str | None = None, *, mode: str = "fts",
                   limit: int = 10, per: str = "artifact") -> SearchResults:
        """Below one artifact: without a query its direct parents; with one, the hits among
        everything in its ancestry (non-searchable leaves included), best first;
        `per="passage"` gives one hit per matched unit (a transcript's messages)."""
        return self._reader.drill_down(artifact_id, query, mode=mode, limit=limit, per=per)

    def clear_query_cache(self) -> None:
        """Forget cached query vectors (benchmarks time each mode from a cold cache)."""
        self._reader.clear_query_cache()
