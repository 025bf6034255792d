"""A large whole build writes its search index in a second process (engine/background_index.py)
while Dagster records the layers: the same index, artifacts and report as a build that writes it
in the projection's step, and nothing left running. Real `run_build` (real Dagster runs, store,
index and child process); SYNIX_BACKGROUND_INDEX_MIN is lowered so the demo's 55 partitions
count as large."""
from __future__ import annotations

import os
import shutil
import sqlite3

import pytest

from synix_assets.app.run import run_build
from synix_assets.engine import background_index
from synix_assets.project import ProjectPaths
from synix_resources.store.artifact_store import ArtifactStore


def _index_rows(path) -> dict[str, list]:
    """Every row of every table of a search index (the FTS shadow tables included)."""
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name")]
        return {t: sorted(map(repr, conn.execute(f'SELECT * FROM "{t}"'))) for t in tables}
    finally:
        conn.close()


def _artifacts(paths) -> list[tuple]:
    store = ArtifactStore(paths.store)
    try:
        return sorted((a.layer, a.group_key, a.artifact_id, a.content_hash)
                      for layer in ("transcripts", "episodes", "monthly", "core")
                      for a in store.list_layer(layer))
    finally:
        store.close()


@pytest.fixture
def twin_projects(demo_project, tmp_path):
    """Two copies of the same fresh project (the same pipeline file and exports)."""
    other = tmp_path / "twin"
    shutil.copytree(demo_project.root, other, symlinks=True)
    return demo_project, ProjectPaths(other)


@pytest.fixture
def taken(monkeypatch):
    """What each projection step got from the background (None: it wrote the index itself)."""
    seen = []
    take = background_index.take

    def spy(run_id, branch, name):
        got = take(run_id, branch, name)
        seen.append((name, got))
        return got
    monkeypatch.setattr(background_index, "take", spy)
    return seen


@pytest.fixture
def started(monkeypatch):
    """The background processes started."""
    procs = []
    start = background_index.BackgroundIndex.start

    def spy(self):
        out = start(self)
        procs.append(self._proc)
        return out
    monkeypatch.setattr(background_index.BackgroundIndex, "start", spy)
    return procs


def _without_background(monkeypatch, paths):
    monkeypatch.setenv("SYNIX_BACKGROUND_INDEX_MIN", "0")  # off
    try:
        return run_build(paths)
    finally:
        monkeypatch.setenv("SYNIX_BACKGROUND_INDEX_MIN", "1")


def test_a_large_build_writes_the_same_search_index_in_the_background_as_in_its_step(
        twin_projects, monkeypatch, taken, started):
    inline, background = twin_projects
    plain = _without_background(monkeypatch, inline)
    assert not started and [w for _, w in taken] == [None]
    taken.clear()
    monkeypatch.setenv("SYNIX_BACKGROUND_INDEX_MIN", "1")
    report = run_build(background)
    # the step took what the background wrote: a whole index, reported as the step's own
    (name, written), = taken
    assert name == "memory-index" and written is not None and written.changed
    assert written.detail["added"] == written.detail["documents"] > 0
    assert report.projections == plain.projections == {"memory-index": {"changed": True},
                                                       "context": {"changed": True}}
    assert report.to_json()["layers"] == plain.to_json()["layers"]
    assert _artifacts(background) == _artifacts(inline)
    assert _index_rows(background.search) == _index_rows(inline.search)
    # the process ended with the build
    (proc,) = started
    assert proc.poll() is not None


def test_a_background_that_died_leaves_the_index_to_the_projection_step(
        twin_projects, monkeypatch, taken, started):
    inline, background = twin_projects
    _without_background(monkeypatch, inline)
    taken.clear()
    go = background_index.BackgroundIndex.go

    def die_then_go(self):
        self._proc.kill()
        self._proc.wait()
        go(self)
    monkeypatch.setattr(background_index.BackgroundIndex, "go", die_then_go)
    monkeypatch.setenv("SYNIX_BACKGROUND_INDEX_MIN", "1")
    report = run_build(background)
    assert [w for _, w in taken] == [None]  # nothing from the background: the step wrote it
    assert report.status == "completed"
    assert report.projections["memory-index"] == {"changed": True}
    assert _index_rows(background.search) == _index_rows(inline.search)


def test_a_build_below_the_setting_starts_no_background_process(demo_project, started, monkeypatch):
    monkeypatch.setenv("SYNIX_BACKGROUND_INDEX_MIN", "56")  # the demo builds 55 partitions
    report = run_build(demo_project)
    assert report.status == "completed" and not started
    assert os.path.exists(demo_project.search)
