"""Compile a project's pipeline.py into Dagster definitions.

`build_defs(project_dir)` gives one asset per layer and projection, the staleness checks, the
export sensor and the resources. A project's own `definitions.py` (written by `synix init`) calls
it with its folder; `synix run` calls it in process.
"""
from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from synix_assets.dagster_defs import storage
from synix_assets.dagster_defs.assets import layer_asset, projection_asset, source_specs
from synix_assets.dagster_defs.checks import staleness_check
from synix_assets.dagster_defs.sensors import export_sensor
from synix_assets.engine.llm_identity import llm_identity
from synix_assets.project import ProjectPaths
from synix_resources.llm.resource import LLMResource
from synix_resources.store.resource import ArtifactStoreResource


def resources_for(paths: ProjectPaths) -> dict:
    return {"store": ArtifactStoreResource(path=str(paths.store)),
            "llm": LLMResource(cache_path=str(paths.llm_cache))}


def build_defs(project_dir: str | Path, *, resources: dict | None = None) -> dg.Definitions:
    paths = ProjectPaths(Path(project_dir).resolve())
    if os.environ.get("DAGSTER_HOME"):  # run workers and the UI write events here too
        storage.tune(Path(os.environ["DAGSTER_HOME"]))
    pipeline = paths.load_pipeline()
    identity = llm_identity()
    assets = [*source_specs(pipeline),
              *(layer_asset(pipeline, paths, layer, identity) for layer in pipeline.layer_order()),
              *(projection_asset(pipeline, paths, name) for name in pipeline.projections)]
    checks = [staleness_check(pipeline, paths, layer) for layer in pipeline.layer_order()]
    return dg.Definitions(assets=assets, asset_checks=checks,
                          sensors=[export_sensor(pipeline, paths)],
                          resources=resources or resources_for(paths))
