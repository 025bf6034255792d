"""Merge of layers (N inputs → deduplicated, no LLM): by content or by metadata fields."""
from __future__ import annotations

from synix_assets.engine.outcomes import LayerPlan, LayerResult, PartitionOutcome, WorkItem
from synix_resources.fingerprints import combined_fingerprint, merge_key


def _groups(ctx, layer: str):
    step = ctx.pipeline.steps[layer]
    arts = [a for up in step.from_ for a in ctx.store.list_layer(up)]
    groups: dict[str, list] = {}
    for a in arts:
        if step.config["conflict"] == "keep_all":
            dk = f"{a.layer}.{a.group_key}"
        elif step.config["dedupe"] == "content":
            dk = a.content_hash
        else:
            fields = step.config["fields"]
            dk = "|".join(str(a.metadata.get(f if f.startswith("meta.") else f"meta.chat.{f}", a.group_key))
                          for f in fields)
        groups.setdefault(dk, []).append(a)
    out = {}
    for dk, items in groups.items():
        if step.config["conflict"] == "prefer_first":
            chosen = items[0]
        else:
            chosen = max(items, key=lambda a: (str(a.metadata.get("meta.time.updated_at") or
                                                   a.metadata.get("meta.time.created_at") or ""), a.created_at))
        gk = chosen.group_key if step.config["conflict"] != "keep_all" else dk
        out[gk] = (dk, chosen, items)
    return out


def plan(ctx, layer: str, up: LayerPlan | None = None) -> LayerPlan:
    current = ctx.store.current_index(layer)
    version = ctx.version(layer)
    out = LayerPlan(layer, "merge")
    for gk, (dk, chosen, items) in sorted(_groups(ctx, layer).items()):
        key = merge_key(layer, dk + combined_fingerprint(a.content_hash for a in items), version)
        if gk in current and current[gk].materialization_key == key:
            out.cached.append(gk)
        else:
            out.stale.append(WorkItem(gk, key, "new" if gk not in current else "input changed",
                                      inputs=[chosen.artifact_id], est_calls=0))
    if up is not None:
        out.stale += [WorkItem(k, None, "upstream changed", est_calls=0) for k in up.stale_keys
                      if k not in {w.group_key for w in out.stale}]
    return out


def build(ctx, layer: str, keys: set[str] | None = None) -> LayerResult:
    groups = _groups(ctx, layer)
    p = plan(ctx, layer)
    level = ctx.pipeline.level(layer)
    items = []
    for w in p.stale:
        if keys is not None and w.group_key not in keys:
            continue
        _, chosen, all_items = groups[w.group_key]
        meta = dict(chosen.metadata)
        meta["meta.custom.merged_from"] = [a.artifact_id for a in all_items]
        items.append({"layer": layer, "group_key": w.group_key, "content": chosen.content,
                      "materialization_key": w.key, "level": level, "metadata": meta,
                      "parents": [chosen.artifact_id], "run_id": ctx.run_id})
    stored = ctx.store.put_many(items) if items else []
    result = LayerResult(layer, [PartitionOutcome(a.group_key, "built", artifact_id=a.artifact_id,
                                                  content_hash=a.content_hash, preview=a.content[:600])
                                 for a in stored])
    result.outcomes += [PartitionOutcome(g, "cached") for g in p.cached if keys is None or g in keys]
    return result
