"""Dispatch by step kind: plan a layer (what is stale and why) or build it."""
from __future__ import annotations

import time

from synix_assets.engine import agent, aggregate, facts, fold, merge, procedural, transcripts, transform, window_fold
from synix_assets.engine.outcomes import LayerPlan, LayerResult, PartitionOutcome
from synix_assets.engine.upstream import remember_avg_out, remember_version
from synix_assets.sources.model import IngestResult

# Meta key of the last build that finished every layer and projection: `synix run` returns at once
# while it matches. Anything that changes a layer removes it first, so a build that stops half-way
# (a signal, a kill, a failure) can never leave it looking finished.
CLEAN_BUILD_KEY = "build:fingerprint"
# step kinds planned partition by partition against the layer's remembered version
PER_PARTITION_KINDS = frozenset({"transform", "aggregate", "window_fold", "loops", "identity"})


def is_source_merge(pipeline, layer: str) -> bool:
    step = pipeline.steps[layer]
    return step.kind == "merge" and all(u in pipeline.sources for u in step.from_)


def plan_layer(ctx, layer: str, scan: IngestResult, up: LayerPlan | None,
               keys: set[str] | None = None) -> LayerPlan:
    """The layer's plan; with `keys`, for those partitions only (nothing retired). Transcripts
    and transforms (one partition per conversation) then read only those partitions' rows."""
    step = ctx.pipeline.steps[layer]
    if is_source_merge(ctx.pipeline, layer):
        plan = transcripts.plan(ctx, layer, scan, keys)
    elif step.kind == "transform":
        plan = transform.plan(ctx, layer, up, keys)
    else:
        module = {"merge": merge, "aggregate": aggregate, "fold": fold, "agent": agent,
                  "window_fold": window_fold, "loops": procedural, "identity": procedural,
                  "facts": facts}[step.kind]
        plan = module.plan(ctx, layer, up)
        plan = plan if keys is None else plan.only(keys)
    plan.lapsed = set(up.lapsed if up else ()) | _lapsed(ctx, layer, plan, keys)
    return plan


def _lapsed(ctx, layer: str, plan: LayerPlan, keys: set[str] | None) -> set[tuple[str, str]]:
    """The layer's failure records that no longer hold. A failure belongs to a partition that
    still has to be built (stale, or blocked by a failure above): one whose partition is current
    under the current step version (a reverted prompt finds it cached) or whose input is gone
    (its export was removed) blocks nothing, or a month and the core would wait for it forever."""
    live = set(plan.stale_keys) | set(plan.blocked)
    return {(layer, f.group_key) for f in ctx.store.failures(layer=layer)
            if f.group_key not in live and (keys is None or f.group_key in keys)}


def settle_failures(ctx, scan: IngestResult, upto: str | None = None) -> None:
    """Drop the failure records that no longer hold (see `_lapsed`), those of layers the
    pipeline no longer declares included; with `upto`, of that layer and its ancestors only.
    Costs a plan only when a failure is recorded at all."""
    recorded = ctx.store.failures()
    if not recorded:
        return
    plans = plan_all(ctx, scan, upto=upto)
    lapsed = set().union(*(p.lapsed for p in plans.values()))
    if upto is None:
        lapsed |= {(f.layer, f.group_key) for f in recorded if f.layer not in ctx.pipeline.steps}
    for layer, group_key in sorted(lapsed):
        ctx.store.clear_failure(layer, group_key)


def plan_all(ctx, scan: IngestResult, upto: str | None = None,
             known: dict[str, LayerPlan] | None = None) -> dict[str, LayerPlan]:
    """Every layer's plan, propagating planned-but-unbuilt partitions downstream; with `upto`,
    only that layer's and its ancestors' (all its plan depends on). `known`: plans of layers
    that cannot have changed since they were made, used instead of planning them again."""
    plans: dict[str, LayerPlan] = {}
    needed = None if upto is None else {upto} | ctx.pipeline.upstream(upto)
    for layer in ctx.pipeline.layer_order():
        if needed is not None and layer not in needed:
            continue
        if known and layer in known:
            plans[layer] = known[layer]
            continue
        step = ctx.pipeline.steps[layer]
        ups = [plans[u] for u in step.from_ if u in plans]
        up = ups[0] if len(ups) == 1 else _union(ups)
        plans[layer] = plan_layer(ctx, layer, scan, up)
    return plans


def build_layer(ctx, layer: str, scan: IngestResult | None, keys: set[str] | None = None,
                done: dict[str, PartitionOutcome] | None = None) -> LayerResult:
    """Build the layer's stale partitions (those in `keys`, or all). `done`: outcomes partitions
    already got earlier in this build (the work graph builds some ahead of the rest): a built one
    is reported as built, not as the cached artifact it is by now."""
    started = time.monotonic()
    step = ctx.pipeline.steps[layer]
    ctx.store.delete_meta(CLEAN_BUILD_KEY)  # runs from the UI or the sensor change layers too
    if is_source_merge(ctx.pipeline, layer):
        result = transcripts.build(ctx, layer, scan if scan is not None else ctx.reader.scan(), keys)
    else:
        module = {"merge": merge, "transform": transform, "aggregate": aggregate, "fold": fold,
                  "agent": agent, "window_fold": window_fold, "loops": procedural,
                  "identity": procedural, "facts": facts}[step.kind]
        result = module.build(ctx, layer, keys)
    if done:
        merged = {o.group_key: o for o in result.outcomes}
        merged.update({k: o for k, o in done.items() if o.status in ("built", "failed")})
        result.outcomes = list(merged.values())
    # The layer's version is its step's as a whole: after a build of some partitions of a layer
    # built per partition, the others are still on the old prompt, and must go on saying so
    # ("prompt/model changed", not "upstream changed") until a whole build.
    if not result.failed and (keys is None or step.kind not in PER_PARTITION_KINDS):
        remember_version(ctx, layer)
    remember_avg_out(ctx, layer, result.outcomes)
    result.seconds = time.monotonic() - started
    return result


def _union(plans: list[LayerPlan]) -> LayerPlan | None:
    if not plans:
        return None
    out = LayerPlan("+".join(p.layer for p in plans), "merge")
    for p in plans:
        out.stale += p.stale
        out.dates.update(p.dates)
        out.titles.update(p.titles)
        out.retire += p.retire
        out.lapsed |= p.lapsed
    return out
