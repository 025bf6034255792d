"""The tables of the in-memory store (`memory.MemoryArtifactStore`) and its transactions.

Each SQL table is a dict keyed by its primary key, holding immutable rows, so a transaction only
has to remember what it replaced: `Transaction.set`/`pop` log the previous value and `rollback`
puts every one back, leaving the state exactly as it was (the all-or-nothing of a SQL
transaction) without copying the tables.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from synix_resources.store.records import AUDIT_FIELDS

_MISSING = object()

# The column types of the audit table (SQLite's m003, PostgreSQL's p001): numbers are stored as
# the column's type, so an audit read back from any backend has the same value types.
_REAL = {"temperature", "cost_usd", "latency_s"}
_INTEGER = {"max_tokens", "input_tokens", "output_tokens", "cache_read_tokens",
            "cache_write_tokens", "attempts"}


def _as_column(name: str, value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if name in _REAL:
        return float(value)
    if name in _INTEGER and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def audit_row(row: tuple) -> tuple:
    """An audit row (AUDIT_FIELDS + extra) as the audit table would hold it."""
    return tuple(_as_column(name, value) for name, value in zip(AUDIT_FIELDS, row)) + row[len(AUDIT_FIELDS):]


@dataclass(frozen=True)
class Row:
    """One row of `artifacts`; `seq` orders rows written at the same instant (SQLite's rowid)."""

    artifact_id: str
    layer: str
    group_key: str
    level: int
    content: str
    content_hash: str
    materialization_key: str
    metadata: str  # JSON text, as stored
    run_id: str | None
    created_at: str
    superseded_at: str | None
    seq: int


@dataclass(frozen=True)
class RunRow:
    """One row of `runs`, in the column order `runs.run_from_row` reads."""

    run_id: str
    pipeline: str
    steps: str
    status: str
    dagster_run_id: str | None
    started_at: str
    finished_at: str | None
    stats: str
    branch: str
    seq: int

    def as_tuple(self) -> tuple:
        return (self.run_id, self.pipeline, self.steps, self.status, self.dagster_run_id,
                self.started_at, self.finished_at, self.stats, self.branch)


class State:
    """Every table of one store. `main` is main's current pointer per (layer, group_key): the
    artifacts whose `superseded_at` is None, kept as an index so a put does not scan."""

    def __init__(self) -> None:
        self.artifacts: dict[str, Row] = {}
        self.main: dict[tuple[str, str], str] = {}
        self.edges: dict[str, tuple[str, ...]] = {}  # child id → parent ids in position order
        self.audit: dict[str, tuple] = {}
        self.refs: dict[tuple[str, str, str], str] = {}  # (branch, layer, group_key) → id
        self.branches: dict[str, tuple[str | None, str, str]] = {}  # name → parent, created, info
        self.runs: dict[str, RunRow] = {}
        self.checkpoints: dict[tuple[str, str, int], tuple[str, str, str]] = {}
        self.meta: dict[str, tuple[str, str]] = {}  # key → (JSON value, updated_at)
        self.failures: dict[tuple[str, str, str], tuple[str | None, str, str]] = {}
        self.partition_names: dict[str, str] = {}  # group key → readable partition name
        self.seq = 0
        self.version = 0

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq


class Transaction:
    """Writes to a `State` that `rollback` undoes in reverse order."""

    def __init__(self, state: State):
        self.s = state
        self._undo: list[tuple[dict, Any, Any]] = []

    def set(self, table: dict, key: Any, value: Any) -> None:
        self._undo.append((table, key, table.get(key, _MISSING)))
        table[key] = value

    def pop(self, table: dict, key: Any) -> bool:
        """Remove `key`; True if it was there."""
        if key not in table:
            return False
        self._undo.append((table, key, table.pop(key)))
        return True

    def rollback(self) -> None:
        for table, key, old in reversed(self._undo):
            if old is _MISSING:
                table.pop(key, None)
            else:
                table[key] = old
        self._undo.clear()


class Shared:
    """What every view (`on_branch`) of one memory store shares: the state and its lock."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.state: State | None = State()
