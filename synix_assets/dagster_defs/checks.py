"""Exact staleness in the Dagster UI: one asset check per layer, computed from Synix's keys.

Dagster's own staleness misses fan-in edges; this check reports what `synix plan` reports.
"""

import dagster as dg

from synix_assets.dagster_defs.assets import layer_key
from synix_assets.engine.context import BuildContext
from synix_assets.engine.layers import plan_all
from synix_resources.llm.resource import LLMResource
from synix_resources.store.resource import ArtifactStoreResource


def staleness_check(pipeline, paths, layer: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=layer_key(layer), name="synix_up_to_date", blocking=False,
                    description="Partitions whose Synix materialization key changed (what `synix plan` "
                                "would rebuild), including fan-in edges Dagster does not track.")
    def _check(store: ArtifactStoreResource, llm: LLMResource) -> dg.AssetCheckResult:
        ctx = BuildContext(pipeline, store.get_store(), llm.get_client(), paths)
        plans = plan_all(ctx, ctx.reader.scan())
        mine = plans[layer]
        reasons: dict[str, int] = {}
        for w in mine.stale:
            reasons[w.reason] = reasons.get(w.reason, 0) + 1
        return dg.AssetCheckResult(
            passed=not mine.stale and not mine.blocked,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"stale": len(mine.stale), "cached": len(mine.cached),
                      "blocked": len(mine.blocked), "estimated_llm_calls": mine.est_calls,
                      "reasons": dg.MetadataValue.json(reasons),
                      "stale_partitions": dg.MetadataValue.json(mine.stale_keys[:50])})

    return _check
