"""Build bookkeeping next to the artifacts: runs, fold checkpoints, key/value meta, failures.

Kept in the same SQLite file so that an artifact and the run/failure records describing it
commit under the same lock and are backed up together.
"""
from __future__ import annotations

import json
import os
import socket
import uuid
from pathlib import Path
from typing import Any, Iterable

from synix_resources.errors import StoreError
from synix_resources.store.branches import branch_meta_key
from synix_resources.store.connection import utc_now
from synix_resources.store.records import Checkpoint, Failure, Run

RUN_STATUSES = ("running", "completed", "failed", "cancelled", "interrupted")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _start_ticks(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, Linux), or None where /proc is absent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count fields after its last ")".
    return int(stat.rsplit(")", 1)[1].split()[19])  # field 22, starttime


def this_process() -> dict[str, Any]:
    """Who runs a build: recorded with the run so a later process can tell it died."""
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "start": _start_ticks(pid)}


def process_gone(owner: dict[str, Any] | None) -> bool:
    """True only when the recorded owner process has certainly ended (its pid is free or now
    belongs to a process that started later); unknown owners and other hosts count as alive."""
    if not owner or owner.get("host") != socket.gethostname() or not owner.get("pid"):
        return False
    pid = int(owner["pid"])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's: compare start times below
        pass
    started = _start_ticks(pid)
    return owner.get("start") is not None and started is not None and started != owner["start"]


def run_from_row(row: tuple) -> Run:
    """A `Run` from (run_id, pipeline, steps, status, dagster_run_id, started_at, finished_at,
    stats, branch), steps and stats as stored (JSON text)."""
    stats = json.loads(row[7])
    owner = stats.pop("owner", None)  # kept beside the stats in the row, not one of them
    return Run(run_id=row[0], pipeline=row[1], steps=json.loads(row[2]), status=row[3],
               dagster_run_id=row[4], started_at=row[5], finished_at=row[6],
               stats=stats, owner=owner, branch=row[8])


