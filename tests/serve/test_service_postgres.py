"""MemoryService over a PostgreSQL store: the same read-only snapshots and caches as on SQLite."""
from __future__ import annotations

import pytest

from synix_assets.app.memory import MemoryService
from synix_assets.app.run import run_build
from synix_assets.project import ProjectPaths
from synix_assets.app.init import demo_exports, init_project
from synix_resources.errors import StoreError
from synix_resources.store.artifact_store import ArtifactStore


@pytest.fixture
def pg_project(tmp_path, postgres_url):
    paths = ProjectPaths(init_project(tmp_path / "mem", exports=demo_exports(), store=postgres_url))
    run_build(paths)
    return paths


def test_postgres_store_is_served_read_only_one_snapshot_per_request(pg_project):
    svc = MemoryService(pg_project)
    writer = ArtifactStore(pg_project.store)
    try:
        total = svc.layer_page("episodes")["total"]
        assert total == 24
        with svc.reader() as r:
            with pytest.raises(StoreError, match="read-only"):
                r.store.put(layer="episodes", group_key="x", content="x", materialization_key="x")
        with svc.reader() as r:
            writer.put(layer="episodes", group_key="written-mid-request", content="new episode",
                       materialization_key="mid-request",
                       metadata={"meta.time.created_at": "2026-01-01"})
            assert r.store.layers()["episodes"]["artifacts"] == total  # not half-updated
            assert len(r.store.ordered_ids(["episodes"])) == total
        page = svc.layer_page("episodes")  # the next request sees the commit (cache dropped)
        assert page["total"] == total + 1
        assert page["records"][0]["group_key"] == "written-mid-request"
        core = svc.layer_page("core")["records"][0]
        assert svc.record(core["artifact_id"])["layer"] == "core"
        graph = svc.pipeline_graph()  # runs `synix status` over the PostgreSQL store
        assert {n["id"] for n in graph["nodes"]} >= {"episodes", "monthly", "core"}
    finally:
        writer.close()
        svc.close()
