"""The write side of the SQL artifact store (SQLite and PostgreSQL): put, adopt, retire, delete.

`prepare` validates an artifact and computes its id and hashes outside any lock; every backend
(the in-memory one too) writes what it returns, so all of them refuse the same bad input with the
same error.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import json
import sqlite3
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from typing import Any, Iterable

from synix_resources import fingerprints
from synix_resources.errors import ArtifactNotFound
from synix_resources.names import MAIN
from synix_resources.store.connection import utc_now
from synix_resources.store.dialect import ids_in
from synix_resources.store.records import AUDIT_FIELDS, Artifact

if TYPE_CHECKING:
    from synix_resources.field_crypto import FieldCipher

_INSERT_ARTIFACT = (
    "INSERT INTO artifacts (artifact_id, layer, group_key, level, content, content_hash, "
    "materialization_key, metadata, run_id, created_at, superseded_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
# Re-putting a superseded version (same id = same inputs and step version) revives it.
_REVIVE_ARTIFACT = (
    "UPDATE artifacts SET level = ?, content = ?, content_hash = ?, metadata = ?, run_id = ?, "
    "created_at = ?, superseded_at = NULL WHERE artifact_id = ?")
_INSERT_AUDIT = (f"INSERT INTO audit (artifact_id, {', '.join(AUDIT_FIELDS)}, extra) "
                 f"VALUES ({', '.join('?' * (len(AUDIT_FIELDS) + 2))})")


@dataclass(frozen=True)
class Pending:
    """A validated artifact about to be written (ids and hashes computed outside the lock)."""

    artifact: Artifact
    metadata_json: str
    audit_row: tuple | None


def _normalise_audit(audit: dict[str, Any] | None) -> tuple[dict[str, Any] | None, tuple | None]:
    """Audit as returned by the store (every known field, flags a list) and as a table row."""
    if audit is None:
        return None, None
    if not isinstance(audit, dict):
        raise TypeError(f"audit must be a dict or None, not {type(audit).__name__}")
    known = {name: audit.get(name) for name in AUDIT_FIELDS}
    known["flags"] = list(audit.get("flags") or [])
    extra = {k: v for k, v in audit.items() if k not in known}
    row = tuple(json.dumps(known["flags"]) if name == "flags" else known[name]
                for name in AUDIT_FIELDS)
    return {**known, **extra}, row + (json.dumps(extra, default=str) if extra else None,)


def prepare(*, layer: str, group_key: str, content: str, materialization_key: str,
            level: int = 0, metadata: dict | None = None, audit: dict | None = None,
            parents: Iterable[str] = (), run_id: str | None = None) -> Pending:
    for name, value in (("layer", layer), ("group_key", group_key),
                        ("materialization_key", materialization_key)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if not isinstance(content, str):
        raise TypeError(f"content must be a string, not {type(content).__name__}")
    if isinstance(parents, str):  # a lone id would otherwise be split into characters
        raise TypeError("parents must be a sequence of artifact ids, not a string")
    parent_ids = tuple(parents)
    metadata = dict(metadata or {})
    artifact_id = fingerprints.artifact_id(layer, group_key, materialization_key)
    if artifact_id in parent_ids:
        raise ValueError(f"artifact {artifact_id} cannot be its own parent")
    audit_dict, audit_row = _normalise_audit(audit)
    artifact = Artifact(
        artifact_id=artifact_id, layer=layer, group_key=group_key, level=int(level),
        content=content, content_hash=fingerprints.content_hash(content),
        materialization_key=materialization_key, metadata=metadata, audit=audit_dict,
        run_id=run_id, created_at="", superseded_at=None, parent_ids=parent_ids)
    return Pending(artifact, json.dumps(metadata, ensure_ascii=False, default=str), audit_row)


class PutFront(ABC):
    """`put` and `put_many` of every backend: the arguments are checked and normalised once
    (`prepare`), then the backend's `_put_pending` stores them in one transaction."""

    def put(self, *, layer: str, group_key: str, content: str, materialization_key: str,
            level: int = 0, metadata: dict | None = None, audit: dict | None = None,
            parents: Iterable[str] = (), run_id: str | None = None) -> Artifact:
        """Make this the current artifact of (layer, group_key) in one transaction, superseding the previous one; returns the existing artifact unchanged if it is already current."""
        pending = prepare(layer=layer, group_key=group_key, content=content,
                          materialization_key=materialization_key, level=level,
                          metadata=metadata, audit=audit, parents=parents, run_id=run_id)
        return self._put_pending([pending], f"storing {layer}/{group_key}")[0]

    def put_many(self, items: list[dict]) -> list[Artifact]:
        """`put` for each item (dicts of put's keyword arguments), all in one transaction, results in item order."""
        pendings = [prepare(**item) for item in items]
        if not pendings:
            return []
        return self._put_pending(pendings, f"storing {len(pendings)} artifacts")

    @abstractmethod
    def _put_pending(self, pendings: list[Pending], action: str) -> list[Artifact]:
        """Store the prepared artifacts in one transaction of this backend, results in order."""


