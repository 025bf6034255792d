"""Response cache in its own SQLite file: answers `replay=True` runs with zero calls.

Keyed by (rendered prompt hash, system hash, model, temperature, max_tokens, provider). The
prompt text is kept so "forget" can delete every entry whose prompt mentions a marker. The same
file holds Message Batches bookkeeping so a restarted process resumes polling a submitted batch.
Nothing here ever holds an API key: only prompts, responses and ids are written.
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

from synix_resources.disk import disk_full_error, is_disk_full, maps_disk_full
from synix_resources.errors import LLMError
from synix_resources.fingerprints import canonical_json, sha256_text
from synix_resources.private import private_file

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
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(SCHEMA)
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

    def delete_key(self, key: str) -> int:
        with self._lock, self._db:
            return self._db.execute("DELETE FROM responses WHERE key = ?", (key,)).rowcount

    def delete_matching(self, marker: str) -> int:
        """Forget every cached exchange whose prompt, system prompt or answer contains `marker`."""
        if not marker:
            raise ValueError("refusing to delete with an empty marker (it would match everything)")
        with self._lock, self._db:
            return self._db.execute(
                "DELETE FROM responses WHERE instr(prompt, ?) > 0 OR instr(system, ?) > 0"
                " OR instr(response_json, ?) > 0", (marker, marker, marker)).rowcount

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