class RunsMixin:
    """Runs, checkpoints, meta and failures; mixed into `ArtifactStore`, whose `_read` and
    `_write` transactions it uses."""

    # --- runs ---------------------------------------------------------------------------

    def start_run(self, pipeline: str, steps: Iterable[str], *, dagster_run_id: str | None = None,
                  run_id: str | None = None) -> str:
        """Record a run as running and return its id (new uuid4 hex unless given; restarting a known id resets its status).

        The calling process is recorded as the run's owner (`Run.owner`), so that a run whose
        process was killed can be told from one still going (`abandoned_runs`)."""
        run_id = run_id or uuid.uuid4().hex
        owner = this_process()
        steps_json = _dumps(list(steps))
        with self._write(f"starting run {run_id}") as conn:
            # Read, merge, write: the write lock is held, so no other writer interleaves.
            row = conn.execute("SELECT stats FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO runs (run_id, pipeline, steps, status, dagster_run_id, "
                    "started_at, finished_at, stats, branch) "
                    "VALUES (?, ?, ?, 'running', ?, ?, NULL, ?, ?)",
                    (run_id, pipeline, steps_json, dagster_run_id, utc_now(),
                     _dumps({"owner": owner}), self.branch))
            else:
                conn.execute(
                    "UPDATE runs SET pipeline = ?, steps = ?, status = 'running', "
                    "finished_at = NULL, stats = ?, "
                    "dagster_run_id = COALESCE(?, dagster_run_id) WHERE run_id = ?",
                    (pipeline, steps_json, _dumps({**json.loads(row[0]), "owner": owner}),
                     dagster_run_id, run_id))
        return run_id

    def abandoned_runs(self) -> list[Run]:
        """Runs still marked running whose owner process has ended (killed, or the machine
        restarted): nothing will ever finish them."""
        with self._read("listing running runs") as conn:
            rows = conn.execute(f"{self._RUN_COLS} WHERE status = 'running'").fetchall()
        return [run for run in map(run_from_row, rows) if process_gone(run.owner)]

    def built_in_run(self, run_id: str) -> dict[str, int]:
        """Artifacts written by this run, per layer (what an interrupted run got done)."""
        with self._read(f"counting artifacts of run {run_id}") as conn:
            rows = conn.execute("SELECT layer, COUNT(*) FROM artifacts WHERE run_id = ? "
                                "GROUP BY layer", (run_id,)).fetchall()
        return dict(rows)

    def keys_built_in_run(self, run_id: str) -> dict[str, set[str]]:
        """Group keys of the artifacts written by this run, per layer."""
        with self._read(f"listing artifacts of run {run_id}") as conn:
            rows = conn.execute("SELECT layer, group_key FROM artifacts WHERE run_id = ?",
                                (run_id,)).fetchall()
        keys: dict[str, set[str]] = {}
        for layer, group_key in rows:
            keys.setdefault(layer, set()).add(group_key)
        return keys

    def _run_stats(self, conn, run_id: str) -> dict[str, Any]:
        row = conn.execute("SELECT stats FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"No run {run_id!r} in the artifact store {self.path}",
                             hint="call start_run first")
        return json.loads(row[0])

    def finish_run(self, run_id: str, status: str, stats: dict[str, Any]) -> None:
        """Set the run's final status and finish time, merging `stats` into its stats (per-layer stats kept)."""
        if status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {', '.join(RUN_STATUSES)}, "
                             f"got {status!r}")
        with self._write(f"finishing run {run_id}") as conn:
            merged = {**self._run_stats(conn, run_id), **stats}
            conn.execute("UPDATE runs SET status = ?, finished_at = ?, stats = ? "
                         "WHERE run_id = ?", (status, utc_now(), _dumps(merged), run_id))

    def record_layer_stats(self, run_id: str, layer: str, stats: dict[str, Any]) -> None:
        """Merge `stats` into the run's `stats["layers"][layer]`."""
        with self._write(f"recording stats of {layer} for run {run_id}") as conn:
            current = self._run_stats(conn, run_id)
            current.setdefault("layers", {}).setdefault(layer, {}).update(stats)
            conn.execute("UPDATE runs SET stats = ? WHERE run_id = ?",
                         (_dumps(current), run_id))

    _RUN_COLS = ("SELECT run_id, pipeline, steps, status, dagster_run_id, started_at, "
                 "finished_at, stats, branch FROM runs")

    def get_run(self, run_id: str) -> Run | None:
        """The run with this id, or None."""
        with self._read(f"reading run {run_id}") as conn:
            row = conn.execute(f"{self._RUN_COLS} WHERE run_id = ?", (run_id,)).fetchone()
        return run_from_row(row) if row else None

    def list_runs(self, limit: int = 20) -> list[Run]:
        """The most recent runs of this store's branch, newest first (a negative limit: all;
        PostgreSQL refuses SQLite's `LIMIT -1`, so no LIMIT is written then)."""
        query = (f"{self._RUN_COLS} WHERE branch = ? ORDER BY started_at DESC, "
                 f"{self.dialect.rowid} DESC")
        args: tuple = (self.branch,) if limit < 0 else (self.branch, limit)
        with self._read("listing runs") as conn:
            rows = conn.execute(query if limit < 0 else f"{query} LIMIT ?", args).fetchall()
        return [run_from_row(r) for r in rows]

    # --- fold checkpoints ---------------------------------------------------------------

    def put_checkpoint(self, step: str, version: str, position: int, prefix_fingerprint: str,
                       state: Any) -> None:
        """Save (or replace) the fold state of `step`@`version` after `position` inputs; `state` must be JSON-serialisable."""
        with self._write(f"saving checkpoint {step}@{position}") as conn:
            conn.execute(
                "INSERT INTO checkpoints (step, version, position, prefix_fingerprint, state, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (step, version, position) "
                "DO UPDATE SET prefix_fingerprint = excluded.prefix_fingerprint, "
                "state = excluded.state, created_at = excluded.created_at",
                (step, version, int(position), prefix_fingerprint, json.dumps(state),
                 utc_now()))

    def checkpoints(self, step: str, version: str) -> list[Checkpoint]:
        """Checkpoints of `step`@`version` ordered by position."""
        with self._read(f"reading checkpoints of {step}") as conn:
            rows = conn.execute(
                "SELECT position, prefix_fingerprint, state FROM checkpoints "
                "WHERE step = ? AND version = ? ORDER BY position", (step, version)).fetchall()
        return [Checkpoint(r[0], r[1], json.loads(r[2])) for r in rows]

    def clear_checkpoints(self, step: str) -> int:
        """Delete every checkpoint of `step` (all versions) and return how many went."""
        with self._write(f"clearing checkpoints of {step}") as conn:
            return conn.execute("DELETE FROM checkpoints WHERE step = ?", (step,)).rowcount

    # --- key/value meta -----------------------------------------------------------------

    def get_meta(self, key: str, default: Any = None) -> Any:
        """The JSON value stored under `key`, or `default`."""
        with self._read(f"reading meta {key}") as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?",
                               (branch_meta_key(self.branch, key),)).fetchone()
        return json.loads(row[0]) if row else default

    def set_meta(self, key: str, value: Any) -> None:
        """Store a JSON-serialisable `value` under `key`, replacing any previous one."""
        with self._write(f"writing meta {key}") as conn:
            conn.execute("INSERT INTO meta (key, value, updated_at) VALUES (?, ?, ?) "
                         "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                         "updated_at = excluded.updated_at",
                         (branch_meta_key(self.branch, key), json.dumps(value), utc_now()))

    def delete_meta(self, key: str) -> bool:
        """Remove `key` (and its value) from the meta table; True if it was there."""
        with self._write(f"deleting meta {key}") as conn:
            return conn.execute("DELETE FROM meta WHERE key = ?",
                                (branch_meta_key(self.branch, key),)).rowcount > 0

    # --- failed partitions --------------------------------------------------------------

    def record_failure(self, run_id: str | None, layer: str, group_key: str,
                       error: str | BaseException) -> None:
        """Record that (layer, group_key) failed in this run, replacing its earlier failure."""
        with self._write(f"recording failure of {layer}/{group_key}") as conn:
            conn.execute(
                "INSERT INTO failures (branch, layer, group_key, run_id, error, recorded_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (branch, layer, group_key) DO UPDATE SET "
                "run_id = excluded.run_id, error = excluded.error, "
                "recorded_at = excluded.recorded_at",
                (self.branch, layer, group_key, run_id, str(error), utc_now()))

    def failures(self, layer: str | None = None, run_id: str | None = None) -> list[Failure]:
        """Recorded partition failures, optionally only of one layer and/or run, by layer then group."""
        sql = "SELECT run_id, layer, group_key, error, recorded_at FROM failures WHERE branch = ?"
        params: list[Any] = [self.branch]
        if layer is not None:
            sql += " AND layer = ?"
            params.append(layer)
        if run_id is not None:
            sql += " AND run_id = ?"
            params.append(run_id)
        with self._read("reading failures") as conn:
            rows = conn.execute(sql + " ORDER BY layer, group_key", params).fetchall()
        return [Failure(*r) for r in rows]

    def clear_failure(self, layer: str, group_key: str) -> bool:
        """Forget the recorded failure of (layer, group_key); True if there was one."""
        with self._write(f"clearing failure of {layer}/{group_key}") as conn:
            return conn.execute("DELETE FROM failures WHERE branch = ? AND layer = ? AND "
                                "group_key = ?", (self.branch, layer, group_key)).rowcount > 0
