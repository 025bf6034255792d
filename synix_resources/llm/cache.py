"""Response cache in its own SQLite file (or, beside a PostgreSQL store, in the same database):
answers `replay=True` runs with zero calls.

Keyed by (rendered prompt hash, system hash, model, temperature, max_tokens, provider). The
same file holds Message Batches bookkeeping so a restarted process resumes polling a submitted
batch. Nothing here ever holds an API key: only prompts, responses and ids are written.

Derivation for "forget": every entry records where its input came from (`response_sources`: the
request's source ids and the SHA-256 of each source text). An answer fed into a later request (a
fold's running state, a map-reduce part summary) shows up there as a source text hash, so
`derived_keys` follows chains of cached answers, not verbatim text. The schema is brought up to
date by named, ordered migrations (`cache_schema.py`), so existing cache files upgrade on open;
the derivation lookups forget uses are in `cache_sources.py`.
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from synix_resources.disk import disk_full_error, is_disk_full, maps_disk_full
from synix_resources.errors import LLMError
from synix_resources.fingerprints import canonical_json, sha256_text
from synix_resources.private import private_file
from synix_resources.store.dialect import POSTGRES, SQLITE, is_postgres_url

from .cache_schema import PG_CACHE_MIGRATIONS, migrate_file
from .cache_sources import SourceQueries
from .types import LLMRequest, LLMResponse

_RESPONSE_COLUMNS = ("key", "prompt_hash", "system_hash", "provider", "model", "temperature",
                     "max_tokens", "label", "prompt", "system", "response_json", "created_at")
_BATCH_COLUMNS = ("batch_id", "fingerprint", "provider", "model", "status", "created_at")
_BATCH_ITEM_COLUMNS = ("batch_id", "custom_id", "request_key", "label")


def _upsert(table: str, columns: tuple[str, ...], keys: tuple[str, ...]) -> str:
    """Insert a row or replace the one with the same key (the same SQL on both engines)."""
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in keys)
    return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
            f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}")


def cache_key(request: LLMRequest, provider: str, model: str) -> str:
    return sha256_text(canonical_json([
        request.rendered_prompt_hash, request.system_hash, model,
        request.temperature, request.max_tokens, provider]))


class ResponseCache(SourceQueries):
    """Thread-safe: one connection guarded by a lock (calls are short; LLM calls are not).

    `ResponseCache("postgresql://…")` opens `PostgresResponseCache` (the same tables in that
    database); every query below is written once for both engines."""

    dialect = SQLITE

    def __new__(cls, path=None, *args, **kwargs):
        if cls is ResponseCache and is_postgres_url(path):
            cls = PostgresResponseCache
        return super().__new__(cls)

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        private_file(self.path)  # prompts and answers: 0600, and SQLite's -wal/-shm follow it
        self._lock = threading.Lock()
        try:
            migrate_file(self.path)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        except sqlite3.Error as err:
            if is_disk_full(err, self.path):
                raise disk_full_error(self.path, "opening the LLM response cache") from err
            raise LLMError(f"cannot open LLM response cache {self.path}: {err}",
                           hint="check the path is writable or delete the corrupt file") from err

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator:
        """The lock and one transaction: committed on success, rolled back on error."""
        with self._lock, self._db:
            yield self._db

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
        with self._transaction():
            self._db.execute(
                _upsert("responses", _RESPONSE_COLUMNS, ("key",)),
                (key, request.rendered_prompt_hash, request.system_hash, response.provider,
                 response.model, request.temperature, request.max_tokens, request.label,
                 request.prompt, request.system or "", json.dumps(record), time.time()))
            self._record_sources(key, request)

    def _record_sources(self, key: str, request: LLMRequest) -> None:
        """What this entry's input derived from (caller holds the lock and the transaction)."""
        self._db.execute("DELETE FROM response_sources WHERE key = ?", (key,))
        self._db.executemany(
            "INSERT INTO response_sources (key, position, source_id, text_hash) VALUES (?,?,?,?)",
            [(key, i, sid, sha256_text(text)) for i, (sid, text) in enumerate(request.sources)])

    def count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    # batches ---------------------------------------------------------------------------------
    @maps_disk_full("recording a batch")
    def record_batch(self, batch_id: str, fingerprint: str, provider: str, model: str,
                     items: list[tuple[str, str, str]]) -> None:
        """Persist a submitted batch and its custom_id → (request key, label) mapping."""
        with self._transaction():
            self._db.execute(_upsert("batches", _BATCH_COLUMNS, ("batch_id",)),
                             (batch_id, fingerprint, provider, model, "submitted", time.time()))
            self._db.executemany(_upsert("batch_items", _BATCH_ITEM_COLUMNS,
                                         ("batch_id", "custom_id")),
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
        with self._transaction():
            self._db.execute("UPDATE batches SET status = ? WHERE batch_id = ?", (status, batch_id))


class PostgresResponseCache(ResponseCache):
    """The response cache in the PostgreSQL store's database, shared by every worker: an answer
    paid for on one host is a cache hit on all of them."""

    dialect = POSTGRES

    def __init__(self, url: str):
        from synix_resources.store.postgres import apply_migrations, connect, display_url

        self.path = display_url(url)
        self._lock = threading.Lock()
        self._db = connect(url, busy_timeout_ms=30000, what="the LLM response cache")
        try:
            apply_migrations(self._db, PG_CACHE_MIGRATIONS, "_cache_migrations")
        except BaseException:
            self._db.close()
            raise

    @contextmanager
    def _transaction(self) -> Iterator:
        import psycopg

        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except psycopg.Error as err:
                self._rollback()
                raise LLMError(f"cannot write the LLM response cache {self.path}: "
                               f"{' '.join(str(err).split())}",
                               hint="check the PostgreSQL server and the store URL") from err
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        if not self._db.closed and self._db.in_transaction:
            self._db.execute("ROLLBACK")
