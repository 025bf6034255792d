"""Exact staleness in the Dagster UI: the `synix_up_to_date` check of every layer, computed from
Synix's keys and emitted by the layer's own asset after each build (so it is always evaluated).

Dagster's own stale status cannot follow a fan-in edge wider than 100 partitions and treats a
month as reading every conversation; this check reports what `synix plan` reports.
"""
from __future__ import annotations

import dagster as dg

CHECK_NAME = "synix_up_to_date"


def check_result(layer: str, plan) -> dg.AssetCheckResult:
    reasons: dict[str, int] = {}
    for w in plan.stale:
        reasons[w.reason] = reasons.get(w.reason, 0) + 1
    return dg.AssetCheckResult(
        check_name=CHECK_NAME, passed=not plan.stale and not plan.blocked,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{layer}: {len(plan.stale)} partition(s) to rebuild, {len(plan.blocked)} blocked "
                    f"by a failed upstream partition, {len(plan.cached)} current.",
        metadata={"stale": len(plan.stale), "cached": len(plan.cached),
                  "blocked": len(plan.blocked), "estimated_llm_calls": plan.est_calls,
                  "reasons": dg.MetadataValue.json(reasons),
                  "stale_partitions": dg.MetadataValue.json(plan.stale_keys[:50])})
