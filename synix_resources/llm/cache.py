"""Response cache in its own SQLite file: answers `replay=True` runs with zero calls.

Keyed by (rendered prompt hash, system hash, model, temperature, max_tokens, provider). The
same file holds Message Batches bookkeeping so a restarted process resumes polling a submitted
batch. Nothing here ever holds an API key: only prompts, responses and ids are written.

Derivation for "forget": every entry records where its input came from (`response_sources`: the
request's source ids and the SHA-256 of each source text). An answer fed into a later request (a
fold's running state, a map-reduce part summary) shows up there as a source text hash, so
`derived_keys` follows chains of cached answers, not verbatim text. The schema is brought up to
date by named, ordered migrations (`CACHE_MIGRATIONS`), so existing cache files upgrade on open.
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Iterable

from sqlite_utils import Database

from synix_resources.disk import disk_full_error, is_disk_full, maps_disk_full
from synix_resources.errors import LLMError
from synix_resources.fingerprints import canonical_json, sha256_text
from synix_resources.private import private_file
from synix_resources.store.migrations import MigrationRegistry

from .types import LLMRequest, LLMResponse

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    prompt_hash TEXT NOT NULL,
    system_hash TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    temperature REAL,
    max_tokens INTEGER NOT NULL,
    label TEXT NOT NULL,
    prompt TEXT NOT NULL,
    system TEXT NOT NULL,
    response_json TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS batches_fingerprint ON batches(fingerprint, status);
CREATE TABLE IF NOT EXISTS batch_items (
    batch_id TEXT NOT NULL,
    custom_id TEXT NOT NULL,
    request_key TEXT NOT NULL,
    label TEXT NOT NULL,
    PRIMARY KEY (batch_id, custom_id)
);
"""

# Texts per `keys_mentioning` query: 3 host parameters each, well under SQLite's limit.
_TEXTS_PER_QUERY = 100

# One row per source of a cached request, in request order (what its input derived from).
SOURCES_SCHEMA = """
CREATE TABLE IF NOT EXISTS response_sources (
    key TEXT NOT NULL,
    position INTEGER NOT NULL,
    source_id TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    PRIMARY KEY (key, position)
);
CREATE INDEX IF NOT EXISTS response_sources_id ON response_sources(source_id);
CREATE INDEX IF NOT EXISTS response_sources_text ON response_sources(text_hash);
"""

# Named, ordered, append-only (see synix_resources/store/migrations.py for the mechanism).
CACHE_MIGRATIONS = MigrationRegistry()


@CACHE_MIGRATIONS
def c001_responses_and_batches(db: Database) -> None:
    _statements(db, SCHEMA)


@CACHE_MIGRATIONS
def c002_response_sources(db: Database) -> None:
    """Entries written before this migration have no rows here; forget falls back to matching
    their text (`keys_mentioning`)."""
    _statements(db, SOURCES_SCHEMA)


def _statements(db: Database, script: str) -> None:
    # Not executescript(): it COMMITs first, and each migration must stay atomic with its
    # _migrations row. The schema scripts hold no ';' inside a statement.
    for statement in script.split(";"):
        if statement.strip():
            db.conn.execute(statement)


