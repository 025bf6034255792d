"""The design's pipeline field `created_at` (000 §3.1): declared, normalised to UTC, kept through
TOML, stamped by `synix init`, shown by `synix status`, and never part of a key."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from synix_assets.app.init import demo_exports, init_project
from synix_assets.cli.main import main
from synix_assets.pipeline.api import Pipeline
from synix_assets.pipeline.loader import load_pipeline
from synix_assets.project import ProjectPaths
from synix_resources.errors import PipelineDefinitionError


def _pipeline(**kw):
    p = Pipeline("t", agent="sam", description="mine", base_dir="/tmp", **kw)
    p.source("exports", path="exports")
    p.merge("transcripts", from_=["exports"])
    return p.validate()


def test_created_at_is_normalised_to_utc_from_a_date_a_datetime_or_an_offset():
    assert _pipeline(created_at="2025-02-07").created_at == "2025-02-07T00:00:00Z"
    assert _pipeline(created_at="2025-02-07T12:30:00+02:00").created_at == "2025-02-07T10:30:00Z"
    when = datetime(2025, 2, 7, 10, 30, tzinfo=timezone(timedelta(hours=-1)))
    assert _pipeline(created_at=when).created_at == "2025-02-07T11:30:00Z"
    assert _pipeline().created_at is None


def test_created_at_that_is_not_a_date_is_one_pipeline_error_naming_the_field():
    with pytest.raises(PipelineDefinitionError) as err:
        _pipeline(created_at="last tuesday")
    assert "created_at='last tuesday'" in err.value.one_line()
    assert "2025-02-07" in err.value.one_line()


def test_created_at_changes_no_step_version():
    plain, dated = _pipeline(), _pipeline(created_at="2020-01-01")
    assert plain.version("transcripts") == dated.version("transcripts")


def test_created_at_round_trips_through_toml():
    p = _pipeline(created_at="2025-02-07T10:30:00Z")
    q = Pipeline.from_toml(p.to_toml(), base_dir="/tmp")
    assert q.created_at == "2025-02-07T10:30:00Z"
    assert q.to_toml() == p.to_toml()


def test_init_stamps_created_at_and_status_shows_it(tmp_path):
    before = datetime.now(timezone.utc).replace(microsecond=0)
    root = init_project(tmp_path / "mem", exports=demo_exports())
    stamped = load_pipeline(ProjectPaths(root).pipeline_file).created_at
    assert stamped is not None and before <= datetime.fromisoformat(stamped.replace("Z", "+00:00"))
    runner = CliRunner()
    data = json.loads(runner.invoke(main, ["-p", str(root), "status", "--json"]).output)
    assert data["created_at"] == stamped
    text = runner.invoke(main, ["-p", str(root), "status"]).output
    assert f"pipeline created {stamped}" in text
