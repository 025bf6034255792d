"""The write side of the in-memory store (`memory.MemoryArtifactStore`): put, adopt, retire and
delete, with the semantics of `artifact_writes.ArtifactWrites` (the same `prepare`, so the same
refusals of bad input)."""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from synix_resources import fingerprints
from synix_resources.errors import ArtifactNotFound
from synix_resources.names import MAIN
from synix_resources.store.artifact_writes import Pending, PutFront
from synix_resources.store.connection import utc_now
from synix_resources.store.memory_state import Row, State, Transaction, audit_row
from synix_resources.store.records import Artifact


class MemoryWrites(PutFront):
    """Writing; mixed into `MemoryArtifactStore`, whose `_write` transactions and `_artifact`
    it uses. On main a put supersedes the group's current artifact; on another branch it only
    moves that branch's pointer."""

    branch: str

    # --- writes -------------------------------------------------------------------------

    def _put_pending(self, pendings: list[Pending], action: str) -> list[Artifact]:
        with self._write(action) as tx:
            results = [self._write_one(tx, p) for p in pendings]
            return [self._artifact(tx.s, tx.s.artifacts[r]) if isinstance(r, str) else r
                    for r in results]

    def _insert(self, tx: Transaction, pending: Pending, now: str, superseded: str | None) -> None:
        art = pending.artifact
        tx.set(tx.s.artifacts, art.artifact_id, Row(
            art.artifact_id, art.layer, art.group_key, art.level, art.content, art.content_hash,
            art.materialization_key, pending.metadata_json, art.run_id, now, superseded,
            tx.s.next_seq()))
        self._link(tx, pending)

    def _link(self, tx: Transaction, pending: Pending) -> None:
        art = pending.artifact
        if art.parent_ids:
            tx.set(tx.s.edges, art.artifact_id, art.parent_ids)
        if pending.audit_row is not None:
            tx.set(tx.s.audit, art.artifact_id, audit_row(pending.audit_row))

    def _write_one(self, tx: Transaction, pending: Pending) -> Artifact | str:
        """Write one artifact; returns its id instead when it was already current."""
        s, art = tx.s, pending.artifact
        if self.branch != MAIN:
            return self._write_one_on_branch(tx, pending)
        group = (art.layer, art.group_key)
        current = s.main.get(group)
        if current == art.artifact_id:
            return art.artifact_id
        self._check_parents_exist(s, art)
        now = utc_now()
        if current is not None:
            tx.set(s.artifacts, current, replace(s.artifacts[current], superseded_at=now))
        known = s.artifacts.get(art.artifact_id)
        if known is None:
            self._insert(tx, pending, now, None)
        else:  # revive: same id, refreshed content, parents and audit
            tx.set(s.artifacts, art.artifact_id, replace(
                known, level=art.level, content=art.content, content_hash=art.content_hash,
                metadata=pending.metadata_json, run_id=art.run_id, created_at=now,
                superseded_at=None))
            tx.pop(s.edges, art.artifact_id)
            tx.pop(s.audit, art.artifact_id)
            self._link(tx, pending)
        tx.set(s.main, group, art.artifact_id)
        return replace(art, created_at=now)

    def _write_one_on_branch(self, tx: Transaction, pending: Pending) -> Artifact | str:
        """A branch never moves main's pointers (see `ArtifactWrites._write_one_on_branch`)."""
        s, art = tx.s, pending.artifact
        ref = (self.branch, art.layer, art.group_key)
        if s.refs.get(ref) == art.artifact_id:
            return art.artifact_id
        known = art.artifact_id in s.artifacts
        now = utc_now()
        if not known:
            self._check_parents_exist(s, art)
            self._insert(tx, pending, now, now)
        tx.set(s.refs, ref, art.artifact_id)
        return art.artifact_id if known else replace(art, created_at=now)

    def _check_parents_exist(self, s: State, art: Artifact) -> None:
        missing = [p for p in art.parent_ids if p not in s.artifacts]
        if missing:
            raise ArtifactNotFound(
                f"Cannot store {art.layer}/{art.group_key}: parent artifact(s) "
                f"{', '.join(missing)} are not in {self.path}",
                hint="store parents before their children")

    def adopt(self, layer: str, group_key: str, materialization_key: str) -> Artifact | None:
        """Make the already stored artifact with this key current on this branch; None when no
        branch has built it yet."""
        artifact_id = fingerprints.artifact_id(layer, group_key, materialization_key)
        with self._write(f"reusing {layer}/{group_key}") as tx:
            s = tx.s
            if artifact_id not in s.artifacts:
                return None
            if self.branch == MAIN:
                current = s.main.get((layer, group_key))
                if current is not None and current != artifact_id:
                    tx.set(s.artifacts, current, replace(s.artifacts[current],
                                                         superseded_at=utc_now()))
                tx.set(s.artifacts, artifact_id, replace(s.artifacts[artifact_id],
                                                         superseded_at=None))
                tx.set(s.main, (layer, group_key), artifact_id)
            else:
                tx.set(s.refs, (self.branch, layer, group_key), artifact_id)
            return self._artifact(s, s.artifacts[artifact_id])

    def retire(self, layer: str, group_keys: Iterable[str]) -> int:
        """Mark the current artifacts of these vanished groups superseded and return how many were."""
        keys = set(group_keys)
        if not keys:
            return 0
        with self._write(f"retiring {len(keys)} groups of {layer}") as tx:
            s = tx.s
            if self.branch != MAIN:
                return sum(tx.pop(s.refs, (self.branch, layer, k)) for k in keys)
            now, retired = utc_now(), 0
            for key in keys:
                current = s.main.get((layer, key))
                if current is not None:
                    tx.set(s.artifacts, current, replace(s.artifacts[current], superseded_at=now))
                    tx.pop(s.main, (layer, key))
                    retired += 1
            return retired

    def delete(self, ids: Iterable[str]) -> int:
        """Hard-delete these artifacts with their edges (both directions), audit and every
        branch's pointer to them, returning how many artifacts went."""
        gone = set(ids)
        if not gone:
            return 0
        with self._write(f"deleting {len(gone)} artifacts") as tx:
            s = tx.s
            for child, parent_ids in list(s.edges.items()):
                if child in gone:
                    tx.pop(s.edges, child)
                elif gone.intersection(parent_ids):
                    kept = tuple(p for p in parent_ids if p not in gone)
                    if kept:
                        tx.set(s.edges, child, kept)
                    else:
                        tx.pop(s.edges, child)
            for ref, aid in list(s.refs.items()):
                if aid in gone:
                    tx.pop(s.refs, ref)
            deleted = 0
            for aid in gone:
                row = s.artifacts.get(aid)
                if row is None:
                    continue
                if s.main.get((row.layer, row.group_key)) == aid:
                    tx.pop(s.main, (row.layer, row.group_key))
                tx.pop(s.audit, aid)
                tx.pop(s.artifacts, aid)
                deleted += 1
            return deleted

    def purge_free_pages(self) -> bool:
        """Nothing to purge: a deleted artifact leaves no copy behind in memory."""
        with self._read("purging free pages"):
            return True
