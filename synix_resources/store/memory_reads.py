"""The read side of the in-memory store (`memory.MemoryArtifactStore`): lookups, current
artifacts, layers, ordered pages and provenance, as one branch sees them, with the semantics of
`artifact_reads.ArtifactReads` and `provenance.ProvenanceMixin`."""
from __future__ import annotations

import json
from typing import Any, Iterable

from synix_resources.errors import ArtifactNotFound
from synix_resources.names import MAIN
from synix_resources.store.artifact_reads import MIN_PREFIX, decode_audit, in_order
from synix_resources.store.memory_state import Row, State
from synix_resources.store.provenance import MAX_WALK_DEPTH, leaf_ids, lineage_tree
from synix_resources.store.records import Artifact, CurrentRef, LineageNode


class MemoryReads:
    """Reading; mixed into `MemoryArtifactStore`, whose `_read` (the state under the lock) it
    uses. On a branch other than main, "current" means the branch's pointers."""

    branch: str

    # --- rows as artifacts --------------------------------------------------------------

    def _is_current(self, s: State, row: Row) -> bool:
        if self.branch == MAIN:
            return row.superseded_at is None
        return s.refs.get((self.branch, row.layer, row.group_key)) == row.artifact_id

    def _artifact(self, s: State, row: Row, *, outline: bool = False) -> Artifact:
        """The row as this branch sees it; `outline` leaves out content and audit."""
        if self.branch == MAIN:
            superseded = row.superseded_at
        else:
            superseded = None if self._is_current(s, row) else (row.superseded_at or row.created_at)
        audit = None if outline else s.audit.get(row.artifact_id)
        return Artifact(
            artifact_id=row.artifact_id, layer=row.layer, group_key=row.group_key, level=row.level,
            content="" if outline else row.content, content_hash=row.content_hash,
            materialization_key=row.materialization_key, metadata=json.loads(row.metadata),
            audit=decode_audit(audit) if audit is not None else None, run_id=row.run_id,
            created_at=row.created_at, superseded_at=superseded,
            parent_ids=s.edges.get(row.artifact_id, ()))

    def _current_rows(self, s: State, layer: str) -> list[Row]:
        """This branch's current artifacts of `layer`, by group key, age and insertion."""
        if self.branch == MAIN:
            ids = [aid for (lay, _), aid in s.main.items() if lay == layer]
        else:
            ids = [aid for (b, lay, _), aid in s.refs.items() if b == self.branch and lay == layer]
        return sorted((s.artifacts[i] for i in ids),
                      key=lambda r: (r.group_key, r.created_at, r.seq))


    # --- reads --------------------------------------------------------------------------

    def _resolve(self, s: State, ref: str) -> str | None:
        """Full id for an exact id or a unique prefix (of the id or of its hex digest)."""
        if ref in s.artifacts:
            return ref
        if len(ref) < MIN_PREFIX:
            return None
        ids = sorted(s.artifacts)
        matches = [i for i in ids if i.startswith(ref)][:4]
        if not matches:
            # Users often copy only the hex part after "layer-"; digests are the last 16 chars.
            matches = [i for i in ids if i[len(i) - 16:][:len(ref)] == ref][:4]
        if len(matches) > 1:
            shown = ", ".join(matches[:3])
            raise ArtifactNotFound(f"Artifact prefix {ref!r} is ambiguous in {self.path}: "
                                   f"it matches {shown}{', …' if len(matches) > 3 else ''}",
                                   hint="give more characters of the id")
        return matches[0] if matches else None

    def _resolve_or_raise(self, s: State, ref: str) -> str:
        full = self._resolve(s, ref)
        if full is None:
            raise ArtifactNotFound(f"No artifact {ref!r} in {self.path}",
                                   hint=f"check the id; a prefix needs at least {MIN_PREFIX} "
                                        "characters")
        return full

    def find(self, artifact_id: str) -> Artifact | None:
        """The artifact with this id or unique prefix (≥ 6 chars), or None if there is none."""
        with self._read(f"reading {artifact_id}") as s:
            full = self._resolve(s, artifact_id)
            return None if full is None else self._artifact(s, s.artifacts[full])

    def get(self, artifact_id: str) -> Artifact:
        """The artifact with this id or unique prefix (≥ 6 chars); raises `ArtifactNotFound`."""
        with self._read(f"reading {artifact_id}") as s:
            return self._artifact(s, s.artifacts[self._resolve_or_raise(s, artifact_id)])

    def get_many(self, ids: Iterable[str], *, outline: bool = False) -> list[Artifact]:
        """Artifacts for these exact ids in the given order; raises `ArtifactNotFound` naming any missing."""
        id_list = list(ids)
        if not id_list:
            return []
        with self._read(f"reading {len(id_list)} artifacts") as s:
            found = {i: self._artifact(s, s.artifacts[i], outline=outline)
                     for i in set(id_list) if i in s.artifacts}
        return in_order(found, id_list, self.path)

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Those of these exact ids that name an artifact in the store (current or not)."""
        id_set = set(ids)
        if not id_set:
            return set()
        with self._read(f"looking up {len(id_set)} artifact ids") as s:
            return {i for i in id_set if i in s.artifacts}

    def current(self, layer: str, group_key: str) -> Artifact | None:
        """The current artifact of (layer, group_key), or None if the group has none."""
        with self._read(f"reading {layer}/{group_key}") as s:
            pointers = s.main if self.branch == MAIN else s.refs
            key = (layer, group_key) if self.branch == MAIN else (self.branch, layer, group_key)
            aid = pointers.get(key)
            return None if aid is None else self._artifact(s, s.artifacts[aid])

    def current_index(self, layer: str,
                      group_keys: Iterable[str] | None = None) -> dict[str, CurrentRef]:
        """group_key → CurrentRef of every current artifact in `layer` (only `group_keys` when given)."""
        only = None if group_keys is None else set(group_keys)
        with self._read(f"indexing {layer}") as s:
            return {r.group_key: CurrentRef(r.artifact_id, r.materialization_key, r.content_hash,
                                            r.created_at)
                    for r in self._current_rows(s, layer) if only is None or r.group_key in only}

    def current_count(self, layer: str) -> int:
        """How many current artifacts `layer` has."""
        with self._read(f"counting {layer}") as s:
            return len(self._current_rows(s, layer))

    def list_layer(self, layer: str, include_superseded: bool = False) -> list[Artifact]:
        """Artifacts of `layer` ordered by group_key (then age), current ones only unless asked."""
        with self._read(f"listing {layer}") as s:
            rows = (sorted((r for r in s.artifacts.values() if r.layer == layer),
                           key=lambda r: (r.group_key, r.created_at, r.seq))
                    if include_superseded else self._current_rows(s, layer))
            return [self._artifact(s, r) for r in rows]

    def outlines(self, layer: str) -> list[Artifact]:
        """The current artifacts of `layer` without content (`""`) or audit (None)."""
        with self._read(f"outlining {layer}") as s:
            return [self._artifact(s, r, outline=True) for r in self._current_rows(s, layer)]

    def history(self, layer: str, group_key: str) -> list[Artifact]:
        """Every version of (layer, group_key), newest first."""
        with self._read(f"reading history of {layer}/{group_key}") as s:
            rows = sorted((r for r in s.artifacts.values()
                           if r.layer == layer and r.group_key == group_key),
                          key=lambda r: (r.created_at, r.seq), reverse=True)
            return [self._artifact(s, r) for r in rows]

    def layers(self) -> dict[str, dict[str, Any]]:
        """layer → {"artifacts": current count, "superseded": count, "last_built": newest created_at}."""
        out: dict[str, dict[str, Any]] = {}
        with self._read("summarising layers") as s:
            for row in s.artifacts.values():
                entry = out.setdefault(row.layer, {"artifacts": 0, "superseded": 0,
                                                   "last_built": None})
                current = self._is_current(s, row)
                entry["artifacts" if current else "superseded"] += 1
                if (current or self.branch == MAIN) and (entry["last_built"] is None
                                                         or row.created_at > entry["last_built"]):
                    entry["last_built"] = row.created_at
        return {layer: out[layer] for layer in sorted(out) if out[layer]["artifacts"] > 0
                or self.branch == MAIN}

    def ordered_ids(self, layers: Iterable[str], *, newest_first: bool = True,
                    since: str | None = None, until: str | None = None,
                    meta: dict[str, str] | None = None) -> list[str]:
        """Ids of main's current artifacts of `layers` ordered by `meta.time.created_at` (then
        group key, id), filtered as the SQL stores filter (see `ArtifactReads.ordered_ids`)."""
        wanted = set(layers)
        picked = []
        with self._read(f"listing {', '.join(wanted)}") as s:
            for aid in s.main.values():
                row = s.artifacts[aid]
                if row.layer not in wanted:
                    continue
                values = json.loads(row.metadata)
                date = _json_text(values.get("meta.time.created_at"))
                if since and (date is None or date[:len(since)] < since):
                    continue
                if until and (date is None or date[:len(until)] > until):
                    continue
                if any(_json_text(values.get(k)) != str(v) for k, v in (meta or {}).items()):
                    continue
                picked.append((date, row.group_key, row.artifact_id))
        picked.sort(key=lambda p: (p[1], p[2]))  # ties: group key, then id, ascending
        # Stable, also reversed; SQLite orders NULL before any text: last when newest first.
        picked.sort(key=lambda p: (p[0] is not None, p[0] or ""), reverse=newest_first)
        return [p[2] for p in picked]

    def audit(self, artifact_id: str) -> dict[str, Any] | None:
        """The audit record of an artifact, or None if it has none."""
        return self.get(artifact_id).audit


    # --- provenance ---------------------------------------------------------------------

    def parents(self, artifact_id: str) -> list[Artifact]:
        """The artifacts this one was built from, in edge (input) order."""
        with self._read(f"reading parents of {artifact_id}") as s:
            ids = list(s.edges.get(self._resolve_or_raise(s, artifact_id), ()))
        return self.get_many(ids)

    def lineage(self, artifact_id: str, max_depth: int = 20) -> LineageNode:
        """The provenance tree from this artifact up to its leaves, cut off below `max_depth`."""
        with self._read(f"reading lineage of {artifact_id}") as s:
            root = self._resolve_or_raise(s, artifact_id)
            walked: set[str] = set()
            frontier = {root}
            for _ in range(max(max_depth, 0)):
                walked |= frontier
                frontier = {p for aid in frontier for p in s.edges.get(aid, ())}
            edges = {aid: list(s.edges[aid]) for aid in walked if aid in s.edges}
        return lineage_tree(root, edges, self.get_many, max_depth)

    def leaves(self, artifact_id: str, max_depth: int = 10, max_count: int = 100) -> list[Artifact]:
        """The parentless ancestors of this artifact, breadth-first (see `ProvenanceMixin.leaves`)."""
        with self._read(f"reading leaves of {artifact_id}") as s:
            root = self._resolve_or_raise(s, artifact_id)
            found = leaf_ids(root, lambda ids: {i: list(s.edges[i]) for i in ids if s.edges.get(i)},
                             max_depth, max_count)
        return self.get_many(found)

    def descendants(self, artifact_id: str) -> list[Artifact]:
        """Everything built from this artifact, transitively (superseded versions included), nearest first."""
        with self._read(f"reading descendants of {artifact_id}") as s:
            root = self._resolve_or_raise(s, artifact_id)
            children: dict[str, set[str]] = {}
            for child, parent_ids in s.edges.items():
                for parent in parent_ids:
                    children.setdefault(parent, set()).add(child)
            depth_of: dict[str, int] = {}
            frontier, depth = children.get(root, set()), 1
            while frontier and depth <= MAX_WALK_DEPTH:
                fresh = {c for c in frontier if c not in depth_of}
                depth_of.update((c, depth) for c in fresh)
                frontier = {c for aid in fresh for c in children.get(aid, ())}
                depth += 1
            depth_of.pop(root, None)
        return self.get_many(sorted(depth_of, key=lambda aid: (depth_of[aid], aid)))



def _json_text(value: Any) -> str | None:
    """A metadata value as SQLite's `CAST(json_extract(…) AS TEXT)` gives it."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