def _migrate(path: Path) -> None:
    conn = sqlite3.connect(str(path), timeout=30, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        CACHE_MIGRATIONS.apply(Database(conn))
    finally:
        conn.close()


def cache_key(request: LLMRequest, provider: str, model: str) -> str:
    return sha256_text(canonical_json([
        request.rendered_prompt_hash, request.system_hash, model,
        request.temperature, request.max_tokens, provider]))


class ResponseCache:
    """Thread-safe: one connection guarded by a lock (calls are short; LLM calls are not)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        private_file(self.path)  # prompts and answers: 0600, and SQLite's -wal/-shm follow it
        self._lock = threading.Lock()
        try:
            _migrate(self.path)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        except sqlite3.Error as err:
            if is_disk_full(err, self.path):
                raise disk_full_error(self.path, "opening the LLM response cache") from err
            raise LLMError(f"cannot open LLM response cache {self.path}: {err}",
                           hint="check the path is writable or delete the corrupt file") from err

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # responses -------------------------------------------------------------------------------
    def get(self, key: str) -> LLMResponse | None:
        with self._lock:
            row = self._db.execute("SELECT response_json FROM responses WHERE key = ?",
                                   (key,)).fetchone()
        return LLMResponse.from_json_dict(json.loads(row[0])) if row else None

    @maps_disk_full("saving an LLM answer")
    def put(self, key: str, request: LLMRequest, response: LLMResponse) -> None:
        record = response.to_json_dict()
        record["from_cache"] = False
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (key, request.rendered_prompt_hash, request.system_hash, response.provider,
                 response.model, request.temperature, request.max_tokens, request.label,
                 request.prompt, request.system or "", json.dumps(record), time.time()))
            self._record_sources(key, request)

    def _record_sources(self, key: str, request: LLMRequest) -> None:
        """What this entry's input derived from (caller holds the lock and the transaction)."""
        self._db.execute("DELETE FROM response_sources WHERE key = ?", (key,))
        self._db.executemany(
            "INSERT INTO response_sources VALUES (?,?,?,?)",
            [(key, i, sid, sha256_text(text)) for i, (sid, text) in enumerate(request.sources)])

    def delete_key(self, key: str) -> int:
        return self.delete_keys([key])

    def delete_matching(self, marker: str) -> int:
        """Forget every cached exchange whose prompt, system prompt or answer contains `marker`."""
        if not marker:
            raise ValueError("refusing to delete with an empty marker (it would match everything)")
        return self.delete_keys(self.keys_mentioning([marker]))

    # forgetting by derivation -------------------------------------------------------------
    def derived_keys(self, source_ids: Iterable[str], text_hashes: Iterable[str] = ()) -> set[str]:
        """Keys of every entry whose input derived from these sources: a source id in
        `source_ids`, a source text whose SHA-256 is in `text_hashes`, or (transitively) the
        answer of an entry already found (a fold state, a map-reduce part, a compression)."""
        ids = json.dumps(sorted(set(source_ids)))
        hashes = set(text_hashes)
        with self._lock:
            found = {r[0] for r in self._db.execute(
                "SELECT DISTINCT key FROM response_sources WHERE source_id IN "
                "(SELECT value FROM json_each(?))", (ids,))}
            frontier = set(found)
            while frontier or hashes:
                hashes |= self._answer_hashes(frontier)
                frontier = {r[0] for r in self._db.execute(
                    "SELECT DISTINCT key FROM response_sources WHERE text_hash IN "
                    "(SELECT value FROM json_each(?))", (json.dumps(sorted(hashes)),))} - found
                found |= frontier
                hashes = set()
        return found

    def _answer_hashes(self, keys: set[str]) -> set[str]:
        out = set()
        for (raw,) in self._db.execute("SELECT response_json FROM responses WHERE key IN "
                                       "(SELECT value FROM json_each(?))",
                                       (json.dumps(sorted(keys)),)):
            out.add(sha256_text(json.loads(raw).get("text", "")))
        return out

    def keys_without_sources(self) -> list[str]:
        """Entries written before sources were recorded (their derivation is unknown)."""
        with self._lock:
            return [r[0] for r in self._db.execute(
                "SELECT key FROM responses r WHERE NOT EXISTS "
                "(SELECT 1 FROM response_sources s WHERE s.key = r.key)")]

    def keys_mentioning(self, texts: Iterable[str], keys: Iterable[str] | None = None) -> set[str]:
        """Keys (among `keys`, default all) whose prompt, system prompt or answer contains any
        of `texts`; used only for entries without recorded sources."""
        wanted = [t for t in dict.fromkeys(texts) if t]
        scope = json.dumps(sorted(set(keys))) if keys is not None else None
        found: set[str] = set()
        for start in range(0, len(wanted), _TEXTS_PER_QUERY):  # SQLite bounds host parameters
            chunk = wanted[start:start + _TEXTS_PER_QUERY]
            sql = "SELECT key FROM responses WHERE (" + " OR ".join(
                "instr(prompt, ?) > 0 OR instr(system, ?) > 0 OR instr(response_json, ?) > 0"
                for _ in chunk) + ")"
            args: list = [t for t in chunk for _ in range(3)]
            if scope is not None:
                sql += " AND key IN (SELECT value FROM json_each(?))"
                args.append(scope)
            with self._lock:
                found |= {r[0] for r in self._db.execute(sql, args)}
        return found

    def keys_for_prompt_hashes(self, hashes: Iterable[str]) -> set[str]:
        with self._lock:
            return {r[0] for r in self._db.execute(
                "SELECT key FROM responses WHERE prompt_hash IN (SELECT value FROM json_each(?))",
                (json.dumps(sorted(set(hashes))),))}

    def delete_keys(self, keys: Iterable[str]) -> int:
        """Delete these entries with their sources and batch bookkeeping, in one transaction
        (all or nothing, so a crash never leaves half a derivation chain to rediscover)."""
        param = json.dumps(sorted(set(keys)))
        with self._lock, self._db:
            self._db.execute("DELETE FROM response_sources WHERE key IN "
                             "(SELECT value FROM json_each(?))", (param,))
            self._db.execute("DELETE FROM batch_items WHERE request_key IN "
                             "(SELECT value FROM json_each(?))", (param,))
            return self._db.execute("DELETE FROM responses WHERE key IN "
                                    "(SELECT value FROM json_each(?))", (param,)).rowcount

    def count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    # batches ---------------------------------------------------------------------------------
    @maps_disk_full("recording a batch")
    def record_batch(self, batch_id: str, fingerprint: str, provider: str, model: str,
                     items: list[tuple[str, str, str]]) -> None:
        """Persist a submitted batch and its custom_id → (request key, label) mapping."""
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO batches VALUES (?,?,?,?,?,?)",
                             (batch_id, fingerprint, provider, model, "submitted", time.time()))
            self._db.executemany("INSERT OR REPLACE INTO batch_items VALUES (?,?,?,?)",
                                 [(batch_id, cid, key, label) for cid, key, label in items])

    def open_batch(self, fingerprint: str) -> str | None:
        """The id of a submitted, not yet collected batch for exactly these requests."""
        with self._lock:
            row = self._db.execute(
                "SELECT batch_id FROM batches WHERE fingerprint = ? AND status = 'submitted'"
                " ORDER BY created_at DESC LIMIT 1", (fingerprint,)).fetchone()
        return row[0] if row else None

    def batch_items(self, batch_id: str) -> dict[str, tuple[str, str]]:
        with self._lock:
            rows = self._db.execute("SELECT custom_id, request_key, label FROM batch_items"
                                    " WHERE batch_id = ?", (batch_id,)).fetchall()
        return {cid: (key, label) for cid, key, label in rows}

    @maps_disk_full("recording a batch")
    def mark_batch(self, batch_id: str, status: str) -> None:
        with self._lock, self._db:
            self._db.execute("UPDATE batches SET status = ? WHERE batch_id = ?", (status, batch_id))