class ArtifactWrites(PutFront):
    """Writing artifacts; mixed into `ArtifactStore`, whose `_write`/`_read` transactions,
    `_select` and `_set_ref` it uses. On main a put supersedes the group's current artifact; on
    another branch it only moves that branch's pointer."""

    branch: str
    _fields: "FieldCipher"  # set by the store (field_crypto.py)

    def _put_pending(self, pendings: list[Pending], action: str) -> list[Artifact]:
        results: list[Artifact | str] = []
        with self._write(action) as conn:
            for pending in pendings:
                results.append(self._write_one(conn, pending))
            unchanged = [r for r in results if isinstance(r, str)]
            if unchanged:
                stored = {a.artifact_id: a for a in self._select(
                    conn, f"a.artifact_id IN {ids_in(self.dialect)}", (json.dumps(unchanged),))}
                results = [stored[r] if isinstance(r, str) else r for r in results]
        return results  # type: ignore[return-value]

    def _sealed(self, pending: Pending) -> tuple[str, str]:
        """(content, metadata JSON) as the row stores them: the chosen fields encrypted when
        SYNIX_FIELD_KEY is set (field_crypto.py); the returned artifact keeps the plaintext."""
        art = pending.artifact
        if not self._fields.active:
            return art.content, pending.metadata_json
        content, metadata = self._fields.seal_artifact(art.artifact_id, art.content, art.metadata)
        return content, json.dumps(metadata, ensure_ascii=False, default=str)

    def _write_one(self, conn: sqlite3.Connection, pending: Pending) -> Artifact | str:
        """Write one artifact; returns its id instead when it was already current."""
        if self.branch != MAIN:
            return self._write_one_on_branch(conn, pending)
        art = pending.artifact
        row = conn.execute(
            "SELECT artifact_id FROM artifacts WHERE layer = ? AND group_key = ? "
            "AND superseded_at IS NULL", (art.layer, art.group_key)).fetchone()
        if row is not None and row[0] == art.artifact_id:
            return art.artifact_id
        if art.parent_ids:
            self._check_parents_exist(conn, art)
        now = utc_now()
        if row is not None:
            conn.execute("UPDATE artifacts SET superseded_at = ? WHERE artifact_id = ?",
                         (now, row[0]))
        known = conn.execute("SELECT 1 FROM artifacts WHERE artifact_id = ?",
                             (art.artifact_id,)).fetchone()
        if known is None:
            content, metadata_json = self._sealed(pending)
            conn.execute(_INSERT_ARTIFACT, (
                art.artifact_id, art.layer, art.group_key, art.level, content,
                art.content_hash, art.materialization_key, metadata_json, art.run_id,
                now, None))
        else:
            content, metadata_json = self._sealed(pending)
            conn.execute(_REVIVE_ARTIFACT, (
                art.level, content, art.content_hash, metadata_json, art.run_id,
                now, art.artifact_id))
            conn.execute("DELETE FROM edges WHERE child_id = ?", (art.artifact_id,))
            conn.execute("DELETE FROM audit WHERE artifact_id = ?", (art.artifact_id,))
        if art.parent_ids:
            conn.executemany(
                "INSERT INTO edges (child_id, parent_id, position) VALUES (?, ?, ?)",
                [(art.artifact_id, pid, pos) for pos, pid in enumerate(art.parent_ids)])
        if pending.audit_row is not None:
            conn.execute(_INSERT_AUDIT, (art.artifact_id, *pending.audit_row))
        return replace(art, created_at=now)

    def _write_one_on_branch(self, conn: sqlite3.Connection, pending: Pending) -> Artifact | str:
        """A branch never moves main's pointers: a new artifact is stored as not current on
        main, and an artifact some branch already built is reused as it is."""
        art = pending.artifact
        row = conn.execute("SELECT artifact_id FROM refs WHERE branch = ? AND layer = ? "
                           "AND group_key = ?", (self.branch, art.layer, art.group_key)).fetchone()
        if row is not None and row[0] == art.artifact_id:
            return art.artifact_id
        known = conn.execute("SELECT 1 FROM artifacts WHERE artifact_id = ?",
                             (art.artifact_id,)).fetchone()
        now = utc_now()
        if known is None:
            if art.parent_ids:
                self._check_parents_exist(conn, art)
            content, metadata_json = self._sealed(pending)
            conn.execute(_INSERT_ARTIFACT, (
                art.artifact_id, art.layer, art.group_key, art.level, content,
                art.content_hash, art.materialization_key, metadata_json, art.run_id,
                now, now))
            if art.parent_ids:
                conn.executemany(
                    "INSERT INTO edges (child_id, parent_id, position) VALUES (?, ?, ?)",
                    [(art.artifact_id, pid, pos) for pos, pid in enumerate(art.parent_ids)])
            if pending.audit_row is not None:
                conn.execute(_INSERT_AUDIT, (art.artifact_id, *pending.audit_row))
        self._set_ref(conn, art.layer, art.group_key, art.artifact_id)
        return replace(art, created_at=now) if known is None else art.artifact_id

    def adopt(self, layer: str, group_key: str, materialization_key: str) -> Artifact | None:
        """Make the already stored artifact with this key current on this branch (no LLM call,
        content untouched); None when no branch has built it yet."""
        artifact_id = fingerprints.artifact_id(layer, group_key, materialization_key)
        with self._write(f"reusing {layer}/{group_key}") as conn:
            if conn.execute("SELECT 1 FROM artifacts WHERE artifact_id = ?",
                            (artifact_id,)).fetchone() is None:
                return None
            if self.branch == MAIN:
                now = utc_now()
                conn.execute("UPDATE artifacts SET superseded_at = ? WHERE layer = ? AND "
                             "group_key = ? AND superseded_at IS NULL AND artifact_id != ?",
                             (now, layer, group_key, artifact_id))
                conn.execute("UPDATE artifacts SET superseded_at = NULL WHERE artifact_id = ?",
                             (artifact_id,))
            else:
                self._set_ref(conn, layer, group_key, artifact_id)
            return self._select(conn, "a.artifact_id = ?", (artifact_id,))[0]

    def _check_parents_exist(self, conn: sqlite3.Connection, art: Artifact) -> None:
        missing = [r[0] for r in conn.execute(
            f"SELECT value FROM {self.dialect.json_values()} WHERE NOT EXISTS "
            "(SELECT 1 FROM artifacts WHERE artifact_id = value)", (json.dumps(art.parent_ids),))]
        if missing:
            raise ArtifactNotFound(
                f"Cannot store {art.layer}/{art.group_key}: parent artifact(s) "
                f"{', '.join(missing)} are not in {self.path}",
                hint="store parents before their children")

    def retire(self, layer: str, group_keys: Iterable[str]) -> int:
        """Mark the current artifacts of these vanished groups superseded and return how many were."""
        keys = list(group_keys)
        if not keys:
            return 0
        with self._write(f"retiring {len(keys)} groups of {layer}") as conn:
            if self.branch != MAIN:
                return conn.execute(
                    f"DELETE FROM refs WHERE branch = ? AND layer = ? AND group_key IN "
                    f"{ids_in(self.dialect)}", (self.branch, layer, json.dumps(keys))).rowcount
            return conn.execute(
                f"UPDATE artifacts SET superseded_at = ? WHERE layer = ? "
                f"AND superseded_at IS NULL AND group_key IN {ids_in(self.dialect)}",
                (utc_now(), layer, json.dumps(keys))).rowcount

    def delete(self, ids: Iterable[str]) -> int:
        """Hard-delete these artifacts with their edges (both directions) and audit, returning how many artifacts went; pass descendants too to forget fully."""
        id_list = list(ids)
        if not id_list:
            return 0
        param, ids = json.dumps(id_list), ids_in(self.dialect)
        with self._write(f"deleting {len(id_list)} artifacts") as conn:
            conn.execute(f"DELETE FROM edges WHERE child_id IN {ids} "
                         f"OR parent_id IN {ids}", (param, param))
            conn.execute(f"DELETE FROM audit WHERE artifact_id IN {ids}", (param,))
            return conn.execute(f"DELETE FROM artifacts WHERE artifact_id IN {ids}",
                                (param,)).rowcount

    def purge_free_pages(self) -> bool:
        """Checkpoint and truncate the WAL and VACUUM so deleted content leaves the files; False if other readers kept the WAL from being truncated."""
        with self._read("purging free pages") as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
            # VACUUM itself went through the WAL; fold it back and truncate again.
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        return busy == 0
