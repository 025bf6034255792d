"""Exact staleness in the Dagster UI: the `synix_up_to_date` check of every layer, computed from
Synix's keys and emitted by the layer's own asset after each build (so it is always evaluated).

Dagster's own stale status cannot follow a fan-in edge wider than 100 partitions and treats a
month as reading every conversation; this check reports what `synix plan` reports.
"""
from __future__ import annotations

import dagster as dg

from synix_assets.dagster_defs.partitions import partition_keys
from synix_assets.dagster_defs.vocabulary import CHECK_NAME


def _fields(ctx, layer: str, plan, scope: str = "") -> dict:
    reasons: dict[str, int] = {}
    for w in plan.stale:
        reasons[w.reason] = reasons.get(w.reason, 0) + 1
    return dict(
        check_name=CHECK_NAME, passed=not plan.stale and not plan.blocked and not plan.partial,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{layer}{scope}: {len(plan.stale)} partition(s) to rebuild, {len(plan.blocked)} blocked "
                    f"by a failed upstream partition, {len(plan.cached)} current"
                    + (f", {len(plan.partial)} built with a gap (a failed input below, retried by "
                       "the next build)." if plan.partial else "."),
        metadata={"stale": len(plan.stale), "cached": len(plan.cached),
                  "blocked": len(plan.blocked), "estimated_llm_calls": plan.est_calls,
                  **({"partial": len(plan.partial), "gaps": dg.MetadataValue.json(
                      _readable_gaps(ctx.store, dict(list(plan.partial.items())[:50])))}
                     if plan.partial else {}),
                  "reasons": dg.MetadataValue.json(reasons),
                  "stale_partitions": dg.MetadataValue.json(
                      partition_keys(ctx.store, ctx.pipeline, layer, plan.stale_keys[:50], plan))})


def _readable_gaps(store, gaps: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each missing `layer/group key` as `layer/partition`, the key the UI shows for it."""
    names = store.partition_names({m.partition("/")[2] for ms in gaps.values() for m in ms})
    return {g: [f"{m.partition('/')[0]}/{names.get(m.partition('/')[2], m.partition('/')[2])}" for m in ms]
            for g, ms in gaps.items()}


def check_result(ctx, layer: str, plan, scope: str = "") -> dg.AssetCheckResult:
    """The check as the layer's own asset emits it after a build (`ctx`: the build's context,
    whose store names the partitions); `scope` names a plan of only some partitions (a chunk of
    a distributed build)."""
    return dg.AssetCheckResult(**_fields(ctx, layer, plan, scope))


def check_evaluation(ctx, layer: str, asset_key: dg.AssetKey, plan) -> dg.AssetCheckEvaluation:
    """The same check reported by the export sensor the moment new exports change the plan."""
    return dg.AssetCheckEvaluation(asset_key=asset_key, **_fields(ctx, layer, plan))


def last_evaluation(instance, key: dg.AssetKey):
    """The latest recorded evaluation of the layer's check (an AssetCheckEvaluation), or None."""
    record = instance.get_latest_asset_check_evaluation_record(dg.AssetCheckKey(key, CHECK_NAME))
    entry = record.event if record is not None else None
    return entry.dagster_event.event_specific_data if entry is not None and entry.dagster_event else None


def report_if_changed(instance, evaluation: dg.AssetCheckEvaluation) -> bool:
    """Report `evaluation` unless the check's latest one says the same; True if reported."""
    last = last_evaluation(instance, evaluation.asset_key)
    if last is not None and (getattr(last, "passed", None), getattr(last, "description", None)) \
            == (evaluation.passed, evaluation.description):
        return False
    instance.report_runless_asset_event(evaluation)
    return True


def says_blocked(instance, key: dg.AssetKey) -> bool:
    """Whether the check's latest evaluation counts partitions blocked by a failure upstream, or
    built with a gap where one failed (design §10.2)."""
    metadata = getattr(last_evaluation(instance, key), "metadata", None) or {}
    return any(metadata.get(name) is not None and metadata[name].value for name in ("blocked", "partial"))
