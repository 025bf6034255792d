"""The in-memory store's branches, with the semantics of `branches.BranchesMixin`: a branch is a
set of pointers (`refs`) over the shared artifacts, main's pointers are the artifacts not
superseded, and a promote snapshots main as `main@previous` in the same transaction."""
from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from synix_resources.errors import BranchError
from synix_resources.names import MAIN, SNAPSHOT_SUFFIX, check_branch
from synix_resources.store.branches import (
    BRANCH_SCOPED_META, BranchInfo, LayerDiff, branch_meta_key, diff_pointers,
)
from synix_resources.store.connection import utc_now
from synix_resources.store.memory_state import State, Transaction
from synix_resources.store.records import AUDIT_FIELDS


def _pointers(s: State, branch: str) -> dict[tuple[str, str], str]:
    if branch == MAIN:
        return dict(s.main)
    return {(layer, group): aid for (b, layer, group), aid in s.refs.items() if b == branch}


class MemoryBranches:
    """Branch management; mixed into `MemoryArtifactStore`, whose `_read`/`_write` it uses."""

    branch: str

    # --- registry -----------------------------------------------------------------------

    def branches(self) -> list[BranchInfo]:
        """Every branch (main first, then by name); snapshots (`x@previous`) included."""
        with self._read("listing branches") as s:
            out = [BranchInfo(name, parent, created, json.loads(info or "{}"))
                   for name, (parent, created, info) in sorted(s.branches.items())]
        if not any(b.name == MAIN for b in out):
            out.insert(0, BranchInfo(MAIN, None, "", {}))
        return sorted(out, key=lambda b: (b.name != MAIN, b.name))

    def branch_info(self, name: str) -> BranchInfo | None:
        return next((b for b in self.branches() if b.name == name), None)

    @staticmethod
    def _require(s: State, name: str) -> None:
        if name != MAIN and name not in s.branches:
            raise BranchError(f"no branch {name!r}",
                              hint="see `synix branch list`, or create it with "
                                   f"`synix branch create {name}`")

    def create_branch(self, name: str, *, from_branch: str = MAIN,
                      info: dict[str, Any] | None = None) -> BranchInfo:
        """A new branch whose pointers and branch-scoped meta are a copy of `from_branch`'s."""
        check_branch(name, new=True)
        now = utc_now()
        with self._write(f"creating branch {name}") as tx:
            self._require(tx.s, from_branch)
            if name in tx.s.branches:
                raise BranchError(f"branch {name!r} already exists",
                                  hint=f"pick another name or `synix branch delete {name}`")
            tx.set(tx.s.branches, name, (from_branch, now, json.dumps(info or {})))
            self._copy_pointers(tx, from_branch, name)
            self._copy_meta(tx, from_branch, name)
            # A new branch has not been built yet, whatever its parent's state.
            tx.pop(tx.s.meta, branch_meta_key(name, "build:fingerprint"))
        return BranchInfo(name, from_branch, now, info or {})

    def set_branch_info(self, name: str, info: dict[str, Any]) -> None:
        with self._write(f"updating branch {name}") as tx:
            self._require(tx.s, name)
            if name in tx.s.branches:  # main has no registry row to update
                parent, created, _ = tx.s.branches[name]
                tx.set(tx.s.branches, name, (parent, created, json.dumps(info)))

    def delete_branch(self, name: str) -> int:
        """Drop the branch's pointers, meta, failures and registry row; returns how many
        pointers went. Artifacts stay until `gc`."""
        if name == MAIN:
            raise BranchError("cannot delete main", hint="promote another branch instead")
        with self._write(f"deleting branch {name}") as tx:
            if name not in tx.s.branches:
                raise BranchError(f"no branch {name!r}", hint="see `synix branch list`")
            gone = self._drop(tx, name)
            tx.pop(tx.s.branches, name)
        return gone

    def _drop(self, tx: Transaction, name: str) -> int:
        """Remove a (non-main) branch's pointers, scoped meta and failures; how many pointers."""
        s = tx.s
        gone = sum(tx.pop(s.refs, k) for k in [k for k in s.refs if k[0] == name])
        for key in [k for k in s.meta if k.startswith(f"branch:{name}:")]:
            tx.pop(s.meta, key)
        for key in [k for k in s.failures if k[0] == name]:
            tx.pop(s.failures, key)
        return gone

    def _copy_pointers(self, tx: Transaction, source: str, target: str) -> None:
        s = tx.s
        for key in [k for k in s.refs if k[0] == target]:
            tx.pop(s.refs, key)
        for (layer, group), aid in _pointers(s, source).items():
            tx.set(s.refs, (target, layer, group), aid)

    def _copy_meta(self, tx: Transaction, source: str, target: str) -> None:
        s = tx.s
        prefix = f"branch:{source}:"
        plain = {}
        for key, (value, _) in list(s.meta.items()):
            if source == MAIN and key.startswith(BRANCH_SCOPED_META):
                plain[key] = value
            elif source != MAIN and key.startswith(prefix):
                plain[key[len(prefix):]] = value
        drop = BRANCH_SCOPED_META if target == MAIN else (f"branch:{target}:",)
        for key in [k for k in s.meta if k.startswith(drop)]:
            tx.pop(s.meta, key)
        now = utc_now()
        for key, value in plain.items():
            tx.set(s.meta, branch_meta_key(target, key), (value, now))

    def _copy_failures(self, tx: Transaction, source: str, target: str) -> None:
        s = tx.s
        for key in [k for k in s.failures if k[0] == target]:
            tx.pop(s.failures, key)
        for (branch, layer, group), value in list(s.failures.items()):
            if branch == source:
                tx.set(s.failures, (target, layer, group), value)

    # --- promote --------------------------------------------------------------------------

    def promote(self, source: str, *, journal: dict[str, Any] | None = None) -> dict[str, int]:
        """Main's pointers and build bookkeeping become `source`'s, in one transaction, after
        main's are saved as branch `main@previous` (see `BranchesMixin.promote`)."""
        if source == MAIN:
            raise BranchError("main cannot be promoted into itself", hint="name another branch")
        snapshot = MAIN + SNAPSHOT_SUFFIX
        now = utc_now()
        with self._write(f"promoting {source} to main") as tx:
            s = tx.s
            self._require(s, source)
            # Stage the source first: it may be the very snapshot about to be overwritten.
            staged = f"{source}/staged"
            self._copy_pointers(tx, source, staged)
            self._copy_meta(tx, source, staged)
            self._copy_failures(tx, source, staged)
            self._copy_pointers(tx, MAIN, snapshot)
            self._copy_meta(tx, MAIN, snapshot)
            self._copy_failures(tx, MAIN, snapshot)
            parent, _, info = s.branches.get(snapshot, (MAIN, "", "{}"))
            tx.set(s.branches, snapshot, (parent, now, info))
            target = set(_pointers(s, staged).values())
            before = 0
            for group, aid in list(s.main.items()):
                if aid not in target:
                    tx.set(s.artifacts, aid, replace(s.artifacts[aid], superseded_at=now))
                    tx.pop(s.main, group)
                    before += 1
            moved = 0
            for aid in target:
                row = s.artifacts[aid]
                if row.superseded_at is not None:
                    tx.set(s.artifacts, aid, replace(row, superseded_at=None))
                    tx.set(s.main, (row.layer, row.group_key), aid)
                    moved += 1
            self._copy_meta(tx, staged, MAIN)
            self._copy_failures(tx, staged, MAIN)
            self._drop(tx, staged)
            if journal is not None:
                tx.set(s.meta, "promote:pending", (json.dumps(journal), now))
        return {"retired_on_main": before, "made_current": moved}

    # --- comparing and collecting ---------------------------------------------------------

    def pointers(self, branch: str | None = None) -> dict[tuple[str, str], str]:
        """(layer, group_key) → artifact id of every current artifact of a branch."""
        with self._read("reading branch pointers") as s:
            return _pointers(s, branch or self.branch)

    def diff_branches(self, base: str, other: str) -> list[LayerDiff]:
        """Per layer, how `other`'s current artifacts differ from `base`'s."""
        return diff_pointers(self.pointers(base), self.pointers(other))

    def current_costs(self, layer: str) -> dict[str, tuple[int, int, int, float]]:
        """group_key → (llm calls, tokens in, tokens out, $) of this branch's current artifacts."""
        out = {}
        with self._read(f"reading costs of {layer}") as s:
            for (lay, group), aid in _pointers(s, self.branch).items():
                if lay != layer:
                    continue
                audit = dict(zip(AUDIT_FIELDS, s.audit[aid])) if aid in s.audit else {}
                out[group] = (int(aid in s.audit), int(audit.get("input_tokens") or 0),
                              int(audit.get("output_tokens") or 0),
                              float(audit.get("cost_usd") or 0))
        return out

    def unreferenced(self) -> list[str]:
        """Ids of artifacts no branch points at, directly or as an ancestor of what it points at."""
        with self._read("finding unreferenced artifacts") as s:
            keep = set(s.main.values()) | set(s.refs.values())
            stack = list(keep)
            while stack:
                for parent in s.edges.get(stack.pop(), ()):
                    if parent not in keep:
                        keep.add(parent)
                        stack.append(parent)
            rows = sorted((r for r in s.artifacts.values() if r.artifact_id not in keep),
                          key=lambda r: (r.layer, r.group_key, r.created_at, r.seq))
        return [r.artifact_id for r in rows]

