"""The response cache's derivation lookups, used by forget: which cached answers derive from a
source (`response_sources`), which mention a text, and deleting them with their bookkeeping.
`cache.ResponseCache` inherits them; the same SQL serves SQLite and PostgreSQL (`dialect`)."""
from __future__ import annotations

import json
from typing import Callable, Iterable

from synix_resources.fingerprints import sha256_text
from synix_resources.store.dialect import ids_in

# Texts per `keys_mentioning` query: 3 host parameters each, well under SQLite's limit.
_TEXTS_PER_QUERY = 100


class SourceQueries:
    """Mixed into `ResponseCache`, whose `_db`, `_lock`, `_transaction` and `dialect` it uses."""

    @property
    def _ids(self) -> str:
        """`(SELECT value FROM …)` over a JSON array parameter, in this engine's SQL."""
        return ids_in(self.dialect)

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
