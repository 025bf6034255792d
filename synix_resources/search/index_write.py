"""The write side of the index: adding, replacing and forgetting documents.

Every write is one explicit `BEGIN IMMEDIATE` transaction (`_write`); one that changes what is
indexed bumps the index generation in it, so readers, whose caches are keyed by the generation,
never see a half-written change under an unchanged one.
"""
from __future__ import annotations

import dataclasses
import json
from contextlib import contextmanager
from typing import Iterable, Iterator

from synix_resources.errors import SearchError
from synix_resources.search import schema
from synix_resources.search.documents import IndexDoc, SyncStats
from synix_resources.search.units import UNIT_TITLE_FORMAT, Unit, build_units, unit_title
from synix_resources.search.vectors import Vectors

SYNC_BATCH = 200              # docs cut into units, embedded and written per transaction


def conversations_of(doc: IndexDoc) -> list[str]:
    """The conversations a document was built from: its sources' and its own (a transcript or
    an episode carries `meta.chat.conversation_id`), what the conversation filter matches."""
    ids = [s.get("conversation_id") for s in doc.sources]
    ids.append(doc.metadata.get("meta.chat.conversation_id"))
    return list(dict.fromkeys(str(c) for c in ids if c is not None and c != ""))


def _text_or_none(value) -> str | None:
    return None if value is None or value == "" else str(value)


class IndexWriter:
    """Writes of one index connection (`db`, a sqlite_utils Database)."""

    def __init__(self, db, vectors: Vectors):
        self.db = db
        self.vectors = vectors

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction, committed whole or rolled back. `with conn:` alone is not one:
        sqlite_utils' `execute` commits a write it runs outside an open transaction at once, so
        each DELETE of a replaced document was published on its own and readers saw units
        without their document under an unchanged generation."""
        with self.db.conn:
            self.db.execute("BEGIN IMMEDIATE")
            yield

    def _bump_generation(self) -> None:
        self.db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 "
                        "WHERE key='generation'")

    # -- sync -------------------------------------------------------------------------------

    def doc_hashes(self, name: str) -> dict[str, tuple[str, str]]:
        """`SearchIndex.doc_hashes`."""
        return {r[0]: (r[1], r[2]) for r in self.db.execute(
            "SELECT artifact_id, content_hash, meta_hash FROM docs WHERE collection = ?", [name])}

    def sync(self, name: str, docs: Iterable[IndexDoc], *, reindex: bool = False,
             batch: int | None = None) -> SyncStats:
        """`SearchIndex.sync`."""
        self._upgrade_unit_titles()
        existing = self._existing(name)
        seen: set[str] = set()
        stats = self._write_docs(name, docs, existing, seen, reindex, batch or SYNC_BATCH)
        gone = [aid for aid in existing if aid not in seen]
        return self._finish(existing, gone, reindex, stats)

    def update(self, name: str, docs: Iterable[IndexDoc], *, remove: Iterable[str] = (),
               reindex: bool = False, batch: int | None = None) -> SyncStats:
        """`SearchIndex.update`."""
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
        embedder = self.vectors.embedder()
        prepared = []
        texts: dict[str, str] = {}
        for doc, _ in pending:
            units = build_units(doc)
            keys = []
            for unit in units:
                key = None
                # the source transcripts too, named or hidden: leaf search ("leaf bypass") is
                # hybrid like any other; hidden middle layers are found by their words only
                if embedder is not None and (doc.searchable or doc.level == 0):
                    key = self.vectors.key(embedder.name, unit.embed_text)
                    texts[key] = unit.embed_text
                keys.append(key)
            prepared.append((doc, units, keys))
        # Embed before opening the write transaction: other readers/writers are not blocked
        # for the minutes a large first build can take.
        self.vectors.embed_missing(texts)
        self.db.conn.commit()
        with self._write():
            for doc, units, keys in prepared:
                # read again inside the write transaction: another writer syncing the same
                # collection (a layer's check planning topical rollups while the build makes
                # them) may have written this artifact since `existing` was read
                now = self.db.execute("SELECT id FROM docs WHERE artifact_id = ? AND collection = ?",
                                      [doc.artifact_id, name]).fetchone()
                if now is not None:
                    self._delete_doc(now[0])
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

    def _insert_doc(self, name: str, doc: IndexDoc, units: list[Unit], keys: list) -> None:
        clash = self.db.execute("SELECT collection FROM docs WHERE artifact_id = ?",
                                [doc.artifact_id]).fetchone()
        if clash:
            raise SearchError(f"artifact {doc.artifact_id} is already indexed in collection "
                              f"{clash[0]!r}; one artifact belongs to one collection")
        cur = self.db.execute(
            "INSERT INTO docs(artifact_id, collection, layer, level, title, date, source, "
            "content, content_hash, meta_hash, metadata, parent_ids, leaf_ids, ancestry, sources,"
            " searchable, period) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [doc.artifact_id, name, doc.layer, int(doc.level), doc.title, doc.date, doc.source,
             doc.content, doc.content_hash, doc.meta_hash(), json.dumps(doc.metadata, default=str),
             json.dumps(list(doc.parent_ids)), json.dumps(list(doc.leaf_ids)),
             json.dumps(list(doc.ancestry)), json.dumps([dict(s) for s in doc.sources]),
             int(doc.searchable), _text_or_none(doc.metadata.get("meta.time.period"))])
        doc_id = cur.lastrowid
        self.db.conn.executemany(
            "INSERT OR IGNORE INTO doc_conversations(doc_id, conversation_id) VALUES (?, ?)",
            [(doc_id, cid) for cid in conversations_of(doc)])
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
        self.db.execute("DELETE FROM doc_conversations WHERE doc_id = ?", [doc_id])
        self.db.execute("DELETE FROM units WHERE doc_id = ?", [doc_id])
        self.db.execute("DELETE FROM leaf_trigram WHERE rowid = ?", [doc_id])
        self.db.execute("DELETE FROM docs WHERE id = ?", [doc_id])

    # -- forgetting -------------------------------------------------------------------------

    def remove(self, artifact_ids: Iterable[str]) -> int:
        """`SearchIndex.remove`."""
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
        """`SearchIndex.delete_where_content_contains`."""
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
        """`SearchIndex.purge_free_pages`."""
        with self._write():
            self.db.execute("DELETE FROM vectors WHERE key NOT IN "
                            "(SELECT vec_key FROM units WHERE vec_key IS NOT NULL)")
            for table in (schema.SEARCHABLE_FTS, schema.HIDDEN_FTS):
                self.db.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
            self.db.execute("INSERT INTO leaf_trigram(leaf_trigram) VALUES ('optimize')")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.db.execute("VACUUM")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
