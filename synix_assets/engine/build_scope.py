"""What one `synix run` covers: the layers it selects, the fingerprint of everything a whole
build's result depends on (a build whose fingerprint matches the last clean build's is a no-op),
and the layers a branch's pipeline no longer declares."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from synix_assets.engine.projections import DOC_FORMAT
from synix_assets.sources.reader import portable_name
from synix_resources.agent_memory import AGENT_LAYERS
from synix_resources.errors import PipelineDefinitionError
from synix_resources.fingerprints import canonical_json, sha256_text
from synix_resources.names import MAIN


def build_fingerprint(ctx, scan, layers: list[str]) -> str:
    """Everything a whole build's result depends on: inputs, provider, each layer's version and
    each projection's full configuration (which layers it reads, embeddings, path, budget)."""
    # the declared output path (not the branch's copy of it), so a promoted branch's build is
    # main's clean build: the same inputs and steps give the same fingerprint on every branch
    # (relative to the pipeline's folder when inside it: a copied or unpacked project is the same)
    projections = [canonical_json({**dataclasses.asdict(p),
                                   "path": portable_name(ctx.pipeline, ctx.pipeline.resolve(Path(p.path)))}
                                  if p.kind == "context_doc" else dataclasses.asdict(p))
                   for _, p in sorted(ctx.pipeline.projections.items())]
    parts = [scan.fingerprint, ctx.llm_identity, DOC_FORMAT,  # what an index document holds
             *(f"{l}:{ctx.version(l)}" for l in layers), *projections]
    return sha256_text("\n".join(parts))


def selected_layers(pipeline, select: str | None, from_layer: str | None) -> list[str]:
    order = pipeline.layer_order()
    for name in (select, from_layer):
        if name and name not in pipeline.steps:
            raise PipelineDefinitionError(f"unknown layer {name!r}", hint=f"layers: {', '.join(order)}")
    if select:
        needed = {select} | pipeline.upstream(select)
        return [l for l in order if l in needed]
    if from_layer:
        return [l for l in order if l == from_layer or l in pipeline.downstream(from_layer)]
    return order


def drop_undeclared_layers(store, pipeline) -> int:
    """A branch points only at layers its pipeline declares (one made with topical rollups does
    not keep its parent's monthly pointers); the artifacts stay for whoever else uses them."""
    if store.branch == MAIN:
        return 0
    dropped = 0
    # the agent's layers are made from the branch's memory log, not declared by its pipeline
    for layer in set(store.layers()) - set(pipeline.steps) - set(AGENT_LAYERS):
        dropped += store.retire(layer, list(store.current_index(layer)))
    return dropped
