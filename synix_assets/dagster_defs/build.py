"""Compile a project's pipeline.py into Dagster definitions.

`build_defs(project_dir)` gives one asset per layer and projection (each emitting its
`synix_up_to_date` check), the export folders as observed external assets, the named jobs, the
export sensor (running by default) and the resources. A project's own `definitions.py` (written by
`synix init`) calls it with its folder; `synix run` calls it in process. When the process has a
Dagster home (DAGSTER_HOME, which a project's `.env` sets for every `dagster` command run in it),
loading the definitions also syncs that instance with the store (records.sync_instance).
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import dagster as dg

from synix_assets.dagster_defs import storage
from synix_assets.dagster_defs.assets import layer_asset, projection_asset, source_specs
from synix_assets.dagster_defs.graph import code_versions, layer_key, source_key
from synix_assets.dagster_defs.jobs import build_all_job, layer_jobs
from synix_assets.dagster_defs.records import sync_instance
from synix_assets.dagster_defs.sensors import export_sensor
from synix_assets.engine.llm_identity import llm_identity
from synix_assets.project import ProjectPaths
from synix_assets.scale.executor import executor_for, sensor_running
from synix_resources.llm.resource import LLMResource
from synix_resources.store.artifact_store import ArtifactStore
from synix_resources.store.resource import ArtifactStoreResource


def resources_for(paths: ProjectPaths, identity: str | None = None) -> dict:
    """The store and LLM resources; the LLM resource names the provider a build will really use
    (resolved from the environment now), so the UI does not show an empty provider."""
    provider = (identity or llm_identity()).split(":", 1)[0]
    return {"store": ArtifactStoreResource(path=str(paths.store)),
            "llm": LLMResource(cache_path=str(paths.llm_cache), provider=provider)}


def asset_keys_of(pipeline) -> set[dg.AssetKey]:
    return {*(source_key(s) for s in pipeline.sources), *(layer_key(l) for l in pipeline.steps),
            *(layer_key(n) for n in pipeline.projections)}


def build_defs(project_dir: str | Path, *, resources: dict | None = None,
               sync: bool = True) -> dg.Definitions:
    # Single-run backfills (one run per layer, not per partition) are a Dagster beta parameter;
    # the warning would print at every start of every Dagster process, so it is silenced here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.BetaWarning)
        warnings.simplefilter("ignore", dg.PreviewWarning)
        defs = _build_defs(project_dir, resources=resources, sync=sync)
        defs.get_repository_def()  # resolve now: binding resources copies the sensor, which warns too
        return defs


def _build_defs(project_dir, *, resources, sync) -> dg.Definitions:
    paths = ProjectPaths(Path(project_dir).resolve())
    pipeline = paths.load_pipeline()
    identity = llm_identity()
    versions = code_versions(pipeline, identity)
    keys = asset_keys_of(pipeline)
    assets = [*source_specs(pipeline),
              *(layer_asset(pipeline, paths, layer, versions, identity) for layer in pipeline.layer_order()),
              *(projection_asset(pipeline, paths, name, versions) for name in pipeline.projections)]
    build_all = build_all_job(paths)
    defs = dg.Definitions(assets=assets, jobs=[build_all, *layer_jobs(pipeline)],
                          sensors=[export_sensor(pipeline, paths, build_all, versions, keys,
                                         running=sensor_running(paths.root))],
                          resources=resources or resources_for(paths, identity),
                          executor=executor_for(paths.root))
    home = os.environ.get("DAGSTER_HOME")
    if home and Path(home).is_dir():
        storage.tune(Path(home))  # run workers and the UI write events here too
        if sync and paths.has_store():
            store = ArtifactStore(paths.store)
            try:
                sync_instance(dg.DagsterInstance.get(), pipeline, store, versions, keys)
            finally:
                store.close()
    return defs
