"""Branches in the store: named sets of current-artifact pointers over one artifacts table.

main's pointers are the artifacts whose `superseded_at` is NULL (the store's original layout);
every other branch keeps its pointers in `refs(branch, layer, group_key, artifact_id)`.
Creating a branch copies pointers, never artifacts; a branch build that computes a key any
branch already built reuses that artifact (`ArtifactStore.adopt`). Promoting a branch moves
main's pointers to the branch's in one transaction, after snapshotting main's into
`main@previous`, so a promote can be undone by promoting `main@previous`.

Branch-scoped bookkeeping (the no-op fingerprint, remembered layer versions, projection keys)
lives in `meta` under a per-branch prefix; runs and failures carry a `branch` column.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from synix_resources.errors import BranchError
from synix_resources.names import MAIN, check_branch
from synix_resources.names import SNAPSHOT_SUFFIX as PREVIOUS

if TYPE_CHECKING:
    import sqlite3

# Meta keys whose value belongs to one branch's build, not to the project as a whole.
# "pipeline:": the definition `synix sync` compares with is each branch's own (a branch build must
# not make main report its steps changed)
BRANCH_SCOPED_META = ("build:", "layer:", "projection:", "pipeline:")


def _delete_meta_under(conn, prefix: str) -> None:
    # An exact prefix, not LIKE: '_' in a branch name is a LIKE wildcard (and SQLite's LIKE
    # ignores case), so deleting branch a_b would also delete the meta of a-b and A_B.
    conn.execute("DELETE FROM meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix))


def branch_meta_key(branch: str, key: str) -> str:
    if branch == MAIN or not key.startswith(BRANCH_SCOPED_META):
        return key
    return f"branch:{branch}:{key}"


@dataclass(frozen=True)
class BranchInfo:
    name: str
    parent: str | None
    created_at: str
    info: dict[str, Any]


@dataclass(frozen=True)
class LayerDiff:
    """How one layer's current artifacts differ between two branches (by group key)."""

    layer: str
    added: list[str]  # only in the other branch
    removed: list[str]  # only in this branch
    changed: list[tuple[str, str, str]]  # (group key, this branch's id, the other's id)
    shared: int


def diff_pointers(a: dict[tuple[str, str], str], b: dict[tuple[str, str], str]) -> list[LayerDiff]:
    """Per layer, how pointers `b` differ from pointers `a` ((layer, group_key) → artifact id)."""
    layers = sorted({k[0] for k in a} | {k[0] for k in b})
    out = []
    for layer in layers:
        mine = {g: i for (l, g), i in a.items() if l == layer}
        theirs = {g: i for (l, g), i in b.items() if l == layer}
        out.append(LayerDiff(
            layer, added=sorted(set(theirs) - set(mine)), removed=sorted(set(mine) - set(theirs)),
            changed=[(g, mine[g], theirs[g]) for g in sorted(set(mine) & set(theirs))
                     if mine[g] != theirs[g]],
            shared=sum(1 for g in set(mine) & set(theirs) if mine[g] == theirs[g])))
    return out


def _pointers_sql(branch: str) -> tuple[str, tuple]:
    """SQL selecting (layer, group_key, artifact_id) of a branch's current artifacts."""
    if branch == MAIN:
        return ("SELECT layer, group_key, artifact_id FROM artifacts "
                "WHERE superseded_at IS NULL", ())
    return "SELECT layer, group_key, artifact_id FROM refs WHERE branch = ?", (branch,)


