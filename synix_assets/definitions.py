"""The Dagster entry point: `defs` for the project named by SYNIX_PROJECT, else the bundled demo.

`build_defs(project_dir)` compiles a project's pipeline.py into assets (one per layer and
projection), the staleness checks, the export sensor and the resources. A project's own
`definitions.py` (written by `synix init`) calls it with its folder.
"""
from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from synix_assets.dagster_defs.assets import layer_asset, projection_asset, source_specs
from synix_assets.dagster_defs import storage
from synix_assets.dagster_defs.checks import staleness_check
from synix_assets.dagster_defs.sensors import export_sensor
from synix_assets.engine.llm_identity import llm_identity
from synix_assets.pipeline.loader import load_pipeline
from synix_assets.project import ProjectPaths
from synix_assets.scaffold import demo_exports, init_project
from synix_resources.llm.resource import LLMResource
from synix_resources.store.resource import ArtifactStoreResource

DEMO_DIR = Path(__file__).resolve().parents[1] / ".synix-demo"


def resources_for(paths: ProjectPaths) -> dict:
    return {"store": ArtifactStoreResource(path=str(paths.store)),
            "llm": LLMResource(cache_path=str(paths.llm_cache))}


def build_defs(project_dir: str | Path, *, resources: dict | None = None) -> dg.Definitions:
    paths = ProjectPaths(Path(project_dir).resolve())
    if os.environ.get("DAGSTER_HOME"):  # run workers and the UI write events here too
        storage.tune(Path(os.environ["DAGSTER_HOME"]))
    pipeline = load_pipeline(paths.pipeline_file)
    identity = llm_identity()
    assets = [*source_specs(pipeline),
              *(layer_asset(pipeline, paths, layer, identity) for layer in pipeline.layer_order()),
              *(projection_asset(pipeline, paths, name) for name in pipeline.projections)]
    checks = [staleness_check(pipeline, paths, layer) for layer in pipeline.layer_order()]
    return dg.Definitions(assets=assets, asset_checks=checks,
                          sensors=[export_sensor(pipeline, paths)],
                          resources=resources or resources_for(paths))


def _default_project() -> Path:
    if os.environ.get("SYNIX_PROJECT"):
        return Path(os.environ["SYNIX_PROJECT"]).expanduser().resolve()
    if not (DEMO_DIR / "pipeline.py").exists():
        init_project(DEMO_DIR, exports=demo_exports())
    return DEMO_DIR


defs = build_defs(_default_project())
