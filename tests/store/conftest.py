"""Contract fixtures: one test body, every store backend (real SQLite file, real PostgreSQL).

`store_location` is what a user configures (a file path or a `postgresql://` URL); `store` is the
`ArtifactStore` opened there. Tests of SQLite's own files (WAL, purge, read-only files) take
`sqlite_store` instead.
"""
from __future__ import annotations

import pytest

from synix_resources.store.artifact_store import ArtifactStore

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def store_location(backend, tmp_path, request):
    if backend == "sqlite":
        return str(tmp_path / "project" / ".synix" / "synix.db")
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def store(store_location):
    with ArtifactStore(store_location) as s:
        yield s


@pytest.fixture
def sqlite_store(tmp_path):
    with ArtifactStore(tmp_path / "project" / ".synix" / "synix.db") as s:
        yield s
