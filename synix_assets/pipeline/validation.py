"""Load-time validation: every problem is one error naming the step."""
from __future__ import annotations

from typing import TYPE_CHECKING

from synix_resources.errors import PipelineDefinitionError

if TYPE_CHECKING:
    from synix_assets.pipeline.spec import PipelineSpec


def validate(p: "PipelineSpec") -> None:
    if not p.sources:
        raise PipelineDefinitionError(f"pipeline '{p.name}' declares no source",
                                      hint='add pipeline.source("exports", path="exports")')
    for step in p.steps.values():
        for up in step.from_:
            if up not in p.steps and up not in p.sources:
                raise PipelineDefinitionError(
                    f"step '{step.name}': from_ names '{up}', which is not a declared source or layer",
                    hint=f"declared: {', '.join(sorted([*p.sources, *p.steps]))}")
        if step.kind == "merge":
            kinds = {"source" if u in p.sources else "layer" for u in step.from_}
            if len(kinds) > 1:
                raise PipelineDefinitionError(
                    f"step '{step.name}' (merge): mixes sources and layers",
                    hint="merge sources into transcripts first, then merge layers")
            if not step.from_:
                raise PipelineDefinitionError(f"step '{step.name}' (merge): from_ is empty")
        elif step.upstream in p.sources:
            raise PipelineDefinitionError(
                f"step '{step.name}' ({step.kind}): reads source '{step.upstream}' directly",
                hint=f'add pipeline.merge("transcripts", from_=["{step.upstream}"]) and read that')
        if step.kind not in ("merge", "identity") and step.prompt is None:
            raise PipelineDefinitionError(f"step '{step.name}' ({step.kind}): prompt= is required")
    topological_order(p)
    for step in p.steps.values():
        if step.kind == "merge" and not all(u in p.sources for u in step.from_):
            parts = {p.partitioning(u) for u in step.from_}
            if len(parts) > 1:
                raise PipelineDefinitionError(
                    f"step '{step.name}' (merge): inputs are grouped differently ({', '.join(sorted(parts))})")
        if step.kind == "aggregate" and step.config["period"] and p.partitioning(step.upstream) != "conversation":
            raise PipelineDefinitionError(
                f"step '{step.name}' (aggregate): period rollups need per-conversation input, "
                f"'{step.upstream}' is grouped by {p.partitioning(step.upstream)}")
        if step.kind == "identity" and p.steps[step.upstream].kind != "loops":
            raise PipelineDefinitionError(
                f"step '{step.name}' (identity): reads '{step.upstream}', not an open_loops layer",
                hint='e.g. pipeline.identity_facts("identity", from_="loops")')
        if step.kind in ("window_fold", "loops", "facts") and p.partitioning(step.upstream) != "conversation":
            raise PipelineDefinitionError(
                f"step '{step.name}' ({step.kind}): reads the turns of transcripts, "
                f"'{step.upstream}' is grouped by {p.partitioning(step.upstream)}",
                hint='read the transcripts layer, e.g. from_="transcripts"')
    for proj in p.projections.values():
        layers = proj.from_ if isinstance(proj.from_, tuple) else (proj.from_,)
        if not layers:
            raise PipelineDefinitionError(f"projection '{proj.name}': from_ is empty")
        for layer in layers:
            if layer not in p.steps:
                raise PipelineDefinitionError(
                    f"projection '{proj.name}': from_ names '{layer}', which is not a layer",
                    hint=f"layers: {', '.join(p.steps)}")


def topological_order(p: "PipelineSpec") -> list[str]:
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = " → ".join([*path[path.index(name):], name])
            raise PipelineDefinitionError(f"step '{name}': dependency cycle {cycle}",
                                          hint="a layer cannot read from itself or its descendants")
        state[name] = 1
        for up in p.steps[name].from_:
            if up in p.steps:
                visit(up, [*path, name])
        state[name] = 2
        order.append(name)

    for name in p.steps:
        visit(name, [])
    return order
