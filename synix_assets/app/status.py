"""`synix status`: per layer what is stored, what is stale and how the last build went."""
from __future__ import annotations

from synix_assets.project import ProjectPaths

SPEND_KEYS = ("llm_calls", "tokens_in", "tokens_out", "cost_usd")


def spent_by_layer(runs) -> dict[str, dict]:
    """Per layer, the model calls, tokens and USD cost of every build of these runs (the stats
    each layer's build recorded: `LayerResult.totals()`)."""
    spent: dict[str, dict] = {}
    for run in runs:
        for layer, totals in ((run.stats or {}).get("layers") or {}).items():
            into = spent.setdefault(layer, dict.fromkeys(SPEND_KEYS, 0))
            for key in SPEND_KEYS:
                into[key] += totals.get(key, 0) or 0
    for into in spent.values():
        into["cost_usd"] = round(into["cost_usd"], 6)
    return spent


def project_status(paths: ProjectPaths, *, llm_config: dict | None = None) -> dict:
    """{"pipeline", "created_at", "branch", "provider", "layers": {layer: {...}}, "projections": {...},
    "last_run": {...}, "failures": [...], "spent": {...}}; each layer's "spent" sums the model
    calls, tokens and cost of every build of the branch so far."""
    from synix_assets.forget import pending_forget
    from synix_assets.app.plan import make_plan
    from synix_assets.orchestration.runs import settle_abandoned_runs

    plan = make_plan(paths, llm_config=llm_config)
    store = paths.open_store()
    try:
        settle_abandoned_runs(paths, store)  # a killed build's last run shows as interrupted
        stored = store.layers()
        runs = store.list_runs(limit=-1)  # newest first; all of them for what each layer cost
        failures = store.failures()
        shown = store.partition_names({f.group_key for f in failures})
    finally:
        store.close()
    forgetting = pending_forget(paths)
    last = runs[0] if runs else None
    spent = spent_by_layer(runs)
    last_layers = ((last.stats or {}).get("layers") or {}) if last else {}
    out = {"pipeline": plan.pipeline, "created_at": plan.created_at, "branch": paths.branch, "provider": f"{plan.provider}:{plan.model}", "layers": {},
           "projections": plan.projections, "sources": plan.sources,
           "last_run": {"run_id": last.run_id, "status": last.status, "started_at": last.started_at,
                        "finished_at": last.finished_at} if last else None,
           # partitions whose last build failed: not built (nor searchable) until a build retries them
           "failures": [{"layer": f.layer, "group_key": f.group_key,
                         "partition": shown.get(f.group_key, f.group_key), "error": f.error,
                         "run_id": f.run_id} for f in failures],
           # a forget that did not finish: the conversation may still be in some file
           "pending_forget": {"target": forgetting, "finish_with": "synix forget"}
           if forgetting is not None else None,
           "spent": {key: round(sum(v[key] for v in spent.values()), 6) if key == "cost_usd"
                     else sum(v[key] for v in spent.values()) for key in SPEND_KEYS}}
    for layer, est in plan.layers.items():
        info = stored.get(layer, {})
        ran = last_layers.get(layer) or {}
        built, cached, reused = ran.get("built", 0), ran.get("cached", 0), ran.get("from_response_cache", 0)
        out["layers"][layer] = {
            "level": est.level, "kind": est.kind, "artifacts": info.get("artifacts", 0),
            "stale": est.stale, "retire": est.retire, "blocked": est.blocked,
            "failed": est.failed, "partial": est.partial, "gaps": est.gaps,
            "last_built": info.get("last_built"),
            # the last build's partitions that needed no model call: records already current, and
            # records built from answers the LLM response cache served
            "last_run": {"built": built, "from_response_cache": reused, "cached": cached} if ran else None,
            "cache_hit_ratio": round((cached + reused) / (built + cached), 3) if built + cached else None,
            "spent": spent.get(layer, dict.fromkeys(SPEND_KEYS, 0))}
    return out
