"""Response cache in its own SQLite file (or, beside a PostgreSQL store, in the same database):
answers `replay=True` runs with zero calls.

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
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from synix_resources.disk import disk_full_error, is_disk_full, maps_disk_full
from synix_resources.errors import LLMError
from synix_resources.fingerprints import canonical_json, sha256_text
from synix_resources.private import private_file
from synix_resources.store.dialect import POSTGRES, SQLITE, ids_in, is_postgres_url
from synix_resources.store.migrations import MigrationRegistry

from .types import LLMRequest, LLMResponse

if TYPE_CHECKING:  # sqlite_utils (and the numpy it imports) loads only when a migration runs
    from sqlite_utils import Database

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
        CACHE_MIGRATIONS.apply(conn)  # sqlite_utils loads only when a migration runs
    finally:
        conn.close()


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


class ResponseCache:
    """Thread-safe: one connection guarded by a lock (calls are short; LLM calls are not).

    `ResponseCache("postgresql://…")` opens `PostgresResponseCache` (the same tables in that
    database); every query below is written once for both engines."""

    dialect = SQLITE

    @property
    def _ids(self) -> str:
        """`(SELECT value FROM …)` over a JSON array parameter, in this engine's SQL."""
        return ids_in(self.dialect)

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

    def delete_key(self, key: str) -> int:
        return self.delete_keys([key])

    def delete_matching(self, marker: str) -> int:
        """Forget every cached exchange whose prompt, system prompt or answer contains `marker`."""
        if not marker:
            raise ValueError("refusing to delete with an empty marker (it would match everything)")
        return self.delete_keys(self.keys_mentioning([marker]))

    # forgetting by derivation -------------------------------------------------------------
    def derived_keys(self, source_ids: Iterable[str], text_hashes: Iterable[str] = (),
                     kept: Callable[[set[str]], set[str]] | None = None) -> set[str]:
        """Keys of every entry whose input derived from these sources: a source id in
        `source_ids`, a source text whose SHA-256 is in `text_hashes`, or (transitively) the
        answer of an entry already found (a fold state, a map-reduce part, a compression).

        `kept(ids)`: those of `ids` naming artifacts that do not derive from these sources. A
        source recorded under such an id is judged by that derivation record, never by its
        bytes: a month rolled up again without a forgotten conversation the prompt never showed
        is byte-identical to the one rolled up with it, and what reads it derives from nothing
        forgotten."""
        ids = json.dumps(sorted(set(source_ids)))
        hashes = set(text_hashes)
        with self._lock:
            found = {r[0] for r in self._db.execute(
                f"SELECT DISTINCT key FROM response_sources WHERE source_id IN {self._ids}",
                (ids,))}
            frontier = set(found)
            while frontier or hashes:
                hashes |= self._answer_hashes(frontier)
                rows = [(k, sid) for k, sid in self._db.execute(
                    f"SELECT DISTINCT key, source_id FROM response_sources WHERE text_hash IN "
                    f"{self._ids}", (json.dumps(sorted(hashes)),)) if k not in found]
                spared = kept({sid for _, sid in rows}) if kept is not None and rows else set()
                frontier = {k for k, sid in rows if sid not in spared}
                found |= frontier
                hashes = set()
        return found

    def _answer_hashes(self, keys: set[str]) -> set[str]:
        out = set()
        for (raw,) in self._db.execute(f"SELECT response_json FROM responses WHERE key IN "
                                       f"{self._ids}", (json.dumps(sorted(keys)),)):
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
            contains = self.dialect.contains
            sql = "SELECT key FROM responses WHERE (" + " OR ".join(
                f"{contains('prompt')} OR {contains('system')} OR {contains('response_json')}"
                for _ in chunk) + ")"
            args: list = [t for t in chunk for _ in range(3)]
            if scope is not None:
                sql += f" AND key IN {self._ids}"
                args.append(scope)
            with self._lock:
                found |= {r[0] for r in self._db.execute(sql, args)}
        return found

    def keys_for_prompt_hashes(self, hashes: Iterable[str]) -> set[str]:
        with self._lock:
            return {r[0] for r in self._db.execute(
                f"SELECT key FROM responses WHERE prompt_hash IN {self._ids}",
                (json.dumps(sorted(set(hashes))),))}

    def delete_keys(self, keys: Iterable[str]) -> int:
        """Delete these entries with their sources and batch bookkeeping, in one transaction
        (all or nothing, so a crash never leaves half a derivation chain to rediscover)."""
        param = json.dumps(sorted(set(keys)))
        with self._transaction():
            self._db.execute(f"DELETE FROM response_sources WHERE key IN {self._ids}", (param,))
            self._db.execute(f"DELETE FROM batch_items WHERE request_key IN {self._ids}",
                             (param,))
            return self._db.execute(f"DELETE FROM responses WHERE key IN {self._ids}",
                                    (param,)).rowcount

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


# --- the same cache on PostgreSQL ------------------------------------------------------------

_PG_TEXT = 'TEXT COLLATE "C"'
PG_CACHE_SCHEMA = f"""
CREATE TABLE responses (
    key {_PG_TEXT} PRIMARY KEY,
    prompt_hash {_PG_TEXT} NOT NULL,
    system_hash {_PG_TEXT} NOT NULL,
    provider {_PG_TEXT} NOT NULL,
    model {_PG_TEXT} NOT NULL,
    temperature DOUBLE PRECISION,
    max_tokens BIGINT NOT NULL,
    label TEXT NOT NULL,
    prompt TEXT NOT NULL,
    system TEXT NOT NULL,
    response_json TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX responses_prompt_hash ON responses (prompt_hash);
CREATE TABLE batches (
    batch_id {_PG_TEXT} PRIMARY KEY,
    fingerprint {_PG_TEXT} NOT NULL,
    provider {_PG_TEXT} NOT NULL,
    model {_PG_TEXT} NOT NULL,
    status {_PG_TEXT} NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX batches_fingerprint ON batches (fingerprint, status);
CREATE TABLE batch_items (
    batch_id {_PG_TEXT} NOT NULL,
    custom_id {_PG_TEXT} NOT NULL,
    request_key {_PG_TEXT} NOT NULL,
    label TEXT NOT NULL,
    PRIMARY KEY (batch_id, custom_id)
);
CREATE TABLE response_sources (
    key {_PG_TEXT} NOT NULL,
    position BIGINT NOT NULL,
    source_id {_PG_TEXT} NOT NULL,
    text_hash {_PG_TEXT} NOT NULL,
    PRIMARY KEY (key, position)
);
CREATE INDEX response_sources_id ON response_sources (source_id);
CREATE INDEX response_sources_text ON response_sources (text_hash)
"""

PG_CACHE_MIGRATIONS = MigrationRegistry()


@PG_CACHE_MIGRATIONS
def pc001_cache_schema(conn) -> None:
    """The SQLite cache's schema as of c002, in one step."""
    from synix_resources.store.postgres_schema import run_ddl

    run_ddl(conn, PG_CACHE_SCHEMA)


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
