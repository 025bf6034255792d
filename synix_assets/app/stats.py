"""`synix stats`: how many records each step of a branch holds (the design's §5.2 STATUS)."""
from __future__ import annotations

from synix_assets.app.query import open_store
from synix_assets.project import ProjectPaths


def stats(paths: ProjectPaths) -> dict:
    """{"pipeline", "branch", "steps": {step: {"kind", "level", "records", "last_built"}},
    "records": total}: current records per step, in pipeline order."""
    pipeline = paths.load_pipeline()
    with open_store(paths) as store:
        stored = store.layers()
    steps = {}
    for layer in pipeline.layer_order():
        info = stored.get(layer, {})
        steps[layer] = {"kind": pipeline.steps[layer].kind, "level": pipeline.level(layer),
                        "records": info.get("artifacts", 0), "last_built": info.get("last_built")}
    return {"pipeline": pipeline.name, "branch": paths.branch, "steps": steps,
            "records": sum(s["records"] for s in steps.values())}
