"""Fixtures of the Dagster tests."""
from __future__ import annotations

import pytest


@pytest.fixture
def update_asset_snapshots(request) -> bool:
    """True under `pytest --update-asset-snapshots` (the option is declared in tests/conftest.py):
    the asset-graph snapshot test rewrites its JSON files instead of comparing."""
    return bool(request.config.getoption("--update-asset-snapshots"))
