"""Vectors shared between search indexes: (model, text) key → vector, in one SQLite file.

An index keeps the vectors of its own units, so a new index embeds every text again, and
embedding is most of what building an index costs (MiniLM in numpy). The
eval builds one index per benchmark case and branch, plus raw RAG's, over the same turns: with a
shared cache each turn is embedded once. The key is the index's own (`Vectors.key`: model name
and text), so a cached vector is exactly what embedding the text again would store.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

from synix_resources.private import private_file

_SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, model TEXT NOT NULL, vec BLOB NOT NULL)"
_CHUNK = 500  # keys per SELECT: below SQLite's bound-parameter limit


class VectorCache:
    """Opened per use (a few reads and one write per index batch), so no connection is held
    while an index embeds; several processes may share the file (WAL, busy timeout)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        private_file(self.path)  # the vectors are derived from memory text: 0600
        conn = sqlite3.connect(str(self.path), timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute(_SCHEMA)
        return conn

    def get(self, keys: list[str], model: str, nbytes: int) -> dict[str, bytes]:
        """The cached vectors of `keys` made by `model` (a blob of another size is ignored)."""
        if not keys:
            return {}
        found: dict[str, bytes] = {}
        conn = self._connect()
        try:
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start:start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                for key, vec in conn.execute(
                        f"SELECT key, vec FROM vectors WHERE model = ? AND key IN ({marks})", [model, *chunk]):
                    if len(vec) == nbytes:
                        found[key] = vec
        finally:
            conn.close()
        return found

    def put(self, rows: list[tuple[str, str, bytes]]) -> None:
        """Store (key, model, vector bytes) rows; a key already there is kept."""
        if not rows:
            return
        conn = self._connect()
        try:
            with conn:
                conn.executemany("INSERT OR IGNORE INTO vectors(key, model, vec) VALUES (?, ?, ?)", rows)
        finally:
            conn.close()
