"""The read side of the SQL artifact store (SQLite and PostgreSQL): lookups by id or prefix,
current artifacts, layers, history and ordered pages, as one branch sees them."""
from __future__ import annotations

from typing import TYPE_CHECKING

import json
import sqlite3
from dataclasses import replace
from typing import Any, Iterable

from synix_resources.errors import ArtifactNotFound
from synix_resources.names import MAIN
from synix_resources.store.dialect import ids_in
from synix_resources.store.records import AUDIT_FIELDS, Artifact, CurrentRef

if TYPE_CHECKING:
    from synix_resources.field_crypto import FieldCipher

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


def decode_audit(row: tuple) -> dict[str, Any]:
    values = dict(zip(AUDIT_FIELDS, row[:len(AUDIT_FIELDS)]))
    values["flags"] = json.loads(values["flags"]) if values["flags"] else []
    extra = row[len(AUDIT_FIELDS)]
    return {**values, **(json.loads(extra) if extra else {})}



def in_order(found: dict[str, Artifact], ids: list[str], where: object) -> list[Artifact]:
    """`get_many`'s answer on every backend: the artifacts in the order asked, or one error
    naming (the first five of) the ids that are not in the store at `where`."""
    missing = [i for i in ids if i not in found]
    if missing:
        shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        raise ArtifactNotFound(f"{len(missing)} artifact(s) not in {where}: {shown}")
    return [found[i] for i in ids]


class ArtifactReads:
    """Reading artifacts; mixed into `ArtifactStore`, whose `_read` transactions it uses. On a
    branch other than main, "current" means the branch's pointers (`refs`), and `superseded_at`
    is reported relative to the branch."""

    branch: str
    _fields: "FieldCipher"  # set by the store (field_crypto.py)

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
            # encrypted fields (field_crypto.py) are opened here, the one place rows are read
            content, metadata = self._fields.open_row(row[0], row[4], row[7])
            out.append(Artifact(
                artifact_id=row[0], layer=row[1], group_key=row[2], level=row[3],
                content=content, content_hash=row[5], materialization_key=row[6],
                metadata=metadata, run_id=row[8], created_at=row[9],
                superseded_at=row[10],
                audit=decode_audit(row[12:]) if not outline and row[11] else None,
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
        return in_order(found, id_list, self.path)

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

