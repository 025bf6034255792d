"""ArtifactStore: every artifact Synix builds, its ordered parents, audit, runs and bookkeeping.

Identity: `artifact_id = fingerprints.artifact_id(layer, group_key, materialization_key)`, so
the same inputs + step version always name the same artifact, and identical content in two
groups stays two artifacts. Each (layer, group_key) has at most one *current* artifact; older
versions stay readable as history with `superseded_at` set; putting a superseded version's
key again makes that version current again (same id, refreshed content and parents).

Plain Python, usable outside Dagster; `resource.ArtifactStoreResource` wraps it.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, replace
from typing import Any, Iterable

from synix_resources import fingerprints
from synix_resources.errors import ArtifactNotFound
from synix_resources.names import check_branch
from synix_resources.store.branches import MAIN, BranchesMixin
from synix_resources.store.connection import StoreConnection, utc_now
from synix_resources.store.dialect import ids_in, is_postgres_url
from synix_resources.store.postgres import PostgresConnection
from synix_resources.store.provenance import ProvenanceMixin
from synix_resources.store.records import (
    AUDIT_FIELDS, Artifact, Checkpoint, CurrentRef, Failure, LineageNode, Run,
)
from synix_resources.store.runs import RunsMixin

__all__ = ["Artifact", "ArtifactStore", "Checkpoint", "CurrentRef", "Failure", "LineageNode",
           "PostgresArtifactStore", "Run"]

MIN_PREFIX = 6

_ARTIFACT_COLS = ("a.artifact_id, a.layer, a.group_key, a.level, a.content, a.content_hash, "
                  "a.materialization_key, a.metadata, a.run_id, a.created_at, a.superseded_at")
_AUDIT_COLS = ", ".join(f"au.{name}" for name in AUDIT_FIELDS) + ", au.extra"
_SELECT = (f"SELECT {_ARTIFACT_COLS}, au.artifact_id IS NOT NULL, {_AUDIT_COLS} "
           "FROM artifacts a LEFT JOIN audit au ON au.artifact_id = a.artifact_id")
# The same columns without the content and the audit (an LLM's raw answer): what an outline
# of a whole layer needs (ids, hashes, metadata), at a fraction of the memory.
_OUTLINE_SELECT = ("SELECT " + _ARTIFACT_COLS.replace("a.content,", "'' AS content,")
                   + ", 0 FROM artifacts a")
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
class _Pending:
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


def _prepare(*, layer: str, group_key: str, content: str, materialization_key: str,
             level: int = 0, metadata: dict | None = None, audit: dict | None = None,
             parents: Iterable[str] = (), run_id: str | None = None) -> _Pending:
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
    return _Pending(artifact, json.dumps(metadata, ensure_ascii=False, default=str), audit_row)


def _decode_audit(row: tuple) -> dict[str, Any]:
    values = dict(zip(AUDIT_FIELDS, row[:len(AUDIT_FIELDS)]))
    values["flags"] = json.loads(values["flags"]) if values["flags"] else []
    extra = row[len(AUDIT_FIELDS)]
    return {**values, **(json.loads(extra) if extra else {})}


class ArtifactStore(BranchesMixin, ProvenanceMixin, RunsMixin, StoreConnection):
    """SQLite-backed store of artifacts, provenance edges, audit, runs and build bookkeeping.

    A store object reads and moves the current pointers of one branch (`branch`, default
    main); `on_branch(name)` gives a view of another branch over the same connection. Artifacts
    themselves are shared: a branch that computes a key some branch already built reuses it.
    """

    def __new__(cls, path=None, *args, **kwargs):
        # A `postgresql://` URL where a file path would go opens the PostgreSQL store: every
        # caller (CLI, resources, engine) picks the backend by the location it was given.
        if cls is ArtifactStore and is_postgres_url(path):
            cls = PostgresArtifactStore
        return super().__new__(cls)

    def __init__(self, path, *, branch: str = MAIN, **kwargs):
        self.branch = check_branch(branch)
        super().__init__(path, **kwargs)

    # --- writing ------------------------------------------------------------------------

    def put(self, *, layer: str, group_key: str, content: str, materialization_key: str,
            level: int = 0, metadata: dict | None = None, audit: dict | None = None,
            parents: Iterable[str] = (), run_id: str | None = None) -> Artifact:
        """Make this the current artifact of (layer, group_key) in one transaction, superseding the previous one; returns the existing artifact unchanged if it is already current."""
        pending = _prepare(layer=layer, group_key=group_key, content=content,
                           materialization_key=materialization_key, level=level,
                           metadata=metadata, audit=audit, parents=parents, run_id=run_id)
        return self._put_pending([pending], f"storing {layer}/{group_key}")[0]

    def put_many(self, items: list[dict]) -> list[Artifact]:
        """`put` for each item (dicts of put's keyword arguments), all in one transaction, results in item order."""
        pendings = [_prepare(**item) for item in items]
        if not pendings:
            return []
        return self._put_pending(pendings, f"storing {len(pendings)} artifacts")

    def _put_pending(self, pendings: list[_Pending], action: str) -> list[Artifact]:
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

    def _write_one(self, conn: sqlite3.Connection, pending: _Pending) -> Artifact | str:
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
            conn.execute(_INSERT_ARTIFACT, (
                art.artifact_id, art.layer, art.group_key, art.level, art.content,
                art.content_hash, art.materialization_key, pending.metadata_json, art.run_id,
                now, None))
        else:
            conn.execute(_REVIVE_ARTIFACT, (
                art.level, art.content, art.content_hash, pending.metadata_json, art.run_id,
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

    def _write_one_on_branch(self, conn: sqlite3.Connection, pending: _Pending) -> Artifact | str:
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
            conn.execute(_INSERT_ARTIFACT, (
                art.artifact_id, art.layer, art.group_key, art.level, art.content,
                art.content_hash, art.materialization_key, pending.metadata_json, art.run_id,
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

    # --- reading ------------------------------------------------------------------------

    def _select(self, conn: sqlite3.Connection, where: str, params: tuple,
                order: str = "a.group_key, a.created_at", *, outline: bool = False) -> list[Artifact]:
        """Artifacts matching `where` (over alias `a`) with audit and ordered parent ids;
        `outline=True` reads neither content nor audit (see `outlines`)."""
        parents: dict[str, list[str]] = {}
        for child, parent in conn.execute(
                f"SELECT e.child_id, e.parent_id FROM edges e WHERE e.child_id IN "
                f"(SELECT a.artifact_id FROM artifacts a WHERE {where}) "
                f"ORDER BY e.child_id, e.position", params):
            parents.setdefault(child, []).append(parent)
        out = []
        select = _OUTLINE_SELECT if outline else _SELECT
        for row in conn.execute(f"{select} WHERE {where} ORDER BY {order}", params):
            out.append(Artifact(
                artifact_id=row[0], layer=row[1], group_key=row[2], level=row[3],
                content=row[4], content_hash=row[5], materialization_key=row[6],
                metadata=json.loads(row[7]), run_id=row[8], created_at=row[9],
                superseded_at=row[10],
                audit=_decode_audit(row[12:]) if not outline and row[11] else None,
                parent_ids=tuple(parents.get(row[0], ()))))
        if self.branch != MAIN and out:
            out = self._as_seen_by_branch(conn, out)
        return out

    def _as_seen_by_branch(self, conn: sqlite3.Connection, arts: list[Artifact]) -> list[Artifact]:
        """`superseded_at` relative to this branch: None for its current artifacts."""
        current = {r[0] for r in conn.execute(
            f"SELECT artifact_id FROM refs WHERE branch = ? AND artifact_id IN {ids_in(self.dialect)}",
            (self.branch, json.dumps([a.artifact_id for a in arts])))}
        return [replace(a, superseded_at=None) if a.artifact_id in current else
                replace(a, superseded_at=a.superseded_at or a.created_at) for a in arts]

    def _resolve(self, conn: sqlite3.Connection, ref: str) -> str | None:
        """Full id for an exact id or a unique prefix (of the id or of its hex digest)."""
        if conn.execute("SELECT 1 FROM artifacts WHERE artifact_id = ?", (ref,)).fetchone():
            return ref
        if len(ref) < MIN_PREFIX:
            return None
        matches = [r[0] for r in conn.execute(
            "SELECT artifact_id FROM artifacts WHERE artifact_id >= ? AND artifact_id < ? "
            "ORDER BY artifact_id LIMIT 4", (ref, ref + "\U0010ffff"))]
        if not matches:
            # Users often copy only the hex part after "layer-"; digests are the last 16 chars.
            matches = [r[0] for r in conn.execute(
                "SELECT artifact_id FROM artifacts WHERE "
                "substr(artifact_id, length(artifact_id) - 15, ?) = ? "
                "ORDER BY artifact_id LIMIT 4", (len(ref), ref))]
        if len(matches) > 1:
            shown = ", ".join(matches[:3])
            raise ArtifactNotFound(f"Artifact prefix {ref!r} is ambiguous in {self.path}: "
                                   f"it matches {shown}{', …' if len(matches) > 3 else ''}",
                                   hint="give more characters of the id")
        return matches[0] if matches else None

    def _not_found(self, ref: str) -> ArtifactNotFound:
        return ArtifactNotFound(f"No artifact {ref!r} in {self.path}",
                                hint=f"check the id; a prefix needs at least {MIN_PREFIX} "
                                     "characters")

    def find(self, artifact_id: str) -> Artifact | None:
        """The artifact with this id or unique prefix (≥ 6 chars), or None if there is none."""
        with self._read(f"reading {artifact_id}") as conn:
            full = self._resolve(conn, artifact_id)
            if full is None:
                return None
            return self._select(conn, "a.artifact_id = ?", (full,))[0]

    def get(self, artifact_id: str) -> Artifact:
        """The artifact with this id or unique prefix (≥ 6 chars); raises `ArtifactNotFound`."""
        found = self.find(artifact_id)
        if found is None:
            raise self._not_found(artifact_id)
        return found

    def get_many(self, ids: Iterable[str], *, outline: bool = False) -> list[Artifact]:
        """Artifacts for these exact ids in the given order; raises `ArtifactNotFound` naming any
        missing. `outline=True` reads them without content or audit (as `outlines` does)."""
        id_list = list(ids)
        if not id_list:
            return []
        with self._read(f"reading {len(id_list)} artifacts") as conn:
            found = {a.artifact_id: a for a in self._select(
                conn, f"a.artifact_id IN {ids_in(self.dialect)}", (json.dumps(id_list),),
                outline=outline)}
        missing = [i for i in id_list if i not in found]
        if missing:
            shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
            raise ArtifactNotFound(f"{len(missing)} artifact(s) not in {self.path}: {shown}")
        return [found[i] for i in id_list]

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Those of these exact ids that name an artifact in the store (current or not)."""
        id_list = sorted(set(ids))
        if not id_list:
            return set()
        with self._read(f"looking up {len(id_list)} artifact ids") as conn:
            return {r[0] for r in conn.execute(
                f"SELECT artifact_id FROM artifacts WHERE artifact_id IN {ids_in(self.dialect)}",
                (json.dumps(id_list),))}

    def current(self, layer: str, group_key: str) -> Artifact | None:
        """The current artifact of (layer, group_key), or None if the group has none."""
        with self._read(f"reading {layer}/{group_key}") as conn:
            if self.branch != MAIN:
                rows = self._select(conn, "a.artifact_id = (SELECT artifact_id FROM refs WHERE "
                                          "branch = ? AND layer = ? AND group_key = ?)",
                                    (self.branch, layer, group_key))
            else:
                rows = self._select(conn, "a.layer = ? AND a.group_key = ? AND "
                                          "a.superseded_at IS NULL", (layer, group_key))
        return rows[0] if rows else None

    def current_index(self, layer: str,
                      group_keys: Iterable[str] | None = None) -> dict[str, CurrentRef]:
        """group_key → CurrentRef of every current artifact in `layer`, in one query (for rebuild
        planning); only those of `group_keys` when given (a run planning its own partitions)."""
        only, params = "", ()
        if group_keys is not None:
            only, params = f" AND group_key IN {ids_in(self.dialect)}", (json.dumps(sorted(group_keys)),)
        with self._read(f"indexing {layer}") as conn:
            if self.branch != MAIN:
                rows = conn.execute(
                    "SELECT r.group_key, a.artifact_id, a.materialization_key, a.content_hash, "
                    "a.created_at FROM refs r JOIN artifacts a ON a.artifact_id = r.artifact_id "
                    "WHERE r.branch = ? AND r.layer = ?" + only.replace("group_key", "r.group_key"),
                    (self.branch, layer, *params)).fetchall()
            else:
                rows = conn.execute(
                    "SELECT group_key, artifact_id, materialization_key, content_hash, "
                    "created_at FROM artifacts WHERE layer = ? AND superseded_at IS NULL"
                    + only, (layer, *params)).fetchall()
        return {r[0]: CurrentRef(r[1], r[2], r[3], r[4]) for r in rows}

    def current_count(self, layer: str) -> int:
        """How many current artifacts `layer` has, from the current-pointer index alone: a
        no-op build reports each layer's count, and reading every row of a layer whose texts
        are long (10,000 transcripts) just to count them took most of its time."""
        with self._read(f"counting {layer}") as conn:
            if self.branch != MAIN:
                row = conn.execute("SELECT COUNT(*) FROM refs r JOIN artifacts a ON "
                                   "a.artifact_id = r.artifact_id WHERE r.branch = ? AND r.layer = ?",
                                   (self.branch, layer)).fetchone()
            else:
                row = conn.execute("SELECT COUNT(*) FROM artifacts WHERE layer = ? AND "
                                   "superseded_at IS NULL", (layer,)).fetchone()
        return int(row[0])

    def list_layer(self, layer: str, include_superseded: bool = False) -> list[Artifact]:
        """Artifacts of `layer` ordered by group_key (then age), current ones only unless asked."""
        if include_superseded:
            where, params = "a.layer = ?", (layer,)
        else:
            where, params = self._current_where(layer)
        with self._read(f"listing {layer}") as conn:
            return self._select(conn, where, params,
                                order=f"a.group_key, a.created_at, a.{self.dialect.rowid}")

    def outlines(self, layer: str) -> list[Artifact]:
        """The current artifacts of `layer` as `list_layer` gives them, but without content
        (`content == ""`) or audit (None): ids, content hashes, metadata and ordered parents,
        for keys and plans over whole layers that must not hold every text in memory."""
        where, params = self._current_where(layer)
        with self._read(f"outlining {layer}") as conn:
            return self._select(conn, where, params,
                                order=f"a.group_key, a.created_at, a.{self.dialect.rowid}",
                                outline=True)

    def _current_where(self, layer: str) -> tuple[str, tuple]:
        """The condition (over alias `a`) selecting the current artifacts of `layer` on this branch."""
        if self.branch != MAIN:
            return ("a.artifact_id IN (SELECT artifact_id FROM refs WHERE branch = ? AND layer = ?)",
                    (self.branch, layer))
        return "a.layer = ? AND a.superseded_at IS NULL", (layer,)

    def history(self, layer: str, group_key: str) -> list[Artifact]:
        """Every version of (layer, group_key), newest first."""
        with self._read(f"reading history of {layer}/{group_key}") as conn:
            return self._select(conn, "a.layer = ? AND a.group_key = ?", (layer, group_key),
                                order=f"a.created_at DESC, a.{self.dialect.rowid} DESC")

    def layers(self) -> dict[str, dict[str, Any]]:
        """layer → {"artifacts": current count, "superseded": count, "last_built": newest created_at}."""
        with self._read("summarising layers") as conn:
            if self.branch != MAIN:
                rows = conn.execute(
                    "SELECT a.layer, COUNT(r.artifact_id), COUNT(*) - COUNT(r.artifact_id), "
                    "MAX(CASE WHEN r.artifact_id IS NOT NULL THEN a.created_at END) "
                    "FROM artifacts a LEFT JOIN refs r ON r.artifact_id = a.artifact_id "
                    "AND r.branch = ? GROUP BY a.layer HAVING COUNT(r.artifact_id) > 0 "
                    "ORDER BY a.layer", (self.branch,)).fetchall()
            else:
                rows = conn.execute(
                    "SELECT layer, COUNT(*) - COUNT(superseded_at), COUNT(superseded_at), "
                    "MAX(created_at) FROM artifacts GROUP BY layer ORDER BY layer").fetchall()
        return {r[0]: {"artifacts": r[1], "superseded": r[2], "last_built": r[3]} for r in rows}

    def ordered_ids(self, layers: Iterable[str], *, newest_first: bool = True,
                    since: str | None = None, until: str | None = None,
                    meta: dict[str, str] | None = None) -> list[str]:
        """Ids of the current artifacts of `layers`, ordered by their `meta.time.created_at`
        (then group key), for paging with `get_many`; `since`/`until` compare ISO date
        prefixes, inclusive; `meta` keeps artifacts whose metadata has exactly these values."""
        layer_list = list(layers)
        where = [f"a.layer IN {ids_in(self.dialect)}", "a.superseded_at IS NULL"]
        params: list[Any] = [json.dumps(layer_list)]
        date = self.dialect.json_text("a.metadata", "'meta.time.created_at'")
        if since:
            where.append(f"substr({date}, 1, {len(since)}) >= ?")
            params.append(since)
        if until:
            where.append(f"substr({date}, 1, {len(until)}) <= ?")
            params.append(until)
        for key, value in (meta or {}).items():
            where.append(f"{self.dialect.json_text('a.metadata')} = ?")
            params += [key, str(value)]
        order = f"{date} {'DESC' if newest_first else 'ASC'}, a.group_key, a.artifact_id"
        with self._read(f"listing {', '.join(layer_list)}") as conn:
            return [r[0] for r in conn.execute(
                f"SELECT a.artifact_id FROM artifacts a WHERE {' AND '.join(where)} ORDER BY {order}",
                params)]

    def audit(self, artifact_id: str) -> dict[str, Any] | None:
        """The audit record (all known fields, plus any extra keys) of an artifact, or None if it has none."""
        return self.get(artifact_id).audit


class PostgresArtifactStore(PostgresConnection, ArtifactStore):
    """The same store on PostgreSQL (`ArtifactStore("postgresql://…")` makes one): several
    hosts' workers share it; writes are serialised by an advisory lock (see postgres.py)."""

    def __init__(self, url: str, *, branch: str = MAIN, **kwargs):
        self.branch = check_branch(branch)
        PostgresConnection.__init__(self, url, **kwargs)
