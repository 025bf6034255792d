"""Prototype fixes measured by `bench_build.py --patch ...`; NOT used by Synix itself.

Each fix monkeypatches one function in this process only, so the benchmark can show the
before/after of a change that belongs in the package (see docs/benchmarks.md for the change to
apply there). Select with SYNIX_BENCH_PATCH=keeper (comma-separated for several).

keeper: `synix_assets.dagster_defs.storage.keep_open` opens one idle connection per Dagster
    database so that closing a per-event connection is not the *last* close (which checkpoints
    the WAL and fsyncs). But `sqlite3.connect` alone never reads the file, so it never maps the
    WAL index (`-shm`) and does not count as a connection to the WAL: every Dagster event still
    pays a WAL re-open on commit (~4 ms) and a checkpoint + fsync on close (~5 ms). Reading once
    (`PRAGMA user_version`, fully fetched so no read transaction stays open) fixes it.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path


def _keeper() -> None:
    from synix_assets.dagster_defs import storage

    def keep_open(dagster_home: Path) -> None:
        with storage._lock:
            for path in Path(dagster_home).resolve().rglob("*.db"):
                key = str(path)
                if key not in storage._keepers:
                    conn = sqlite3.connect(key, check_same_thread=False)
                    conn.execute("PRAGMA user_version").fetchall()  # maps the WAL index
                    storage._keepers[key] = conn

    storage.keep_open = keep_open


FIXES = {"keeper": _keeper}


def apply(names: str | None = None) -> list[str]:
    names = os.environ.get("SYNIX_BENCH_PATCH", "") if names is None else names
    chosen = [n.strip() for n in names.split(",") if n.strip()]
    for name in chosen:
        FIXES[name]()
    return chosen
