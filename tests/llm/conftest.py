"""Contract fixture for the response cache: one test body, every backend (a real SQLite file, a
real PostgreSQL schema from tests/support/postgres.py)."""
from __future__ import annotations

import pytest


@pytest.fixture(params=["sqlite", "postgres"])
def cache_location(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "llm_cache.db")
    return request.getfixturevalue("postgres_url")
