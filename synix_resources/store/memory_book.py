"""The in-memory store's build bookkeeping: runs, fold checkpoints, meta and failures, with the
semantics of `runs.RunsMixin` (branch-scoped meta keys, runs and failures per branch)."""
from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import Any, Iterable

from synix_resources.errors import StoreError
from synix_resources.store.branches import branch_meta_key
from synix_resources.store.connection import utc_now
from synix_resources.store.memory_state import RunRow, State
from synix_resources.store.records import Checkpoint, Failure, Run
from synix_resources.store.runs import (
    RUN_STATUSES, _dumps, process_gone, run_from_row, this_process,
)


class MemoryRunBook:
    """Runs, checkpoints, meta and failures; mixed into `MemoryArtifactStore`, whose `_read`
    (the state) and `_write` (a transaction) it uses."""

    branch: str

    # --- runs ---------------------------------------------------------------------------

    def start_run(self, pipeline: str, steps: Iterable[str], *, dagster_run_id: str | None = None,
                  run_id: str | None = None) -> str:
        """Record a run as running and return its id (see `RunsMixin.start_run`)."""
        run_id = run_id or uuid.uuid4().hex
        owner = this_process()
        steps_json = _dumps(list(steps))
        with self._write(f"starting run {run_id}") as tx:
            row = tx.s.runs.get(run_id)
            if row is None:
                tx.set(tx.s.runs, run_id, RunRow(
                    run_id, pipeline, steps_json, "running", dagster_run_id, utc_now(), None,
                    _dumps({"owner": owner}), self.branch, tx.s.next_seq()))
            else:
                tx.set(tx.s.runs, run_id, replace(
                    row, pipeline=pipeline, steps=steps_json, status="running", finished_at=None,
                    stats=_dumps({**json.loads(row.stats), "owner": owner}),
                    dagster_run_id=row.dagster_run_id if dagster_run_id is None else dagster_run_id))
        return run_id

    def abandoned_runs(self) -> list[Run]:
        """Runs still marked running whose owner process has ended."""
        with self._read("listing running runs") as s:
            rows = [r.as_tuple() for r in sorted(s.runs.values(), key=lambda r: r.seq)
                    if r.status == "running"]
        return [run for run in map(run_from_row, rows) if process_gone(run.owner)]

    def built_in_run(self, run_id: str) -> dict[str, int]:
        """Artifacts written by this run, per layer."""
        counts: dict[str, int] = {}
        with self._read(f"counting artifacts of run {run_id}") as s:
            for row in s.artifacts.values():
                if row.run_id == run_id:
                    counts[row.layer] = counts.get(row.layer, 0) + 1
        return dict(sorted(counts.items()))

    def keys_built_in_run(self, run_id: str) -> dict[str, set[str]]:
        """Group keys of the artifacts written by this run, per layer."""
        keys: dict[str, set[str]] = {}
        with self._read(f"listing artifacts of run {run_id}") as s:
            for row in s.artifacts.values():
                if row.run_id == run_id:
                    keys.setdefault(row.layer, set()).add(row.group_key)
        return keys

    def _run_row(self, s: State, run_id: str) -> RunRow:
        row = s.runs.get(run_id)
        if row is None:
            raise StoreError(f"No run {run_id!r} in the artifact store {self.path}",
                             hint="call start_run first")
        return row

    def finish_run(self, run_id: str, status: str, stats: dict[str, Any]) -> None:
        """Set the run's final status and finish time, merging `stats` into its stats."""
        if status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {', '.join(RUN_STATUSES)}, "
                             f"got {status!r}")
        with self._write(f"finishing run {run_id}") as tx:
            row = self._run_row(tx.s, run_id)
            merged = {**json.loads(row.stats), **stats}
            tx.set(tx.s.runs, run_id, replace(row, status=status, finished_at=utc_now(),
                                              stats=_dumps(merged)))

    def record_layer_stats(self, run_id: str, layer: str, stats: dict[str, Any]) -> None:
        """Merge `stats` into the run's `stats["layers"][layer]`."""
        with self._write(f"recording stats of {layer} for run {run_id}") as tx:
            row = self._run_row(tx.s, run_id)
            current = json.loads(row.stats)
            current.setdefault("layers", {}).setdefault(layer, {}).update(stats)
            tx.set(tx.s.runs, run_id, replace(row, stats=_dumps(current)))

    def get_run(self, run_id: str) -> Run | None:
        """The run with this id, or None."""
        with self._read(f"reading run {run_id}") as s:
            row = s.runs.get(run_id)
        return run_from_row(row.as_tuple()) if row else None

    def list_runs(self, limit: int = 20) -> list[Run]:
        """The most recent runs of this store's branch, newest first (a negative limit: all,
        as SQLite's LIMIT reads it)."""
        with self._read("listing runs") as s:
            rows = sorted((r for r in s.runs.values() if r.branch == self.branch),
                          key=lambda r: (r.started_at, r.seq), reverse=True)
        return [run_from_row(r.as_tuple()) for r in (rows if limit < 0 else rows[:limit])]

    # --- fold checkpoints ---------------------------------------------------------------

    def put_checkpoint(self, step: str, version: str, position: int, prefix_fingerprint: str,
                       state: Any) -> None:
        """Save (or replace) the fold state of `step`@`version` after `position` inputs."""
        state_json = json.dumps(state)  # the same refusal of unserialisable state as SQL
        with self._write(f"saving checkpoint {step}@{position}") as tx:
            tx.set(tx.s.checkpoints, (step, version, int(position)),
                   (prefix_fingerprint, state_json, utc_now()))

    def checkpoints(self, step: str, version: str) -> list[Checkpoint]:
        """Checkpoints of `step`@`version` ordered by position."""
        with self._read(f"reading checkpoints of {step}") as s:
            rows = sorted((k[2], v) for k, v in s.checkpoints.items()
                          if k[0] == step and k[1] == version)
        return [Checkpoint(position, fp, json.loads(state)) for position, (fp, state, _) in rows]

    def clear_checkpoints(self, step: str) -> int:
        """Delete every checkpoint of `step` (all versions) and return how many went."""
        with self._write(f"clearing checkpoints of {step}") as tx:
            keys = [k for k in tx.s.checkpoints if k[0] == step]
            return sum(tx.pop(tx.s.checkpoints, k) for k in keys)

    # --- key/value meta -----------------------------------------------------------------

    def get_meta(self, key: str, default: Any = None) -> Any:
        """The JSON value stored under `key`, or `default`."""
        with self._read(f"reading meta {key}") as s:
            row = s.meta.get(branch_meta_key(self.branch, key))
        return json.loads(row[0]) if row else default

    def set_meta(self, key: str, value: Any) -> None:
        """Store a JSON-serialisable `value` under `key`, replacing any previous one."""
        value_json = json.dumps(value)
        with self._write(f"writing meta {key}") as tx:
            tx.set(tx.s.meta, branch_meta_key(self.branch, key), (value_json, utc_now()))

    def delete_meta(self, key: str) -> bool:
        """Remove `key` (and its value); True if it was there."""
        with self._write(f"deleting meta {key}") as tx:
            return tx.pop(tx.s.meta, branch_meta_key(self.branch, key))

    # --- failed partitions --------------------------------------------------------------

    def record_failure(self, run_id: str | None, layer: str, group_key: str,
                       error: str | BaseException) -> None:
        """Record that (layer, group_key) failed in this run, replacing its earlier failure."""
        with self._write(f"recording failure of {layer}/{group_key}") as tx:
            tx.set(tx.s.failures, (self.branch, layer, group_key), (run_id, str(error), utc_now()))

    def failures(self, layer: str | None = None, run_id: str | None = None) -> list[Failure]:
        """Recorded partition failures, optionally only of one layer and/or run."""
        with self._read("reading failures") as s:
            rows = sorted((k, v) for k, v in s.failures.items() if k[0] == self.branch
                          and (layer is None or k[1] == layer)
                          and (run_id is None or v[0] == run_id))
        return [Failure(run, lay, group, error, at) for (_, lay, group), (run, error, at) in rows]

    def clear_failure(self, layer: str, group_key: str) -> bool:
        """Forget the recorded failure of (layer, group_key); True if there was one."""
        with self._write(f"clearing failure of {layer}/{group_key}") as tx:
            return tx.pop(tx.s.failures, (self.branch, layer, group_key))
