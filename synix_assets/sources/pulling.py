"""Pulling a pipeline's `api` sources: each through the service its format names (sources/api.py
has the protocol and the pull, sources/openwebui_api.py the one service so far)."""
from __future__ import annotations

from synix_assets.sources.api import pull
from synix_assets.sources.openwebui_api import OpenWebUIService
from synix_resources.errors import PipelineDefinitionError


def api_sources(pipeline, only: str | None = None) -> list:
    """The pipeline's api sources (the one named `only`, which must be one)."""
    found = [s for s in pipeline.sources.values() if s.kind == "api" and (only is None or s.name == only)]
    if only is not None and not found:
        raise PipelineDefinitionError(f"no api source '{only}' in the pipeline",
                                      hint="name a source declared with kind=\"api\"")
    return found


def pull_pipeline(pipeline, only: str | None = None) -> dict:
    """{"sources": [what each api source's pull did]}: listed, fetched, unchanged, resumed."""
    results = []
    for src in api_sources(pipeline, only):
        service = OpenWebUIService(src.name, src.url)  # the one service kind (API_SERVICES)
        results.append(pull(src.name, service, pipeline.resolve(src.path)).to_json())
    return {"sources": results, "fetched": sum(r["fetched"] for r in results)}