class BranchesMixin:
    """Branch management; mixed into `ArtifactStore`, whose `_read`/`_write` it uses."""

    branch: str

    def on_branch(self, name: str) -> Self:
        """A view of this store that reads and moves `name`'s pointers (same connection:
        close the store you opened, not the view)."""
        check_branch(name)
        view = copy.copy(self)
        view.branch = name
        return view

    def _set_ref(self, conn: "sqlite3.Connection", layer: str, group_key: str,
                 artifact_id: str) -> None:
        conn.execute("INSERT INTO refs (branch, layer, group_key, artifact_id) VALUES "
                     "(?, ?, ?, ?) ON CONFLICT (branch, layer, group_key) DO UPDATE SET "
                     "artifact_id = excluded.artifact_id",
                     (self.branch, layer, group_key, artifact_id))

    # --- registry -----------------------------------------------------------------------

    def branches(self) -> list[BranchInfo]:
        """Every branch (main first, then by name); snapshots (`x@previous`) included."""
        with self._read("listing branches") as conn:
            rows = conn.execute("SELECT name, parent, created_at, info FROM branches "
                                "ORDER BY name").fetchall()
        out = [BranchInfo(r[0], r[1], r[2], json.loads(r[3] or "{}")) for r in rows]
        if not any(b.name == MAIN for b in out):
            out.insert(0, BranchInfo(MAIN, None, "", {}))
        return sorted(out, key=lambda b: (b.name != MAIN, b.name))

    def branch_info(self, name: str) -> BranchInfo | None:
        return next((b for b in self.branches() if b.name == name), None)

    def _require(self, conn, name: str) -> None:
        if name == MAIN:
            return
        if conn.execute("SELECT 1 FROM branches WHERE name = ?", (name,)).fetchone() is None:
            raise BranchError(f"no branch {name!r}",
                              hint="see `synix branch list`, or create it with "
                                   f"`synix branch create {name}`")

    def create_branch(self, name: str, *, from_branch: str = MAIN,
                      info: dict[str, Any] | None = None) -> BranchInfo:
        """A new branch whose pointers and branch-scoped meta are a copy of `from_branch`'s:
        instant, no artifact copied."""
        from synix_resources.store.connection import utc_now

        check_branch(name, new=True)
        now = utc_now()
        with self._write(f"creating branch {name}") as conn:
            self._require(conn, from_branch)
            if conn.execute("SELECT 1 FROM branches WHERE name = ?", (name,)).fetchone():
                raise BranchError(f"branch {name!r} already exists",
                                  hint=f"pick another name or `synix branch delete {name}`")
            conn.execute("INSERT INTO branches (name, parent, created_at, info) VALUES "
                         "(?, ?, ?, ?)", (name, from_branch, now, json.dumps(info or {})))
            self._copy_pointers(conn, from_branch, name)
            self._copy_meta(conn, from_branch, name)
            # A new branch has not been built yet, whatever its parent's state.
            conn.execute("DELETE FROM meta WHERE key = ?",
                         (branch_meta_key(name, "build:fingerprint"),))
        return BranchInfo(name, from_branch, now, info or {})

    def set_branch_info(self, name: str, info: dict[str, Any]) -> None:
        with self._write(f"updating branch {name}") as conn:
            self._require(conn, name)
            conn.execute("UPDATE branches SET info = ? WHERE name = ?", (json.dumps(info), name))

    def delete_branch(self, name: str) -> int:
        """Drop the branch's pointers, meta, failures and registry row; returns how many
        pointers went. Artifacts stay until `gc`."""
        if name == MAIN:
            raise BranchError("cannot delete main", hint="promote another branch instead")
        with self._write(f"deleting branch {name}") as conn:
            self._require_registered(conn, name)
            gone = conn.execute("DELETE FROM refs WHERE branch = ?", (name,)).rowcount
            _delete_meta_under(conn, f"branch:{name}:")
            conn.execute("DELETE FROM failures WHERE branch = ?", (name,))
            conn.execute("DELETE FROM branches WHERE name = ?", (name,))
        return gone

    def _require_registered(self, conn, name: str) -> None:
        if conn.execute("SELECT 1 FROM branches WHERE name = ?", (name,)).fetchone() is None:
            raise BranchError(f"no branch {name!r}", hint="see `synix branch list`")

    def _copy_pointers(self, conn, source: str, target: str) -> None:
        conn.execute("DELETE FROM refs WHERE branch = ?", (target,))
        sql, params = _pointers_sql(source)
        conn.execute(f"INSERT INTO refs (branch, layer, group_key, artifact_id) "
                     f"SELECT ?, layer, group_key, artifact_id FROM ({sql}) AS src",
                     (target, *params))

    def _copy_meta(self, conn, source: str, target: str) -> None:
        from synix_resources.store.connection import utc_now

        rows = conn.execute("SELECT key, value FROM meta").fetchall()
        prefix = f"branch:{source}:"
        plain = {}
        for key, value in rows:
            if source == MAIN and key.startswith(BRANCH_SCOPED_META):
                plain[key] = value
            elif source != MAIN and key.startswith(prefix):
                plain[key[len(prefix):]] = value
        if target == MAIN:
            for scoped in BRANCH_SCOPED_META:
                _delete_meta_under(conn, scoped)
        else:
            _delete_meta_under(conn, f"branch:{target}:")
        now = utc_now()
        conn.executemany("INSERT INTO meta (key, value, updated_at) VALUES (?, ?, ?) "
                         "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                         "updated_at = excluded.updated_at",
                         [(branch_meta_key(target, k), v, now) for k, v in plain.items()])

    def _copy_failures(self, conn, source: str, target: str) -> None:
        conn.execute("DELETE FROM failures WHERE branch = ?", (target,))
        conn.execute("INSERT INTO failures (branch, layer, group_key, run_id, error, recorded_at) "
                     "SELECT ?, layer, group_key, run_id, error, recorded_at FROM failures "
                     "WHERE branch = ?", (target, source))

    # --- promote --------------------------------------------------------------------------

    def promote(self, source: str, *, journal: dict[str, Any] | None = None) -> dict[str, int]:
        """Main's pointers and build bookkeeping become `source`'s, in one transaction, after
        main's are saved as branch `main@previous`. `journal` (if given) is stored in the same
        transaction under meta `promote:pending`, for the caller's file steps to finish."""
        from synix_resources.store.connection import utc_now

        if source == MAIN:
            raise BranchError("main cannot be promoted into itself", hint="name another branch")
        snapshot = MAIN + PREVIOUS
        now = utc_now()
        with self._write(f"promoting {source} to main") as conn:
            self._require(conn, source)
            # Stage the source first: it may be the very snapshot about to be overwritten.
            staged = f"{source}/staged"  # "/" is never in a branch name (NUL is no text in PG)
            self._copy_pointers(conn, source, staged)
            self._copy_meta(conn, source, staged)
            self._copy_failures(conn, source, staged)
            self._copy_pointers(conn, MAIN, snapshot)
            self._copy_meta(conn, MAIN, snapshot)
            self._copy_failures(conn, MAIN, snapshot)
            conn.execute("INSERT INTO branches (name, parent, created_at, info) VALUES "
                         "(?, ?, ?, '{}') ON CONFLICT (name) DO UPDATE SET "
                         "created_at = excluded.created_at", (snapshot, MAIN, now))
            before = conn.execute("SELECT COUNT(*) FROM artifacts WHERE superseded_at IS NULL "
                                  "AND artifact_id NOT IN (SELECT artifact_id FROM refs WHERE "
                                  "branch = ?)", (staged,)).fetchone()[0]
            conn.execute("UPDATE artifacts SET superseded_at = ? WHERE superseded_at IS NULL AND "
                         "artifact_id NOT IN (SELECT artifact_id FROM refs WHERE branch = ?)",
                         (now, staged))
            moved = conn.execute("UPDATE artifacts SET superseded_at = NULL WHERE "
                                 "superseded_at IS NOT NULL AND artifact_id IN "
                                 "(SELECT artifact_id FROM refs WHERE branch = ?)",
                                 (staged,)).rowcount
            self._copy_meta(conn, staged, MAIN)
            self._copy_failures(conn, staged, MAIN)
            conn.execute("DELETE FROM refs WHERE branch = ?", (staged,))
            _delete_meta_under(conn, f"branch:{staged}:")
            conn.execute("DELETE FROM failures WHERE branch = ?", (staged,))
            if journal is not None:
                conn.execute("INSERT INTO meta (key, value, updated_at) VALUES (?, ?, ?) "
                             "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                             "updated_at = excluded.updated_at",
                             ("promote:pending", json.dumps(journal), now))
        return {"retired_on_main": before, "made_current": moved}

    # --- comparing and collecting ---------------------------------------------------------

    def pointers(self, branch: str | None = None) -> dict[tuple[str, str], str]:
        """(layer, group_key) → artifact id of every current artifact of a branch."""
        sql, params = _pointers_sql(branch or self.branch)
        with self._read("reading branch pointers") as conn:
            return {(r[0], r[1]): r[2] for r in conn.execute(sql, params)}

    def diff_branches(self, base: str, other: str) -> list[LayerDiff]:
        """Per layer, how `other`'s current artifacts differ from `base`'s."""
        return diff_pointers(self.pointers(base), self.pointers(other))

    def current_costs(self, layer: str) -> dict[str, tuple[int, int, int, float]]:
        """group_key → (llm calls, tokens in, tokens out, $) recorded in the audit of this
        branch's current artifact of each group of `layer` (0 for mechanical steps)."""
        sql, params = _pointers_sql(self.branch)
        with self._read(f"reading costs of {layer}") as conn:
            rows = conn.execute(
                f"SELECT p.group_key, au.artifact_id IS NOT NULL, COALESCE(au.input_tokens, 0), "
                f"COALESCE(au.output_tokens, 0), COALESCE(au.cost_usd, 0) FROM ({sql}) p "
                f"LEFT JOIN audit au ON au.artifact_id = p.artifact_id WHERE p.layer = ?",
                (*params, layer)).fetchall()
        return {r[0]: (int(r[1]), int(r[2]), int(r[3]), float(r[4])) for r in rows}

    def unreferenced(self) -> list[str]:
        """Ids of artifacts no branch points at, directly or as an ancestor of what it points at."""
        with self._read("finding unreferenced artifacts") as conn:
            return [r[0] for r in conn.execute(
                """
                WITH RECURSIVE keep(id) AS (
                    SELECT artifact_id FROM artifacts WHERE superseded_at IS NULL
                    UNION SELECT artifact_id FROM refs
                    UNION SELECT e.parent_id FROM edges e JOIN keep k ON e.child_id = k.id
                )
                SELECT artifact_id FROM artifacts WHERE artifact_id NOT IN (SELECT id FROM keep)
                ORDER BY layer, group_key, created_at
                """)]
