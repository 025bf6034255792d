"""The memory-ops log of one branch: an append-only SQLite file of the writes agents made
(create, update, supersede, deactivate, link), one row per op, in the order they were accepted.

It is the input the build replays into the `agent_memories` and `agent_links` layers, so the
records can always be made again from it. Durability is the live inbox's: WAL with
`synchronous=FULL` and one `BEGIN IMMEDIATE` transaction per op, so when `append` returns the op
is on disk (a kill or power cut afterwards loses nothing) and a crash before leaves nothing
half-written. The op is checked against the replayed log inside the same transaction, so two
writers can never both supersede one memory. Only forget removes rows (`drop`).

Replay is incremental: a `MemoryLog` keeps the state it replayed and, inside each transaction,
applies only the rows appended since (by this or any other process), so a build writing n ops
through one open log replays n ops, not n²/2. The cache is thrown away and the log replayed whole
when rows were removed (`drops`, counted in `log_meta` by every `drop`, is not the cached one) or
the row it ended at is not there any more (the file was replaced).
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from synix_resources.agent_memory.replay import MemoryState
from synix_resources.errors import InvalidTime, MemoryNotFound, MemoryOpRefused
from synix_resources.fingerprints import canonical_json
from synix_resources.store.connection import StoreConnection, utc_now
from synix_resources.store.migrations import MigrationRegistry

if TYPE_CHECKING:  # sqlite_utils (and the numpy it imports) loads only when a migration runs
    from sqlite_utils import Database

OPS_MIGRATIONS = MigrationRegistry()


@OPS_MIGRATIONS
def ops001_log(db: Database) -> None:
    db.execute("""CREATE TABLE ops (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, op_id TEXT NOT NULL UNIQUE, op TEXT NOT NULL,
        recorded_at TEXT NOT NULL, body TEXT NOT NULL)""")


@OPS_MIGRATIONS
def ops002_drops(db: Database) -> None:
    # how many times rows were removed: an incremental replay is only valid while it is unchanged
    db.execute("CREATE TABLE log_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    db.execute("INSERT INTO log_meta (key, value) VALUES ('drops', 0)")


class MemoryLog(StoreConnection):
    """One branch's log file (`ProjectPaths.memory_log`)."""

    def __init__(self, path: str | Path, *, read_only: bool = False):
        super().__init__(path, migrations=OPS_MIGRATIONS, read_only=read_only)
        self._cache: _Replayed | None = None
        if not read_only:
            # The answer to a write promises the op is on disk: FULL syncs the WAL at every
            # commit (NORMAL could lose the last commits on a power cut).
            self._open_conn().execute("PRAGMA synchronous = FULL")

    def append(self, op: dict) -> dict:
        """Apply `op` to the replayed log (raising MemoryOpRefused/MemoryNotFound if it does not
        fit: an unknown or retired memory…) and append it, in one durable transaction."""
        try:
            with self._write("appending a memory op") as conn:
                replayed = self._replayed(conn)
                op = {**op, "op_id": f"op-{uuid.uuid4().hex[:16]}", "recorded_at": utc_now()}
                replayed.state.apply(op)  # checks everything before it changes anything
                body = {k: v for k, v in op.items() if k not in ("op", "op_id", "recorded_at")}
                seq = conn.execute("INSERT INTO ops (op_id, op, recorded_at, body) VALUES (?, ?, ?, ?)",
                                   (op["op_id"], op["op"], op["recorded_at"], canonical_json(body))).lastrowid
        except (MemoryOpRefused, MemoryNotFound, InvalidTime):
            raise  # refused before the state changed: the cache still holds
        except BaseException:
            self._cache = None  # the state may hold an op the rolled-back transaction does not
            raise
        self._cache = _Replayed(seq, op["op_id"], replayed.drops, replayed.state)
        return op

    def copy_to(self, path: str | Path) -> None:
        """A consistent copy of this log at `path` (SQLite's backup: a branch's first write
        starts from main's memories, as its records did)."""
        import sqlite3

        target = sqlite3.connect(str(path))
        try:
            with self._read("copying the memory log") as conn:
                conn.backup(target)
        finally:
            target.close()

    def ops(self) -> list[dict]:
        with self._read("reading the memory log") as conn:
            return self._rows(conn)

    def state(self) -> MemoryState:
        """What the log means now. The object is this log's cache: read it, do not change it
        (the next `append` or `state` may change it in place)."""
        with self.snapshot(), self._read("reading the memory log") as conn:
            return self._replayed(conn).state

    def changes(self, mark: tuple | None) -> tuple[MemoryState, set[str] | None, tuple]:
        """The state now, the memory and link ids named by the ops appended since `mark` (None:
        unknown, so everything: the first call, or rows were removed since) and the new mark."""
        with self.snapshot(), self._read("reading the memory log") as conn:  # one consistent read
            replayed = self._replayed(conn)
            named: set[str] | None = None
            if mark is not None and replayed.drops is not None and mark[1] == replayed.drops:
                named = set()
                for op in self._rows(conn, "WHERE seq > ?", (mark[0],)):
                    named |= op_ids(op)
            return replayed.state, named, (replayed.seq, replayed.drops)

    def ops_named(self, wanted: list[str]) -> list[dict]:
        """The ops with these op ids that are still in the log, in log order."""
        out: list = []
        with self._read("reading the memory log") as conn:
            for i in range(0, len(wanted), 500):
                chunk = wanted[i:i + 500]
                marks = ",".join("?" * len(chunk))
                out += self._rows(conn, f"WHERE op_id IN ({marks})", chunk, with_seq=True)
        return [op for _, op in sorted(out, key=lambda pair: pair[0])]

    def _replayed(self, conn) -> _Replayed:
        """The cached state brought up to date with the rows appended since (the whole log
        replayed when the cache is missing or no longer describes the file)."""
        drops = self._drops(conn)
        cache = self._cache
        if cache is not None and drops is not None and cache.drops == drops and (
                cache.seq == 0 or conn.execute("SELECT op_id FROM ops WHERE seq = ?",
                                               (cache.seq,)).fetchone() == (cache.op_id,)):
            state, since = cache.state, cache.seq
        else:
            self._cache = None
            state, since = MemoryState(), 0
        seq, op_id = since, cache.op_id if since else None
        try:
            for seq, op in self._rows(conn, "WHERE seq > ?", (since,), with_seq=True):
                state.apply(op)
                op_id = op["op_id"]
        except BaseException:
            self._cache = None
            raise
        replayed = _Replayed(seq, op_id, drops, state)
        self._cache = replayed if drops is not None else None
        return replayed

    @staticmethod
    def _drops(conn) -> int | None:
        """`log_meta.drops` (None in a log from before it that was opened read-only: no cache)."""
        import sqlite3

        try:
            row = conn.execute("SELECT value FROM log_meta WHERE key = 'drops'").fetchone()
        except sqlite3.OperationalError:
            return None
        return row[0] if row else None

    @staticmethod
    def _rows(conn, where: str = "", args: tuple | list = (), with_seq: bool = False) -> list:
        rows = conn.execute(f"SELECT seq, op_id, op, recorded_at, body FROM ops {where} ORDER BY seq",
                            tuple(args)).fetchall()
        ops = [(s, {"op_id": i, "op": o, "recorded_at": r, **json.loads(b)}) for s, i, o, r, b in rows]
        return ops if with_seq else [op for _, op in ops]

    def drop(self, ids: set[str]) -> int:
        """Forget: delete every op naming one of `ids` (memories or links) or a memory or link
        made from one of them. A memory superseded by a forgotten one is current again (the
        evidence for the change is gone). Returns the rows deleted."""
        return self._drop(lambda rows: (set(ids), set()), "forgetting memory ops")

    def drop_by(self, author: str) -> int:
        """Take back every op `author` wrote (an agent step rebuilt after its prompt changed):
        those ops, and, like `drop`, whatever was made from or names what they made."""
        def pick(rows):
            mine = [op for op in rows if op.get("by") == author]
            made = {m for op in mine for m in (op.get("new_id"), op.get("link_id"))
                    if m} | {op["memory_id"] for op in mine if op["op"] == "create"}
            return made, {op["op_id"] for op in mine}
        return self._drop(pick, f"taking back the memory ops of {author}")

    def _drop(self, pick, doing: str) -> int:
        with self._write(doing) as conn:
            rows = self._rows(conn)
            doomed, extra = pick(rows)
            changed = True
            while changed:  # what derives from a doomed memory goes too (not what it derives from)
                changed = False
                for op in rows:
                    made, sources = derived(op)
                    if made and made not in doomed and sources & doomed:
                        doomed.add(made)
                        changed = True
            gone = [op["op_id"] for op in rows if op_ids(op) & doomed or op["op_id"] in extra]
            conn.executemany("DELETE FROM ops WHERE op_id = ?", [(g,) for g in gone])
            if gone:  # every cached replay of this log, in any process, is out of date
                conn.execute("UPDATE log_meta SET value = value + 1 WHERE key = 'drops'")
            self._cache = None
        return len(gone)


@dataclass
class _Replayed:
    """A replayed state and where in the log it stands: the last row applied (seq, op id) and
    the `drops` count it was replayed under."""
    seq: int
    op_id: str | None
    drops: int | None
    state: MemoryState


def derived(op: dict) -> tuple[str | None, set[str]]:
    """(the id an op makes from others, those others): a superseding memory is made from the
    one it replaces, a link from its two ends."""
    if op["op"] == "supersede":
        return op["new_id"], {op["memory_id"]}
    if op["op"] == "link":
        return op["link_id"], {op["source_id"], op["target_id"]}
    return None, set()


def op_ids(op: dict) -> set[str]:
    """The memory and link ids an op names."""
    return {op[k] for k in ("memory_id", "new_id", "link_id", "source_id", "target_id") if op.get(k)}
