"""MemoryService: read-only stores and one consistent snapshot per request while a build writes."""
from __future__ import annotations

import shutil
import sqlite3

import pytest

from synix_assets.app.memory import BadRequest, MemoryService
from synix_assets.project import ProjectPaths
from synix_resources.errors import ArtifactNotFound, StoreError
from synix_resources.store.artifact_store import ArtifactStore


@pytest.fixture
def copy(served_project, tmp_path):
    root = tmp_path / "mem"
    shutil.copytree(served_project.root, root)
    return ProjectPaths(root)


def test_a_request_reads_one_snapshot_while_a_build_commits(copy):
    svc = MemoryService(copy)
    writer = ArtifactStore(copy.store)
    try:
        with svc.reader() as r:
            before = r.store.layers()["episodes"]["artifacts"]
            total_before = len(r.store.ordered_ids(["episodes"]))
            writer.put(layer="episodes", group_key="written-mid-request", content="new episode",
                       materialization_key="mid-request", metadata={"meta.time.created_at": "2026-01-01"})
            # Same request: the committed write is not visible, so nothing is half-updated.
            assert r.store.layers()["episodes"]["artifacts"] == before
            assert len(r.store.ordered_ids(["episodes"])) == total_before
        assert svc.layer_page("episodes")["total"] == total_before + 1  # the next request sees it
        assert svc.layer_page("episodes")["records"][0]["group_key"] == "written-mid-request"
    finally:
        writer.close()
        svc.close()


def test_served_stores_refuse_writes(copy):
    svc = MemoryService(copy)
    try:
        with svc.reader() as r:
            with pytest.raises(StoreError, match="read-only"):
                r.store.put(layer="episodes", group_key="x", content="x", materialization_key="x")
            with pytest.raises(sqlite3.OperationalError):
                r.index.db.execute("DELETE FROM docs")
    finally:
        svc.close()


def test_bad_parameters_and_missing_things_are_named(copy, tmp_path):
    svc = MemoryService(copy)
    try:
        with pytest.raises(BadRequest, match="per_page"):
            svc.layer_page("episodes", per_page=1000)
        with pytest.raises(BadRequest, match="unknown filter"):
            svc.layer_page("episodes", color="red")
        with pytest.raises(ArtifactNotFound, match="branch"):
            svc.layers(branch="experiment")
        with pytest.raises(BadRequest, match="budget_tokens"):
            svc.brief("x", budget_tokens=10)
    finally:
        svc.close()
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "pipeline.py").write_text("")
    with pytest.raises(ArtifactNotFound, match="nothing has been built") as err:
        MemoryService(ProjectPaths(tmp_path / "empty"))
    assert "synix run" in err.value.one_line()
