"""Contract fixtures: one test body, every store backend (real SQLite file, real PostgreSQL, and
the in-memory store).

`store` is an `ArtifactStore` opened on each backend in BACKENDS. `store_location` is what a
user configures (a file path or a `postgresql://` URL), for tests that reopen a store by its
location, share it with other processes or hand it to the Dagster resource: an in-memory store
has no location another object could reopen, so those run on LOCATION_BACKENDS. `sql_store`
is for tests that reach into the database itself (triggers, pragmas, row counts); tests of
SQLite's own files (WAL, purge, read-only files) take `sqlite_store`.
"""
from __future__ import annotations

import pytest

from synix_resources.store.artifact_store import ArtifactStore

BACKENDS = ["sqlite", "postgres", "memory"]
LOCATION_BACKENDS = ["sqlite", "postgres"]


def _location(backend: str, tmp_path, request) -> str:
    if backend == "sqlite":
        return str(tmp_path / "project" / ".synix" / "synix.db")
    if backend == "memory":
        return "memory:"
    return request.getfixturevalue("postgres_url")


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def store(backend, tmp_path, request):
    with ArtifactStore(_location(backend, tmp_path, request)) as s:
        yield s


@pytest.fixture(params=LOCATION_BACKENDS)
def store_location(request, tmp_path):
    return _location(request.param, tmp_path, request)


@pytest.fixture
def sql_store(store_location):
    with ArtifactStore(store_location) as s:
        yield s


@pytest.fixture
def sqlite_store(tmp_path):
    with ArtifactStore(tmp_path / "project" / ".synix" / "synix.db") as s:
        yield s
