"""ArtifactStoreResource inside and outside Dagster."""
from __future__ import annotations

import inspect
import os

import dagster as dg
import pytest

from synix_resources.errors import StoreError
from synix_resources.store.artifact_store import ArtifactStore
from synix_resources.store.resource import DEFAULT_STORE_PATH, ArtifactStoreResource


def test_resource_writes_through_the_store_inside_a_dagster_run(store_location, monkeypatch):
    path = store_location  # a SQLite file or a postgresql:// URL: the resource takes either
    monkeypatch.setenv("SYNIX_STORE_PATH", str(path))

    @dg.asset
    def episodes(store: ArtifactStoreResource) -> str:
        run_id = store.start_run("test", ["episodes"])
        art = store.put(layer="episodes", group_key="c1", content="hello",
                        materialization_key="k1", run_id=run_id)
        store.finish_run(run_id, "completed", {"built": 1})
        return art.artifact_id

    result = dg.materialize(
        [episodes],
        resources={"store": ArtifactStoreResource(path=dg.EnvVar("SYNIX_STORE_PATH"),
                                                  busy_timeout_ms=5000)},
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success
    artifact_id = result.output_for_node("episodes")
    if store_location.endswith(".db"):
        # teardown closed the connection: the last close checkpoints and removes the WAL file
        assert not os.path.exists(f"{path}-wal")
    with ArtifactStore(path) as s:
        art = s.get(artifact_id)
        assert art.content == "hello"
        assert s.get_run(art.run_id).stats == {"built": 1}


def test_resource_setup_and_teardown_open_and_close_the_store(store_location):
    resource = ArtifactStoreResource(path=store_location)
    context = dg.build_init_resource_context()
    resource.setup_for_execution(context)
    store = resource.get_store()
    assert isinstance(store, ArtifactStore) and resource.store is store
    resource.set_meta("cursor", 3)
    resource.teardown_after_execution(context)
    with pytest.raises(StoreError, match="closed"):
        store.layers()
    assert resource.get_meta("cursor") == 3  # reopens lazily after teardown


def test_resource_opens_lazily_and_caches_one_store_outside_dagster(tmp_path):
    resource = ArtifactStoreResource(path=str(tmp_path / "nested" / "s.db"))
    first = resource.get_store()
    assert resource.get_store() is first
    art = resource.put(layer="t", group_key="g", content="x", materialization_key="k")
    assert resource.current_index("t")["g"].artifact_id == art.artifact_id
    assert resource.layers()["t"]["artifacts"] == 1
    resource.close()
    assert resource.get_store() is not first
    resource.close()


def test_resource_delegates_carry_the_store_docs_and_signatures():
    for name in ("put", "put_many", "get", "current_index", "lineage", "leaves",
                 "start_run", "record_failure", "put_checkpoint"):
        delegate = getattr(ArtifactStoreResource, name)
        target = getattr(ArtifactStore, name)
        assert delegate.__doc__ == target.__doc__
        assert inspect.signature(delegate) == inspect.signature(target)


def test_resource_default_config():
    resource = ArtifactStoreResource()
    assert resource.path == DEFAULT_STORE_PATH == ".synix/synix.db"
    assert resource.busy_timeout_ms == 30000
