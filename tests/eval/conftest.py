"""Fixture files and projects for the eval tests (data: eval_fixtures.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_fixtures import LOCOMO_TINY, longmemeval_items

from synix_assets.app.init import init_project


@pytest.fixture
def locomo_file(tmp_path) -> Path:
    path = tmp_path / "locomo-tiny.json"
    path.write_text(json.dumps([LOCOMO_TINY]))
    return path


@pytest.fixture
def lme_files(tmp_path) -> dict[str, Path]:
    out = {}
    for shape, name in (("s", "longmemeval_s.json"), ("m", "longmemeval_m.json"),
                        ("oracle", "longmemeval_oracle.json")):
        path = tmp_path / name
        path.write_text(json.dumps(longmemeval_items(shape)))
        out[shape] = path
    return out


@pytest.fixture
def make_project(tmp_path):
    def make(name: str = "main", template: str = "monthly"):
        from synix_assets.project import ProjectPaths

        init_project(tmp_path / name, template=template)
        return ProjectPaths(tmp_path / name)
    return make
