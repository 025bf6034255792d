"""Provenance queries over the ordered `edges(child_id, parent_id, position)` table.

Edges point from an artifact to the artifacts it was built from. Walking up (parents,
lineage, leaves) explains where a piece of memory came from; walking down (descendants)
finds everything that must go when a source is forgotten.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Callable

from synix_resources.store.dialect import ids_in
from synix_resources.store.records import Artifact, LineageNode

if TYPE_CHECKING:
    import sqlite3

# Guards recursive walks against a cycle (possible only if a revived artifact's parents were
# rewritten to include its own descendant).
MAX_WALK_DEPTH = 256


def lineage_tree(root: str, edges: dict[str, list[str]],
                 get_many: Callable[[list[str]], list[Artifact]], max_depth: int) -> LineageNode:
    """The tree of `root` from its walked `edges` (child id → parent ids in edge order), with the
    artifacts read by `get_many`; every backend builds its lineage here."""
    ids = list(dict.fromkeys([root, *(p for ps in edges.values() for p in ps)]))
    artifacts = {a.artifact_id: a for a in get_many(ids)}
    # Shared ancestors (fan-in) become shared node objects at equal depth, not copies.
    built: dict[tuple[str, int], LineageNode] = {}

    def node(aid: str, depth: int) -> LineageNode:
        key = (aid, depth)
        if key not in built:
            parent_ids = edges.get(aid, []) if depth < max_depth else []
            built[key] = LineageNode(artifacts[aid],
                                     [node(p, depth + 1) for p in parent_ids])
        return built[key]

    return node(root, 0)


def leaf_ids(root: str, parent_map: Callable[[list[str]], dict[str, list[str]]],
             max_depth: int, max_count: int) -> list[str]:
    """The parentless ancestors of `root` breadth-first (see `leaves`), asking `parent_map` for
    the parents of one frontier at a time."""
    found: list[str] = []
    frontier = [root]
    seen = set(frontier)
    for depth in range(max_depth + 1):
        if not frontier or len(found) >= max_count:
            break
        parents = parent_map(frontier)
        next_frontier: list[str] = []
        for aid in frontier:
            parent_ids = parents.get(aid)
            if not parent_ids:
                found.append(aid)
                if len(found) >= max_count:
                    break
            elif depth < max_depth:
                for pid in parent_ids:
                    if pid not in seen:
                        seen.add(pid)
                        next_frontier.append(pid)
        frontier = next_frontier
    return found


class ProvenanceMixin:
    """Parents, lineage trees, leaves and descendants; mixed into `ArtifactStore`, whose
    `_read`, `_resolve`, `_not_found` and `get_many` it uses."""

    def _resolve_or_raise(self, conn: "sqlite3.Connection", ref: str) -> str:
        full = self._resolve(conn, ref)
        if full is None:
            raise self._not_found(ref)
        return full

    def _parent_map(self, conn: "sqlite3.Connection", ids: list[str]) -> dict[str, list[str]]:
        """child id → parent ids in edge order, for every child in `ids` that has parents."""
        out: dict[str, list[str]] = {}
        for child, parent in conn.execute(
                f"SELECT child_id, parent_id FROM edges WHERE child_id IN {ids_in(self.dialect)} "
                f"ORDER BY child_id, position", (json.dumps(ids),)):
            out.setdefault(child, []).append(parent)
        return out

    def parents(self, artifact_id: str) -> list[Artifact]:
        """The artifacts this one was built from, in edge (input) order."""
        with self._read(f"reading parents of {artifact_id}") as conn:
            full = self._resolve_or_raise(conn, artifact_id)
            ids = self._parent_map(conn, [full]).get(full, [])
        return self.get_many(ids)

    def lineage(self, artifact_id: str, max_depth: int = 20) -> LineageNode:
        """The provenance tree from this artifact up to its leaves, cut off below `max_depth` levels of parents."""
        with self._read(f"reading lineage of {artifact_id}") as conn:
            root = self._resolve_or_raise(conn, artifact_id)
            edges: dict[str, list[str]] = {}
            for child, parent in conn.execute(
                    """
                    WITH RECURSIVE walk(id, depth) AS (
                        SELECT artifact_id, 0 FROM artifacts WHERE artifact_id = ?
                        UNION
                        SELECT e.parent_id, w.depth + 1
                        FROM edges e JOIN walk w ON e.child_id = w.id
                        WHERE w.depth < ?
                    )
                    SELECT e.child_id, e.parent_id FROM edges e
                    WHERE e.child_id IN (SELECT id FROM walk WHERE depth < ?)
                    ORDER BY e.child_id, e.position
                    """, (root, max_depth, max_depth)):
                edges.setdefault(child, []).append(parent)
        return lineage_tree(root, edges, self.get_many, max_depth)

    def leaves(self, artifact_id: str, max_depth: int = 10, max_count: int = 100) -> list[Artifact]:
        """The parentless ancestors of this artifact (itself if it has no parents), breadth-first, deduplicated, at most `max_count`, looking at most `max_depth` levels up."""
        with self._read(f"reading leaves of {artifact_id}") as conn:
            root = self._resolve_or_raise(conn, artifact_id)
            found = leaf_ids(root, lambda ids: self._parent_map(conn, ids), max_depth, max_count)
        return self.get_many(found)

    def descendants(self, artifact_id: str) -> list[Artifact]:
        """Everything built from this artifact, transitively (superseded versions included), nearest first."""
        with self._read(f"reading descendants of {artifact_id}") as conn:
            root = self._resolve_or_raise(conn, artifact_id)
            ids = [r[0] for r in conn.execute(
                """
                WITH RECURSIVE down(id, depth) AS (
                    SELECT child_id, 1 FROM edges WHERE parent_id = ?
                    UNION
                    SELECT e.child_id, d.depth + 1
                    FROM edges e JOIN down d ON e.parent_id = d.id
                    WHERE d.depth < ?
                )
                SELECT id FROM down WHERE id != ? GROUP BY id ORDER BY MIN(depth), id
                """, (root, MAX_WALK_DEPTH, root))]
        return self.get_many(ids)
