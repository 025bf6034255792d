"""Fixtures for the reliability tests: small real projects (few conversations keep Dagster runs
short), raw-byte greps and SQLite integrity checks over a whole project folder."""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from synix_resources.store.artifact_store import ArtifactStore


def _make_conversations(conversation, n: int, *, prefix: str = "conv", months=("2025-01", "2025-02"),
                       marker_at: dict[int, str] | None = None) -> list[dict]:
    """n distinctive conversations spread over `months`; marker_at[i] is added to conversation i."""
    convs = []
    for i in range(n):
        day = f"{months[i % len(months)]}-{10 + i % 15:02d}"
        words = f"topic{i} {prefix} item {(marker_at or {}).get(i, '')}".strip()
        convs.append(conversation(f"{prefix}-{i}", f"Talk {i}", day, words))
    return convs


@pytest.fixture
def small_project(tmp_path, claude_export, conversation):
    """make(n=4, **kw) → a project with one Claude export of n small conversations."""
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import init_project

    def make(n: int = 4, name: str = "mem", file: str = "talks.json", **kw) -> ProjectPaths:
        paths = ProjectPaths(init_project(tmp_path / name))
        claude_export(paths.root / "exports" / file, _make_conversations(conversation, n, **kw))
        return paths

    return make


def _sqlite_files(root: Path) -> list[Path]:
    out = []
    for f in sorted(root.rglob("*")):
        if f.is_file() and not f.name.endswith(("-wal", "-shm")):
            with f.open("rb") as fh:
                if fh.read(16) == b"SQLite format 3\x00":
                    out.append(f)
    return out


_NULL_REPORT = re.compile(r"^NULL value in (\w+)\.(\w+)$")


def _integrity(root: Path) -> dict[str, str]:
    """PRAGMA integrity_check of every SQLite file under `root` (expects 'ok' everywhere).

    SQLite 3.40.x reports "NULL value in T.C" for NOT NULL columns of WITHOUT ROWID tables that
    have a secondary index even when no row is NULL (a false positive, gone in later releases;
    reproduced with one valid row in :memory:). Such a line counts as ok only when a query
    confirms the column really holds no NULL."""
    out = {}
    for f in _sqlite_files(root):
        conn = sqlite3.connect(str(f))
        try:
            lines = [r[0] for r in conn.execute("PRAGMA integrity_check")]
            real = []
            for line in lines:
                m = _NULL_REPORT.match(line)
                if m and conn.execute(f'SELECT COUNT(*) FROM "{m[1]}" WHERE "{m[2]}" IS NULL'
                                      ).fetchone()[0] == 0:
                    continue
                real.append(line)
            out[str(f.relative_to(root))] = "; ".join(real) if real else "ok"
        finally:
            conn.close()
    return out


def _files_containing(root: Path, needle: str) -> list[str]:
    """Every file under `root` whose raw bytes contain `needle` (case-insensitive)."""
    low = needle.lower().encode()
    return [str(f.relative_to(root)) for f in sorted(root.rglob("*"))
            if f.is_file() and low in f.read_bytes().lower()]


def _consistency_problems(store_path: Path) -> list[str]:
    """Half-written data: content hashes that do not match, edges to missing parents, two current
    artifacts for one (layer, group_key)."""
    from synix_resources.fingerprints import content_hash

    problems = []
    store = ArtifactStore(store_path)
    try:
        for layer in store.layers():
            for art in store.list_layer(layer, include_superseded=True):
                if content_hash(art.content) != art.content_hash:
                    problems.append(f"hash mismatch {art.artifact_id}")
        conn = sqlite3.connect(str(store_path))
        try:
            problems += [f"dangling edge {c}->{p}" for c, p in conn.execute(
                "SELECT child_id, parent_id FROM edges WHERE parent_id NOT IN "
                "(SELECT artifact_id FROM artifacts) OR child_id NOT IN (SELECT artifact_id FROM artifacts)")]
            problems += [f"{n} current for {l}/{g}" for l, g, n in conn.execute(
                "SELECT layer, group_key, COUNT(*) FROM artifacts WHERE superseded_at IS NULL "
                "GROUP BY layer, group_key HAVING COUNT(*) > 1")]
        finally:
            conn.close()
    finally:
        store.close()
    return problems


def _current_counts(store_path: Path) -> dict[str, int]:
    store = ArtifactStore(store_path)
    try:
        return {layer: v["artifacts"] for layer, v in store.layers().items()}
    finally:
        store.close()


@pytest.fixture
def integrity():
    return _integrity


@pytest.fixture
def files_containing():
    return _files_containing


@pytest.fixture
def consistency_problems():
    return _consistency_problems


@pytest.fixture
def current_counts():
    return _current_counts


@pytest.fixture
def make_conversations(conversation):
    return lambda n, **kw: _make_conversations(conversation, n, **kw)
