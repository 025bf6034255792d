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

import dataclasses
import functools
import json
import logging
import re
import sqlite3
import unicodedata
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import sqlite_utils

from synix_resources.disk import disk_full_error, is_disk_full, maps_disk_full
from synix_resources.errors import SearchError
from synix_resources.fingerprints import sha256_text
from synix_resources.private import private_file
from synix_resources.search import schema
from synix_resources.search.documents import (Hit, HitSources, IndexDoc, SearchResults,
                                              SyncStats)
from synix_resources.search.embeddings import load_embedder
from synix_resources.search.query import (ParsedQuery, check_filters, check_phrase, fts_match,
                                          parse_query, require_text)

log = logging.getLogger(__name__)

MODES = ("fts", "semantic", "hybrid")
EXACT_PROBE_CHARS = 64  # head of an exact phrase used to find candidates (see `_exact`)
# BM25F column weights: the message itself, its neighbours, the document title.
BM25_WEIGHTS = (1.0, 0.3, 0.5)
CONTEXT_MESSAGES = 2          # neighbours on each side that feed a message's context column
EMBED_CONTEXT = 0             # neighbours embedded with a message: 1 helped session recall
                              # (S@5 .76→.82) but blurred turn ranking (T@10 .55→.48) on LoCoMo
CHUNK_WORDS = 120             # size of a non-transcript chunk
CANDIDATE_UNITS = 400         # units fetched per ranker before grouping by artifact
# Hybrid = weighted score fusion: (1 - w) * BM25 / best BM25 + w * min-max scaled cosine.
# Scores, unlike RRF ranks, keep how far ahead the best match is. w was picked on LoCoMo
# conv-26/30/41 and checked on conv-42/43 (eval/locomo.py); 0.3-0.5 all beat RRF on both halves.
SEMANTIC_WEIGHT = 0.4
# An artifact's score = its best unit + SPREAD_WEIGHT x the next SPREAD_UNITS - 1 units: a
# session that answers with several messages outranks one lucky line (session R@1 +2 points).
SPREAD_WEIGHT = 0.2
SPREAD_UNITS = 5
# A passage's score gains DOCUMENT_PRIOR x its artifact's score (as a share of the best
# artifact's): the turns of the conversation that answers best come first. Picked on LoCoMo
# conv-26/30/41, checked on conv-42/43: turn R@10 +0.7 / +1.3 points; 0.2-1.0 all help.
DOCUMENT_PRIOR = 0.5
# A passage whose speaker the query names ("what did Caroline…", "what did the assistant…")
# gains SPEAKER_PRIOR x the best passage's score: questions about a person are mostly answered
# by that person's own messages, whose name BM25 weighs little (it is on half the turns).
# Picked on LoCoMo conv-26/30/41 (hybrid turn R@10 +1.0), checked on conv-42/43.
SPEAKER_PRIOR = 0.15
QUERY_VECTOR_CACHE = 64       # recent query vectors kept: one search often runs twice
SCORED_QUERY_CACHE = 4        # recent (query, mode, filters) unit rankings kept
SYNC_BATCH = 200              # docs cut into units, embedded and written per transaction
UNIT_ROW_CACHE = 50_000       # unit rows kept between queries (cleared when the index changes)
# Bumped when what `units.title` holds changes, so `sync` rewrites old indexes' unit titles.
UNIT_TITLE_FORMAT = "title+date-1"


@dataclass(frozen=True)
class _Unit:
    ord: int
    first_msg: int | None
    last_msg: int | None
    msg_ids: tuple
    body: str
    context: str
    embed_text: str


def _message_line(msg: dict) -> str:
    speaker = msg.get("speaker") or msg.get("role") or ""
    text = msg.get("text") or ""
    return f"{speaker}: {text}" if speaker else text


def _chunks(text: str, size: int = CHUNK_WORDS) -> list[str]:
    """Paragraph-aligned chunks of about `size` words; a long paragraph is split by words."""
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for para in [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]:
        words = para.split()
        if count and count + len(words) > size:
            chunks.append("\n\n".join(current))
            current, count = [], 0
        while len(words) > size:
            chunks.append(" ".join(words[:size]))
            words = words[size:]
        if words:
            current.append(" ".join(words))
            count += len(words)
    if current:
        chunks.append("\n\n".join(current))
    return chunks or [text]


def unit_title(title: str | None, date: str | None) -> str:
    """The text of a unit's `title` column: the document title plus its date spelled out
    ("8 May 2023"), so a query naming a day or month matches the conversation held then."""
    return " ".join(part for part in (title or "", _date_words(date)) if part)


def _date_words(date: str | None) -> str:
    if not date:
        return ""
    try:
        when = datetime.fromisoformat(str(date).replace("Z", "+00:00"))
    except ValueError:
        return ""
    return f"{when.day} {when.strftime('%B')} {when.year}"


def build_units(doc: IndexDoc) -> list[_Unit]:
    if doc.messages:
        lines = [_message_line(m) for m in doc.messages]
        units = []
        for i, msg in enumerate(doc.messages):
            lo, hi = max(0, i - CONTEXT_MESSAGES), min(len(lines), i + CONTEXT_MESSAGES + 1)
            context = "\n".join(lines[j] for j in range(lo, hi) if j != i)
            index = int(msg.get("index", i))
            lo, hi = max(0, i - EMBED_CONTEXT), min(len(lines), i + EMBED_CONTEXT + 1)
            units.append(_Unit(i, index, index, (str(msg.get("id", index)),), lines[i], context,
                               "\n".join(lines[lo:hi])))
        return units
    return [_Unit(i, None, None, (), chunk, "", chunk)
            for i, chunk in enumerate(_chunks(doc.content))]


