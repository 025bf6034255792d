"""The memory-ops log of one branch: an append-only SQLite file of the writes agents made
(create, update, supersede, deactivate, link), one row per op, in the order they were accepted.

It is the input the build replays into the `agent_memories` and `agent_links` layers, so the
records can always be made again from it. Durability is the live inbox's: WAL with
`synchronous=FULL` and one `BEGIN IMMEDIATE` transaction per op, so when `append` returns the op
is on disk (a kill or power cut afterwards loses nothing) and a crash before leaves nothing
half-written. The op is checked against the replayed log inside the same transaction, so two
writers can never both supersede one memory. Only forget removes rows (`drop`).
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from sqlite_utils import Database

from synix_resources.agent_memory.replay import MemoryState, replay
from synix_resources.fingerprints import canonical_json
from synix_resources.store.connection import StoreConnection, utc_now
from synix_resources.store.migrations import MigrationRegistry

OPS_MIGRATIONS = MigrationRegistry()


@OPS_MIGRATIONS
def ops001_log(db: Database) -> None:
    db.execute("""CREATE TABLE ops (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, op_id TEXT NOT NULL UNIQUE, op TEXT NOT NULL,
        recorded_at TEXT NOT NULL, body TEXT NOT NULL)""")


class MemoryLog(StoreConnection):
    """One branch's log file (`ProjectPaths.memory_log`)."""

    def __init__(self, path: str | Path, *, read_only: bool = False):
        super().__init__(path, migrations=OPS_MIGRATIONS, read_only=read_only)
        if not read_only:
            # The answer to a write promises the op is on disk: FULL syncs the WAL at every
            # commit (NORMAL could lose the last commits on a power cut).
            self._open_conn().execute("PRAGMA synchronous = FULL")

    def append(self, op: dict) -> dict:
        """Replay the log, apply `op` to it (raising MemoryOpRefused/MemoryNotFound if it does
        not fit: an unknown or retired memory…) and append it, in one durable transaction."""
        with self._write("appending a memory op") as conn:
            state = replay(self._rows(conn))
            op = {**op, "op_id": f"op-{uuid.uuid4().hex[:16]}", "recorded_at": utc_now()}
            state.apply(op)
            body = {k: v for k, v in op.items() if k not in ("op", "op_id", "recorded_at")}
            conn.execute("INSERT INTO ops (op_id, op, recorded_at, body) VALUES (?, ?, ?, ?)",
                         (op["op_id"], op["op"], op["recorded_at"], canonical_json(body)))
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
        return replay(self.ops())

    @staticmethod
    def _rows(conn) -> list[dict]:
        rows = conn.execute("SELECT op_id, op, recorded_at, body FROM ops ORDER BY seq").fetchall()
        return [{"op_id": i, "op": o, "recorded_at": r, **json.loads(b)} for i, o, r, b in rows]

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
        return len(gone)


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
