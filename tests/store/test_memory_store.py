"""The in-memory store's own behaviour: how it is opened. What it stores and how is the contract
every backend shares (the tests taking `store` in tests/store run on it too)."""
from __future__ import annotations

import pytest

from synix_resources.errors import InvalidBranchName, StoreError
from synix_resources.store.artifact_store import ArtifactStore, MemoryArtifactStore


def test_memory_location_opens_a_new_empty_store_each_time_like_a_fresh_file():
    first = ArtifactStore("memory:")
    assert isinstance(first, MemoryArtifactStore) and first.path == "memory:"
    first.put(layer="t", group_key="g", content="x", materialization_key="k")
    with ArtifactStore("memory:", branch="main", busy_timeout_ms=10) as second:
        assert second.layers() == {}
    assert first.layers()["t"]["artifacts"] == 1
    first.close()


def test_memory_store_on_a_branch_and_a_bad_branch_name_is_refused_before_anything_opens():
    assert MemoryArtifactStore(branch="topical").branch == "topical"
    with pytest.raises(InvalidBranchName, match="'../x'"):  # as the SQL stores refuse it
        MemoryArtifactStore(branch="../x")


def test_read_only_memory_store_is_refused_as_a_missing_store_is():
    with pytest.raises(StoreError, match="There is no artifact store at memory:"):
        ArtifactStore("memory:", read_only=True)
    with pytest.raises(StoreError, match="not an in-memory store location"):
        MemoryArtifactStore("/tmp/synix.db")


def test_a_write_that_fails_inside_the_transaction_changes_nothing(monkeypatch):
    store = MemoryArtifactStore()
    before = store.put(layer="t", group_key="g", content="v1", materialization_key="k1")
    version = store.data_version()

    def boom(*args, **kwargs):
        raise RuntimeError("crash while linking")

    monkeypatch.setattr(MemoryArtifactStore, "_link", boom)
    with pytest.raises(RuntimeError, match="crash while linking"):
        store.put(layer="t", group_key="g", content="v2", materialization_key="k2")
    monkeypatch.undo()
    assert store.current("t", "g") == before
    assert [a.content for a in store.history("t", "g")] == ["v1"]
    assert store.data_version() == version
    store.put(layer="t", group_key="g", content="v2", materialization_key="k2")
    assert store.data_version() > version
