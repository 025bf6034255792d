"""`synix pull` / `Pipeline.pull()`: bring the mirrors of a pipeline's `api` sources up to date
with their services (sources/api.py). The pull sensor (dagster_defs/api_sensor.py) does the same
on a schedule; the exports sensor then builds what changed, as `synix run` does after a pull."""
from __future__ import annotations

from synix_assets.project import ProjectPaths
from synix_assets.sources.pulling import pull_pipeline


def pull_sources(paths: ProjectPaths, only: str | None = None) -> dict:
    return pull_pipeline(paths.load_pipeline(), only)