def fuse_scores(lexical: list[tuple[int, float]], semantic: list[tuple[int, float]],
                unit_ids: np.ndarray, sims: np.ndarray,
                weight: float) -> list[tuple[int, float]]:
    """Weighted score fusion of a BM25 ranking and a cosine ranking, best first.

    BM25 is divided by the query's best BM25 (0 for a unit the words miss); cosine is min-max
    scaled over every unit of the index (`unit_ids` ascending, `sims` aligned), so a unit found
    by only one ranker still gets its real score from the other. Ties break on unit id.
    """
    lex = dict(lexical)
    best = max(lex.values(), default=0.0)
    lo, hi = (float(sims.min()), float(sims.max())) if len(sims) else (0.0, 0.0)
    span = hi - lo if hi > lo else 1.0
    cosine = dict(semantic)
    fused: dict[int, float] = {}
    for uid in dict.fromkeys([u for u, _ in lexical] + [u for u, _ in semantic]):
        if uid not in cosine:
            at = int(np.searchsorted(unit_ids, uid))
            found = at < len(unit_ids) and unit_ids[at] == uid
            cosine[uid] = float(sims[at]) if found else lo  # no vector: no semantic credit
        lexical_part = lex.get(uid, 0.0) / best if best > 0 else 0.0
        fused[uid] = (1.0 - weight) * lexical_part + weight * (cosine[uid] - lo) / span
    return sorted(fused.items(), key=lambda x: (-x[1], x[0]))


def aggregate_by_doc(scored: list[tuple[int, float]],
                     doc_of: dict[int, int]) -> list[tuple[int, float]]:
    """One (best unit, artifact score) per artifact, best first: the artifact score is its best
    unit's plus SPREAD_WEIGHT x its next SPREAD_UNITS - 1 units' (positive) scores."""
    per_doc: dict[int, list[tuple[int, float]]] = {}
    for uid, score in scored:  # `scored` is best first, so each list is too
        per_doc.setdefault(doc_of[uid], []).append((uid, score))
    picked = []
    for units in per_doc.values():
        best_uid, best = units[0]
        rest = sum(max(0.0, score) for _, score in units[1:SPREAD_UNITS])
        picked.append((best_uid, best + SPREAD_WEIGHT * rest))
    return sorted(picked, key=lambda x: (-x[1], x[0]))


def with_document_prior(scored: list[tuple[int, float]], doc_of: dict[int, int],
                        weight: float) -> list[tuple[int, float]]:
    """Passage scores plus `weight` x their artifact's `aggregate_by_doc` score divided by the
    best artifact's, best first (ties on unit id)."""
    if not scored or weight <= 0:
        return list(scored)
    doc_score = {doc_of[uid]: score for uid, score in aggregate_by_doc(scored, doc_of)}
    best = max(doc_score.values())
    if best <= 0:
        return list(scored)
    boosted = [(uid, score + weight * max(0.0, doc_score[doc_of[uid]]) / best)
               for uid, score in scored]
    return sorted(boosted, key=lambda x: (-x[1], x[0]))


def message_speaker(body: str) -> str | None:
    """The speaker of a message unit ("Caroline: …" → "caroline"), None for other units. A
    message of a multi-party chat exported as one side of a two-role conversation reads
    "User: Caroline: …": both names are its speaker ("user caroline")."""
    names = []
    rest = body
    for _ in range(2):
        head, sep, tail = rest.partition(": ")
        if not (sep and 0 < len(head) <= 40 and "\n" not in head):
            break
        names.append(head.strip().casefold())
        rest = tail
    return " ".join(names) or None


def with_speaker_prior(scored: list[tuple[int, float]], speakers: dict[int, str | None],
                       terms: Iterable[str], weight: float) -> list[tuple[int, float]]:
    """Passages spoken by someone the query names gain `weight` x the best score, best first."""
    named = {t.casefold() for t in terms}
    if not scored or weight <= 0 or not named:
        return list(scored)
    lift = weight * max(0.0, max(score for _, score in scored))
    boosted = [(uid, score + (lift if speakers.get(uid) and set(speakers[uid].split()) & named else 0.0))
               for uid, score in scored]
    return sorted(boosted, key=lambda x: (-x[1], x[0]))


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W_]+")  # close enough to unicode61 for choosing a snippet sentence


def _highlight(text: str, stems: set[str], width: int = 240) -> str:
    """The sentence of `text` sharing most query words, with those words in [brackets]."""
    sentences = [s for s in _SENTENCE.split(text) if s.strip()] or [text]

    def overlap(sentence: str) -> int:
        return len({_stem(t) for t in _WORD.findall(sentence.casefold())} & stems)

    best = max(sentences, key=overlap)  # max() keeps the first on ties: deterministic
    if len(best) > width:
        best = best[:width].rsplit(" ", 1)[0] + "…"

    def mark(m: re.Match) -> str:
        word = m.group(0)
        return f"[{word}]" if _stem(word.casefold()) in stems else word

    return re.sub(r"[^\W_]+", mark, best)


@functools.lru_cache(maxsize=65536)  # called for every word of every snippet candidate
def _stem(word: str) -> str:
    # A light suffix strip, only to decide what to highlight; ranking uses FTS5's porter.
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


COVER_RATIO = 0.8  # a higher hit hides a lower one it summarises if it scores ≥ 80 % as well


