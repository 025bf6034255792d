"""Recorded eval runs: one small SQLite file, `<project>/.synix/eval/results.db`.

A run row holds what identifies it (benchmark, branch, pipeline version, data file hash,
settings) and its summary; one row per (question, system, mode) holds the per-question result,
so a report can be recomputed, or re-cut by category, without re-running anything. A run is
written in one transaction: a crash leaves no half-recorded run.
"""
from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from synix_resources.errors import EvalResultsError
from synix_resources.store.migrations import MigrationRegistry

RESULTS_FILE = "results.db"
# Named migrations, applied once each (synix_resources.store.migrations): never edit or reorder
# one; add the next at the end. A results file from before the registry has the tables of
# m001 already (CREATE ... IF NOT EXISTS) and gets only what came after.
MIGRATIONS = MigrationRegistry()


_M001 = (
    """CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    variant TEXT NOT NULL DEFAULT '',
    branch TEXT NOT NULL,
    pipeline_version TEXT,
    data_file TEXT NOT NULL,
    data_hash TEXT NOT NULL,
    settings TEXT NOT NULL,
    run TEXT NOT NULL,
    summary TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS questions (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    case_id TEXT NOT NULL,
    category TEXT NOT NULL,
    system TEXT NOT NULL,
    mode TEXT NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (run_id, question_id, system, mode)
)""",
)


@MIGRATIONS
def m001_runs_and_questions(db) -> None:
    for statement in _M001:
        db.execute(statement)


@MIGRATIONS
def m002_build_stamps(db) -> None:
    """The Synix builds a run measured (run ids of the scratch builds, JSON list) and their
    stores, so a number can be traced to the memory that produced it."""
    db.execute("ALTER TABLE runs ADD COLUMN build_run_ids TEXT NOT NULL DEFAULT '[]'")
    db.execute("ALTER TABLE runs ADD COLUMN stores TEXT NOT NULL DEFAULT '[]'")


def results_path(state_dir: Path) -> Path:
    return state_dir / "eval" / RESULTS_FILE


class ResultsStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(str(self.path), timeout=10)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            level, self.conn.isolation_level = self.conn.isolation_level, None  # the registry's own transactions
            MIGRATIONS.apply(self.conn)
            self.conn.isolation_level = level
        except sqlite3.DatabaseError as exc:
            raise EvalResultsError(f"eval results {self.path} cannot be opened: {exc}",
                                   hint="move the file away; the next eval starts a new one") from exc

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    def record(self, result: dict) -> int:
        run = result["run"]
        with self.conn:
            cur = self.conn.execute(
                "INSERT INTO runs(created_at, benchmark, variant, branch, pipeline_version, data_file, "
                "data_hash, settings, run, summary, build_run_ids, stores) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), run["benchmark"],
                 run.get("variant") or "", run["branch"], run.get("pipeline_version"), run["data_file"],
                 run["data_hash"], json.dumps(run["settings"]), json.dumps(run),
                 json.dumps(result["systems"]), json.dumps(run.get("build_run_ids") or []),
                 json.dumps(sorted({b["store"] for b in run.get("builds", []) if b.get("store")}))))
            run_id = int(cur.lastrowid)
            self.conn.executemany(
                "INSERT OR REPLACE INTO questions VALUES (?,?,?,?,?,?,?)",
                [(run_id, r["question_id"], r["case"], r["category"], r["system"], r["mode"], json.dumps(r))
                 for r in result["questions"]])
        return run_id

    def runs(self, benchmark: str | None = None) -> list[dict]:
        sql = ("SELECT id, created_at, benchmark, variant, branch, pipeline_version, data_hash, run, summary, "
               "build_run_ids FROM runs")
        args: list = []
        if benchmark:
            sql += " WHERE benchmark = ?"
            args.append(benchmark)
        out = []
        for row in self.conn.execute(sql + " ORDER BY id", args):
            run = json.loads(row[7])
            run.update(run_id=row[0], created_at=row[1], build_run_ids=json.loads(row[9]))
            out.append({"run": run, "systems": json.loads(row[8])})
        return out

    def latest(self, benchmark: str | None = None, branches: list[str] | None = None) -> list[dict]:
        """The newest run per (benchmark, variant, branch, data hash), oldest first."""
        newest: dict[tuple, dict] = {}
        for entry in self.runs(benchmark):
            r = entry["run"]
            if branches and r["branch"] not in branches:
                continue
            newest[(r["benchmark"], r.get("variant") or "", r["branch"], r["data_hash"])] = entry
        return sorted(newest.values(), key=lambda e: e["run"]["run_id"])

    def question_rows(self, run_id: int) -> list[dict]:
        return [json.loads(r[0]) for r in self.conn.execute(
            "SELECT result FROM questions WHERE run_id = ? ORDER BY rowid", (run_id,))]


def open_existing(path: Path) -> ResultsStore:
    if not path.is_file():
        raise EvalResultsError(f"no eval results at {path}",
                               hint="run `synix eval locomo --data FILE` (or longmemeval/synixbench) first")
    return ResultsStore(path)