class SearchIndex:
    """A search index in its own SQLite file. `embeddings="auto"` computes MiniLM vectors at sync
    when the optional model is installed; False keeps the index FTS-only. `embedder` replaces
    the MiniLM model with any object that has `name`, `dim` and `embed(texts) -> array`."""

    def __init__(self, path: str | Path, *, embeddings: bool | str = "auto", embedder=None):
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
        self._want_embeddings = embeddings
        self._embedder = embedder
        self._embedder_loaded = embedder is not None
        self._matrix: np.ndarray | None = None
        self._matrix_units: np.ndarray | None = None
        self._matrix_generation: str | None = None
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._scored_units: OrderedDict[tuple, list] = OrderedDict()
        self._unit_cache: dict[int, dict] = {}
        self._unit_cache_generation: str | None = None

    # -- schema -----------------------------------------------------------------------------

    def _ensure_schema(self) -> None:
        db = self.db
        if "docs" in db.table_names():
            schema.upgrade(db)
            return
        with db.conn:
            db.execute("BEGIN IMMEDIATE")  # DDL too: a half-created file must not survive
            if "docs" not in db.table_names():  # another process may have won the race
                schema.create(db, UNIT_TITLE_FORMAT)

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction, committed whole or rolled back. `with conn:` alone is not one:
        sqlite_utils' `execute` commits a write it runs outside an open transaction at once, so
        each DELETE of a replaced document was published on its own and readers saw units
        without their document under an unchanged generation."""
        with self.db.conn:
            self.db.execute("BEGIN IMMEDIATE")
            yield

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """Every read of one search in one read transaction, so the generation its caches are
        keyed by and the rows it reads belong to the same committed state. A caller already
        inside a transaction (the server's pooled readers) keeps its own."""
        conn = self.db.conn
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    def _generation(self) -> str:
        return self.db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0]

    def _bump_generation(self) -> None:
        self.db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 "
                        "WHERE key='generation'")

    # -- embeddings -------------------------------------------------------------------------

    def _get_embedder(self):
        if self._want_embeddings is False:
            return None
        if not self._embedder_loaded:
            self._embedder = load_embedder()
            self._embedder_loaded = True
        return self._embedder

    @staticmethod
    def _vec_key(model: str, text: str) -> str:
        return sha256_text(model + "\x00" + text)

    def _embed_missing(self, texts: dict[str, str]) -> None:
        """Embed the texts (key → text) that have no stored vector yet."""
        embedder = self._get_embedder()
        if embedder is None or not texts:
            return
        keys = list(texts)
        have = {r[0] for r in self._rows_in("SELECT key FROM vectors WHERE key IN ({marks})",
                                            keys)}
        todo = [k for k in keys if k not in have]
        if not todo:
            return
        vecs = embedder.embed([texts[k] for k in todo])
        self.db.conn.executemany("INSERT OR REPLACE INTO vectors(key, model, vec) VALUES (?, ?, ?)",
                            [(k, embedder.name, vecs[i].tobytes()) for i, k in enumerate(todo)])

    # -- sync -------------------------------------------------------------------------------

    def doc_hashes(self, name: str) -> dict[str, tuple[str, str]]:
        """artifact id → (content hash, meta hash) of every doc in collection `name`: what a
        caller diffs its documents against to `update` only what changed."""
        return {r[0]: (r[1], r[2]) for r in self.db.execute(
            "SELECT artifact_id, content_hash, meta_hash FROM docs WHERE collection = ?", [name])}

    @maps_disk_full("updating the search index")
    def sync(self, name: str, docs: Iterable[IndexDoc], *, reindex: bool = False,
             batch: int | None = None) -> SyncStats:
        """Make collection `name` hold exactly `docs`: only changed docs are re-indexed, docs no
        longer present are removed, and a sync with nothing to change writes nothing.
        `reindex=True` writes every doc again (after embeddings were switched on or off) and
        drops the vectors no unit uses any more. `docs` is read lazily and written `batch` docs
        per transaction (see `update`); the removals come last, once every doc was seen."""
        self._upgrade_unit_titles()
        existing = self._existing(name)
        seen: set[str] = set()
        stats = self._write_docs(name, docs, existing, seen, reindex, batch or SYNC_BATCH)
        gone = [aid for aid in existing if aid not in seen]
        return self._finish(existing, gone, reindex, stats)

    @maps_disk_full("updating the search index")
    def update(self, name: str, docs: Iterable[IndexDoc], *, remove: Iterable[str] = (),
               reindex: bool = False, batch: int | None = None) -> SyncStats:
        """Add or replace `docs` in collection `name` (a doc equal to the indexed one is left
        alone) and remove the ids in `remove`; other docs stay as they are.

        `docs` is read lazily, `batch` docs at a time: each batch is cut into units, embedded
        (outside any write transaction) and written in one transaction, so memory is bounded
        by a batch however many docs change, and an interrupted update keeps the batches it
        wrote (every doc is whole; the caller's next update finds the rest still different)."""
        self._upgrade_unit_titles()
        existing = self._existing(name)
        seen: set[str] = set()
        stats = self._write_docs(name, docs, existing, seen, reindex, batch or SYNC_BATCH)
        gone = [aid for aid in dict.fromkeys(remove) if aid in existing and aid not in seen]
        return self._finish(existing, gone, reindex, stats)

    def _existing(self, name: str) -> dict[str, tuple[int, str, str]]:
        return {r[0]: (r[1], r[2], r[3]) for r in self.db.execute(
            "SELECT artifact_id, id, content_hash, meta_hash FROM docs WHERE collection = ?",
            [name])}

    def _write_docs(self, name: str, docs: Iterable[IndexDoc], existing: dict, seen: set[str],
                    reindex: bool, batch: int) -> SyncStats:
        if batch < 1:
            raise ValueError(f"batch must be at least 1, not {batch}")
        added = updated = unchanged = 0
        pending: list[tuple[IndexDoc, int | None]] = []
        for doc in docs:
            if doc.artifact_id in seen:
                raise SearchError(f"artifact {doc.artifact_id} given twice to sync({name!r})")
            seen.add(doc.artifact_id)
            old = existing.get(doc.artifact_id)
            if old and not reindex and old[1] == doc.content_hash and old[2] == doc.meta_hash():
                unchanged += 1
                continue
            pending.append((doc, old[0] if old else None))
            if old:
                updated += 1
            else:
                added += 1
            if len(pending) >= batch:
                self._write_batch(name, pending)
                pending = []
        if pending:
            self._write_batch(name, pending)
        return SyncStats(added=added, updated=updated, unchanged=unchanged)

    def _write_batch(self, name: str, pending: list[tuple[IndexDoc, int | None]]) -> None:
        embedder = self._get_embedder()
        prepared = []
        texts: dict[str, str] = {}
        for doc, old_id in pending:
            units = build_units(doc)
            keys = []
            for unit in units:
                key = None
                if embedder is not None and doc.searchable:
                    key = self._vec_key(embedder.name, unit.embed_text)
                    texts[key] = unit.embed_text
                keys.append(key)
            prepared.append((doc, old_id, units, keys))
        # Embed before opening the write transaction: other readers/writers are not blocked
        # for the minutes a large first build can take.
        self._embed_missing(texts)
        self.db.conn.commit()
        with self._write():
            for doc, old_id, units, keys in prepared:
                if old_id is not None:
                    self._delete_doc(old_id)
                self._insert_doc(name, doc, units, keys)
            self._bump_generation()

    def _finish(self, existing: dict, gone: list[str], reindex: bool, stats: SyncStats) -> SyncStats:
        written = stats.added + stats.updated
        if gone or (reindex and written):
            with self._write():
                for aid in gone:
                    self._delete_doc(existing[aid][0])
                if reindex:
                    self.db.execute("DELETE FROM vectors WHERE key NOT IN "
                                    "(SELECT vec_key FROM units WHERE vec_key IS NOT NULL)")
                self._bump_generation()
        return dataclasses.replace(stats, removed=len(gone))

    def _upgrade_unit_titles(self) -> None:
        """An index written before unit titles carried dates gets them now (FTS triggers
        re-index the rows); content and vectors are untouched, so nothing is re-embedded."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'unit_titles'").fetchone()
        if row is not None and row[0] == UNIT_TITLE_FORMAT:
            return
        with self._write():
            for doc_id, title, date in self.db.execute(
                    "SELECT id, title, date FROM docs").fetchall():
                self.db.execute("UPDATE units SET title = ? WHERE doc_id = ?",
                                [unit_title(title, date), doc_id])
            self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('unit_titles', ?)",
                            [UNIT_TITLE_FORMAT])
            self._bump_generation()

    def _insert_doc(self, name: str, doc: IndexDoc, units: list[_Unit], keys: list) -> None:
        clash = self.db.execute("SELECT collection FROM docs WHERE artifact_id = ?",
                                [doc.artifact_id]).fetchone()
        if clash:
            raise SearchError(f"artifact {doc.artifact_id} is already indexed in collection "
                              f"{clash[0]!r}; one artifact belongs to one collection")
        cur = self.db.execute(
            "INSERT INTO docs(artifact_id, collection, layer, level, title, date, source, "
            "content, content_hash, meta_hash, metadata, parent_ids, leaf_ids, ancestry, sources,"
            " searchable) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [doc.artifact_id, name, doc.layer, int(doc.level), doc.title, doc.date, doc.source,
             doc.content, doc.content_hash, doc.meta_hash(), json.dumps(doc.metadata, default=str),
             json.dumps(list(doc.parent_ids)), json.dumps(list(doc.leaf_ids)),
             json.dumps(list(doc.ancestry)), json.dumps([dict(s) for s in doc.sources]),
             int(doc.searchable)])
        doc_id = cur.lastrowid
        self.db.conn.executemany(
            "INSERT INTO units(doc_id, ord, first_msg, last_msg, msg_ids, body, context, title, "
            "vec_key, level, layer, searchable, date, source) VALUES "
            "(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(doc_id, u.ord, u.first_msg, u.last_msg, json.dumps(list(u.msg_ids)), u.body,
              u.context, unit_title(doc.title, doc.date), keys[i], int(doc.level), doc.layer,
              int(doc.searchable),
              doc.date, doc.source) for i, u in enumerate(units)])
        if self._is_leaf(doc.level, doc.searchable):
            self.db.execute("INSERT INTO leaf_trigram(rowid, content) VALUES (?, ?)",
                            [doc_id, doc.content])

    @staticmethod
    def _is_leaf(level: int, searchable: bool | int) -> bool:
        return int(level) == 0 or not searchable

    def _delete_doc(self, doc_id: int) -> None:
        self.db.execute("DELETE FROM units WHERE doc_id = ?", [doc_id])
        self.db.execute("DELETE FROM leaf_trigram WHERE rowid = ?", [doc_id])
        self.db.execute("DELETE FROM docs WHERE id = ?", [doc_id])

    # -- forgetting -------------------------------------------------------------------------

    def remove(self, artifact_ids: Iterable[str]) -> int:
        """Delete these artifacts (and their vectors) from the index; returns how many were."""
        ids = list(dict.fromkeys(artifact_ids))
        removed = 0
        with self._write():
            for aid in ids:
                row = self.db.execute("SELECT id FROM docs WHERE artifact_id = ?",
                                      [aid]).fetchone()
                if row:
                    keys = [r[0] for r in self.db.execute(
                        "SELECT vec_key FROM units WHERE doc_id = ? AND vec_key IS NOT NULL",
                        [row[0]])]
                    self._delete_doc(row[0])
                    self._drop_orphan_vectors(keys)
                    removed += 1
            if removed:
                self._bump_generation()
        return removed

    def delete_where_content_contains(self, marker: str) -> list[str]:
        """Forget every artifact whose content contains `marker` (case-sensitive); returns ids."""
        if not marker:
            raise SearchError("delete_where_content_contains needs a non-empty marker")
        ids = [r[0] for r in self.db.execute(
            "SELECT artifact_id FROM docs WHERE instr(content, ?) > 0 ORDER BY artifact_id",
            [marker])]
        self.remove(ids)
        return ids

    def _drop_orphan_vectors(self, keys: list[str]) -> None:
        for key in set(keys):
            if not self.db.execute("SELECT 1 FROM units WHERE vec_key = ? LIMIT 1",
                                   [key]).fetchone():
                self.db.execute("DELETE FROM vectors WHERE key = ?", [key])

    def purge_free_pages(self) -> None:
        """Make forgotten text unrecoverable from the file: drop vectors no unit uses, rewrite
        the FTS segments, checkpoint the WAL and VACUUM (secure_delete zeroes freed pages)."""
        with self._write():
            self.db.execute("DELETE FROM vectors WHERE key NOT IN "
                            "(SELECT vec_key FROM units WHERE vec_key IS NOT NULL)")
            for table in (schema.SEARCHABLE_FTS, schema.HIDDEN_FTS):
                self.db.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            self.db.execute("INSERT INTO leaf_trigram(leaf_trigram) VALUES ('optimize')")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.db.execute("VACUUM")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def stats(self) -> dict:
        by_layer = {r[0]: {"level": r[1], "docs": r[2]} for r in self.db.execute(
            "SELECT layer, MIN(level), COUNT(*) FROM docs GROUP BY layer ORDER BY layer")}
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

    # -- search -----------------------------------------------------------------------------

    def search(self, query: str, *, layers: Iterable[str] | None = None, mode: str = "fts",
               exact: bool = False, limit: int = 10, since: str | None = None,
               until: str | None = None, source: str | None = None,
               per: str = "artifact", leaves: bool = False) -> SearchResults:
        """Ranked hits for `query`.

        `layers` scopes to those layers; unscoped, only the highest-altitude hit of a lineage is
        kept (lower ones via `drill_down`). `exact=True` finds the literal phrase in the leaves.
        `per="passage"` returns one hit per matched unit (a message of a transcript) instead of
        one per artifact. `since`/`until` compare ISO date prefixes, inclusive. `leaves=True`
        ranks only the leaves (level-0 artifacts, hidden transcripts included): the words of the
        conversations themselves, below every summary ("leaf bypass").
        """
        if mode not in MODES:
            raise SearchError(f"unknown search mode {mode!r} — use one of {', '.join(MODES)}")
        if per not in ("artifact", "passage"):
            raise SearchError(f"unknown per={per!r} — use 'artifact' or 'passage'")
        if limit <= 0:
            return SearchResults([], mode=mode, requested_mode=mode)
        layers = check_filters(layers=layers, since=since, until=until, source=source)
        with self._snapshot():
            layer_list = self._check_layers(layers)
            filters = _Filters(layer_list, since, until, source, leaves)
            if exact:
                return SearchResults(self._exact(check_phrase(query), filters, limit),
                                     mode="exact", requested_mode="exact")
            parsed = parse_query(query)
            return self._ranked(parsed, mode, filters, limit, per,
                                dedup=layer_list is None and not leaves, restrict=None)

    def drill_down(self, artifact_id: str, query: str | None = None, *, mode: str = "fts",
                   limit: int = 10, per: str = "artifact") -> SearchResults:
        """Below one artifact: without a query its direct parents; with one, the hits among
        everything in its ancestry (non-searchable leaves included), best first;
        `per="passage"` gives one hit per matched unit (a transcript's messages)."""
        require_text(artifact_id, "artifact id")
        if per not in ("artifact", "passage"):
            raise SearchError(f"unknown per={per!r} — use 'artifact' or 'passage'")
        with self._snapshot():
            row = self.db.execute("SELECT parent_ids, ancestry FROM docs WHERE artifact_id = ?",
                                  [artifact_id]).fetchone()
            if row is None:
                raise SearchError(f"artifact {artifact_id} is not in search index {self.path}")
            parents, ancestry = json.loads(row[0]), json.loads(row[1])
            if query is None:
                hits = [self._doc_hit(aid) for aid in parents]
                return SearchResults([h for h in hits if h is not None], mode="fts",
                                     requested_mode="fts")
            parsed = parse_query(query)
            restrict = set(ancestry) | set(parents)
            return self._ranked(parsed, mode, _Filters(None, None, None, None), limit, per,
                                dedup=False, restrict=restrict)

    def _check_layers(self, layers) -> list[str] | None:
        if layers is None:
            return None
        layer_list = [layers] if isinstance(layers, str) else list(layers)
        known = {r[0] for r in self.db.execute("SELECT DISTINCT layer FROM docs")}
        unknown = [lay for lay in layer_list if lay not in known]
        if unknown and known:
            raise SearchError(f"unknown layer {unknown[0]!r} in search index {self.path}",
                              hint=f"indexed layers: {', '.join(sorted(known))}")
        return layer_list

    def _ranked(self, parsed: ParsedQuery, mode: str, filters: "_Filters", limit: int,
                per: str, *, dedup: bool, restrict: set | None) -> SearchResults:
        used, notice = mode, None
        if mode != "fts" and self._get_embedder() is None:
            used = "fts"
            notice = (f"{mode} search needs the embedding model, which is not installed; "
                      "showing full-text results")
        elif mode != "fts" and not self._has_vectors():
            used = "fts"
            notice = (f"{mode} search needs vectors, and this index has none "
                      "(enable search_index(..., embeddings=True) and rebuild); showing full-text results")
        include_hidden = restrict is not None or filters.leaves
        # The same query is often ranked twice (per artifact, then per passage): its unit scores
        # are kept for the next call while the index is unchanged (not for drill-downs).
        key = None if restrict is not None else (parsed.text, used, repr(filters), self._generation())
        scored = self._scored_units.get(key) if key is not None else None
        if scored is not None:
            self._scored_units.move_to_end(key)
        elif used == "fts":
            scored = self._fts_units(parsed, filters, include_hidden, restrict)
        elif used == "semantic":
            scored = self._vector_units(*self._similarities(parsed.text), filters,
                                        include_hidden, restrict)
        else:
            lexical = self._fts_units(parsed, filters, include_hidden, restrict)
            unit_ids, sims = self._similarities(parsed.text)
            semantic = self._vector_units(unit_ids, sims, filters, include_hidden, restrict)
            scored = fuse_scores(lexical, semantic, unit_ids, sims, SEMANTIC_WEIGHT)
        if key is not None and key not in self._scored_units:
            self._scored_units[key] = scored
            if len(self._scored_units) > SCORED_QUERY_CACHE:
                self._scored_units.popitem(last=False)
        hits = self._group(scored, parsed, per, limit, dedup)
        return SearchResults(hits, mode=used, requested_mode=mode, notice=notice)

    def _has_vectors(self) -> bool:
        return self.db.execute("SELECT 1 FROM vectors LIMIT 1").fetchone() is not None

    def _fts_units(self, parsed: ParsedQuery, filters: "_Filters", include_hidden: bool,
                   restrict: set | None) -> list[tuple[int, float]]:
        match = fts_match(parsed)
        if match is None:  # symbols only (emoji): a plain substring scan of unit text
            where, args = filters.sql(include_hidden, prefix="u")
            rows = self.db.execute(
                f"SELECT u.id, 1.0 FROM units u "
                f"WHERE instr(u.body, ?) > 0 {where} ORDER BY u.id LIMIT ?",
                [parsed.literal, *args, CANDIDATE_UNITS]).fetchall()
        else:
            # Which FTS table is read decides searchable vs hidden; drill-down reads both.
            tables = [schema.SEARCHABLE_FTS] + ([schema.HIDDEN_FTS] if include_hidden else [])
            limit = CANDIDATE_UNITS if restrict is None else 100000
            rows = sorted((row for table in tables
                           for row in self._bm25(table, match, filters, limit)),
                          key=lambda r: (-r[1], r[0]))[:limit]
        if restrict is not None:
            rows = self._restrict(rows, restrict)
        return [(r[0], float(r[1])) for r in rows]

    def _bm25(self, table: str, match: str, filters: "_Filters", limit: int) -> list:
        """(unit id, BM25) of the best `limit` units of one FTS table matching `match`."""
        w = BM25_WEIGHTS
        score = f"-bm25({table}, {w[0]}, {w[1]}, {w[2]})"
        if table == schema.HIDDEN_FTS and filters.leaves:  # every hidden unit is a leaf's
            filters = dataclasses.replace(filters, leaves=False)
        where, args = filters.sql(include_hidden=True, prefix="u")
        if not where:  # nothing to filter on: FTS alone, no join with units
            return self.db.execute(
                f"SELECT rowid, {score} AS s FROM {table} WHERE {table} MATCH ? "
                f"ORDER BY s DESC, rowid LIMIT ?", [match, limit]).fetchall()
        # Units carry their document's layer/date/source: filtering needs no join with docs.
        return self.db.execute(
            f"SELECT u.id, {score} AS s FROM {table} JOIN units u ON u.id = {table}.rowid "
            f"WHERE {table} MATCH ? {where} ORDER BY s DESC, u.id LIMIT ?",
            [match, *args, limit]).fetchall()

    def _restrict(self, rows, restrict: set) -> list:
        if not rows:
            return rows
        allowed = {uid for uid, aid in self._rows_in(
            "SELECT u.id, d.artifact_id FROM units u JOIN docs d ON d.id = u.doc_id "
            "WHERE u.id IN ({marks})", [r[0] for r in rows]) if aid in restrict}
        return [r for r in rows if r[0] in allowed][:CANDIDATE_UNITS]

    def _load_matrix(self) -> None:
        """All unit vectors as one contiguous float32 matrix, loaded once per generation."""
        generation = self._generation()
        if self._matrix is not None and self._matrix_generation == generation:
            return
        embedder = self._get_embedder()
        rows = self.db.execute(
            "SELECT u.id, v.vec FROM units u JOIN vectors v ON v.key = u.vec_key "
            "WHERE v.model = ? ORDER BY u.id", [embedder.name]).fetchall()
        dim = embedder.dim
        matrix = np.empty((len(rows), dim), dtype=np.float32)
        for i, (_, blob) in enumerate(rows):
            matrix[i] = np.frombuffer(blob, dtype=np.float32)
        self._matrix = matrix
        self._matrix_units = np.array([r[0] for r in rows], dtype=np.int64)
        self._matrix_generation = generation

    def clear_query_cache(self) -> None:
        """Forget cached query vectors (benchmarks time each mode from a cold cache)."""
        self._query_vectors.clear()
        self._scored_units.clear()

    def _query_vector(self, text: str) -> np.ndarray:
        vec = self._query_vectors.get(text)
        if vec is None:
            vec = self._get_embedder().embed([text])[0]
            self._query_vectors[text] = vec
            if len(self._query_vectors) > QUERY_VECTOR_CACHE:
                self._query_vectors.popitem(last=False)
        else:
            self._query_vectors.move_to_end(text)
        return vec

    def _similarities(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(unit ids sorted ascending, cosine of each with the query) over every vector."""
        self._load_matrix()
        if self._matrix is None or not len(self._matrix):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return self._matrix_units, self._matrix @ self._query_vector(text)

    def _vector_units(self, unit_ids: np.ndarray, sims: np.ndarray, filters: "_Filters",
                      include_hidden: bool, restrict: set | None) -> list[tuple[int, float]]:
        if not len(sims):
            return []
        # Take a generous top slice, then filter: filters are applied in SQL on that slice.
        take = min(len(sims), CANDIDATE_UNITS * 4 if restrict is None else len(sims))
        top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(
            len(sims))
        order = sorted(top.tolist(), key=lambda i: (-float(sims[i]), int(unit_ids[i])))
        candidates = [(int(unit_ids[i]), float(sims[i])) for i in order]
        allowed = self._filter_units([c[0] for c in candidates], filters, include_hidden)
        kept = [c for c in candidates if c[0] in allowed]
        if restrict is not None:
            kept = self._restrict(kept, restrict)
        return kept[:CANDIDATE_UNITS]

    def _filter_units(self, unit_ids: list[int], filters: "_Filters",
                      include_hidden: bool) -> set[int]:
        where, args = filters.sql(include_hidden, prefix="u")
        return {r[0] for r in self._rows_in(
            "SELECT u.id FROM units u WHERE u.id IN ({marks}) " + where, unit_ids, args)}

    def _group(self, scored: list[tuple[int, float]], parsed: ParsedQuery, per: str,
               limit: int, dedup: bool) -> list[Hit]:
        """Unit scores → hits: best unit per artifact (or every unit), altitude dedup."""
        if not scored:
            return []
        unit_rows = self._unit_rows([uid for uid, _ in scored])
        doc_of = {uid: r["doc_id"] for uid, r in unit_rows.items()}
        if per == "artifact":
            picked = aggregate_by_doc(scored, doc_of)
        else:
            picked = with_document_prior(scored, doc_of, DOCUMENT_PRIOR)
            speakers = {uid: self._speaker(r) for uid, r in unit_rows.items()}
            picked = with_speaker_prior(picked, speakers, parsed.terms, SPEAKER_PRIOR)
        if dedup:
            # Highest altitude wins: a candidate inside the ancestry of a higher-level candidate
            # is dropped (reachable from that hit by drill_down) — when that higher hit answers the
            # query comparably well. A core memory that summarises everything must not hide the one
            # episode a query is really about just because it mentions a query word in passing.
            heads = self._doc_heads({unit_rows[uid]["doc_id"] for uid, _ in picked})
            covers: dict[str, list[tuple[int, float]]] = {}  # artifact id -> (level, score) above it
            for uid, score in picked:
                doc = heads[unit_rows[uid]["doc_id"]]
                for aid in doc["ancestry"]:
                    covers.setdefault(aid, []).append((doc["level"], score))

            def hidden(uid: int, score: float) -> bool:
                doc = heads[unit_rows[uid]["doc_id"]]
                return any(level > doc["level"] and above >= COVER_RATIO * score
                           for level, above in covers.get(doc["artifact_id"], ()))

            picked = [(uid, score) for uid, score in picked if not hidden(uid, score)]
        picked = picked[:limit]
        docs = self._doc_rows({unit_rows[uid]["doc_id"] for uid, _ in picked})
        stems = {_stem(t) for t in parsed.terms}
        return [self._make_hit(docs[unit_rows[uid]["doc_id"]], unit_rows[uid], score, stems)
                for uid, score in picked]

    def _doc_heads(self, doc_ids: Iterable[int]) -> dict[int, dict]:
        """What altitude dedup needs of each candidate document (no content, no sources)."""
        return {r[0]: {"artifact_id": r[1], "level": r[2], "ancestry": json.loads(r[3])}
                for r in self._rows_in(
                    "SELECT id, artifact_id, level, ancestry FROM docs WHERE id IN ({marks})",
                    doc_ids)}

    @staticmethod
    def _speaker(row: dict) -> str | None:
        if "speaker" not in row:  # rows are cached: parse the body once
            row["speaker"] = message_speaker(row["body"]) if row["first_msg"] is not None else None
        return row["speaker"]

    def _unit_rows(self, unit_ids: list[int]) -> dict[int, dict]:
        # A query groups hundreds of candidate units, and the next query mostly the same ones:
        # reading and JSON-decoding them again was a third of a hybrid query's CPU time.
        generation = self._generation()
        if generation != self._unit_cache_generation or len(self._unit_cache) > UNIT_ROW_CACHE:
            self._unit_cache = {}
            self._unit_cache_generation = generation
        cache = self._unit_cache
        missing = [uid for uid in unit_ids if uid not in cache]
        for r in self._rows_in("SELECT id, doc_id, first_msg, last_msg, msg_ids, body "
                               "FROM units WHERE id IN ({marks})", missing):
            cache[r[0]] = {"doc_id": r[1], "first_msg": r[2], "last_msg": r[3],
                           "msg_ids": tuple(json.loads(r[4])), "body": r[5]}
        return {uid: cache[uid] for uid in unit_ids if uid in cache}

    def _doc_rows(self, doc_ids: Iterable[int]) -> dict[int, dict]:
        return {r[0]: {"artifact_id": r[1], "layer": r[2], "level": r[3], "title": r[4],
                       "date": r[5], "content": r[6], "parent_ids": json.loads(r[7]),
                       "leaf_ids": json.loads(r[8]), "ancestry": set(json.loads(r[9])),
                       "sources": json.loads(r[10]),
                       "pii": (json.loads(r[11] or "{}") or {}).get("meta.custom.pii") or None}
                for r in self._rows_in(
                    "SELECT id, artifact_id, layer, level, title, date, content, parent_ids, "
                    "leaf_ids, ancestry, sources, metadata FROM docs WHERE id IN ({marks})",
                    doc_ids)}

    def _rows_in(self, sql: str, ids: Iterable, args: Iterable = ()) -> Iterator[tuple]:
        """Rows of `sql` for `ids`, whose `{marks}` is the IN list: 500 ids per statement, under
        SQLite's bound-parameter limit."""
        ids, args = list(ids), list(args)
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            yield from self.db.execute(sql.format(marks=",".join("?" * len(part))),
                                       [*part, *args])

    def _make_hit(self, doc: dict, unit: dict | None, score: float, stems: set[str],
                  snippet: str | None = None) -> Hit:
        sources = [dict(s) for s in doc["sources"]]
        message_range = None
        if unit is not None and unit["first_msg"] is not None:
            message_range = (unit["first_msg"], unit["last_msg"])
            # A transcript hit: narrow its own source entry to the matched messages.
            for s in sources:
                s["message_range"] = [unit["first_msg"], unit["last_msg"]]
        if snippet is None:
            snippet = _highlight(unit["body"] if unit else doc["content"], stems)
        return Hit(
            artifact_id=doc["artifact_id"], layer=doc["layer"], level=doc["level"],
            score=round(float(score), 6), snippet=snippet, title=doc["title"] or "",
            date=doc["date"], provenance=tuple(doc["leaf_ids"]) or (doc["artifact_id"],),
            sources=HitSources(sources, tuple(doc["parent_ids"])), content=doc["content"],
            parent_ids=tuple(doc["parent_ids"]), message_range=message_range,
            message_ids=unit["msg_ids"] if unit else (), pii=doc.get("pii"))

    def _doc_hit(self, artifact_id: str) -> Hit | None:
        row = self.db.execute("SELECT id FROM docs WHERE artifact_id = ?",
                              [artifact_id]).fetchone()
        if row is None:
            return None
        doc = self._doc_rows([row[0]])[row[0]]
        return self._make_hit(doc, None, 0.0, set(), snippet=doc["content"][:240])

    # -- exact ------------------------------------------------------------------------------

    def _exact(self, phrase: str, filters: "_Filters", limit: int) -> list[Hit]:
        """Leaves containing `phrase` (case-insensitive substring, verified on the content);
        `phrase` was checked by `check_phrase` (text, no NUL, bounded length)."""
        needle = _fold(phrase)
        where, args = filters.sql(include_hidden=True, prefix="d")
        leaf = "(d.level = 0 OR d.searchable = 0)"
        if len(phrase) >= 3:
            # trigram MATCH on a quoted string = substring candidates (case-insensitive). FTS5's
            # cost grows with the square of the phrase; its head already finds a superset of the
            # documents holding the whole phrase, which the scan below then verifies.
            probe = phrase[:EXACT_PROBE_CHARS]
            rows = self.db.execute(
                f"SELECT d.id FROM leaf_trigram JOIN docs d ON d.id = leaf_trigram.rowid "
                f"WHERE leaf_trigram MATCH ? AND {leaf} {where} ORDER BY d.id",
                ['"' + probe.replace('"', '""') + '"', *args]).fetchall()
        else:
            rows = self.db.execute(f"SELECT d.id FROM docs d WHERE {leaf} {where} ORDER BY d.id",
                                   args).fetchall()
        docs = self._doc_rows([r[0] for r in rows])
        found = []
        for doc_id in sorted(docs):
            doc = docs[doc_id]
            count = _fold(doc["content"]).count(needle)
            if count:
                found.append((count, doc_id))
        found.sort(key=lambda x: (-x[0], docs[x[1]]["artifact_id"]))
        hits = []
        for count, doc_id in found[:limit]:
            unit = self._exact_unit(doc_id, needle)
            hits.append(self._make_hit(docs[doc_id], unit, float(count), set(),
                                       snippet=_exact_snippet(docs[doc_id]["content"], needle)))
        return hits

    def _exact_unit(self, doc_id: int, needle: str) -> dict | None:
        for r in self.db.execute("SELECT id FROM units WHERE doc_id = ? ORDER BY ord", [doc_id]):
            unit = self._unit_rows([r[0]])[r[0]]
            if unit["first_msg"] is not None and needle in _fold(unit["body"]):
                return unit
        return None


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def _exact_snippet(content: str, needle: str, width: int = 80) -> str:
    folded = _fold(content)
    at = folded.find(needle)
    if at < 0 or len(folded) != len(content):
        # casefold changed the length (e.g. ß → ss): show the start rather than a shifted cut.
        return content[:2 * width]
    start, end = max(0, at - width), min(len(content), at + len(needle) + width)
    return ((("…" if start else "") + content[start:at] + "[" + content[at:at + len(needle)]
             + "]" + content[at + len(needle):end] + ("…" if end < len(content) else "")))


@dataclass(frozen=True)
class _Filters:
    layers: list[str] | None
    since: str | None
    until: str | None
    source: str | None
    leaves: bool = False  # only level-0 artifacts and hidden leaves

    def sql(self, include_hidden: bool, prefix: str = "d") -> tuple[str, list]:
        parts, args = [], []
        if not include_hidden:
            parts.append(f"{prefix}.searchable = 1")
        if self.leaves:
            parts.append(f"({prefix}.level = 0 OR {prefix}.searchable = 0)")
        if self.layers is not None:
            parts.append(f"{prefix}.layer IN ({','.join('?' * len(self.layers))})")
            args.extend(self.layers)
        if self.since:
            parts.append(f"substr({prefix}.date, 1, ?) >= ?")
            args.extend([len(self.since), self.since])
        if self.until:
            parts.append(f"substr({prefix}.date, 1, ?) <= ?")
            args.extend([len(self.until), self.until])
        if self.source:
            parts.append(f"{prefix}.source = ?")
            args.append(self.source)
        return ("AND " + " AND ".join(parts)) if parts else "", args
