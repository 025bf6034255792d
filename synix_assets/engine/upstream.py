"""Small lookups shared by the layer builders: failures upstream, version changes, averages."""
from __future__ import annotations


def blocked_groups(ctx, upstream: str, lapsed=frozenset()) -> set[str]:
    """Partitions with an open failure in `upstream` or in any layer it is built from. Building on
    their old version would be wasted, and a rollup or fold over the others would be built from
    partial input (a failed episode blocks its month, and so the core folded over the months).
    `lapsed`: (layer, group key) of failure records found no longer in force (LayerPlan.lapsed)."""
    layers = {upstream} | ctx.pipeline.upstream(upstream)
    return {f.group_key for f in ctx.store.failures()
            if f.layer in layers and (f.layer, f.group_key) not in lapsed}


def version_changed(ctx, layer: str, version: str) -> bool:
    last = ctx.store.get_meta(f"layer:version:{layer}")
    return last is not None and last != version


def remember_version(ctx, layer: str) -> None:
    ctx.store.set_meta(f"layer:version:{layer}", ctx.version(layer))


def avg_out_tokens(ctx, layer: str, default: int | None = 300) -> int | None:
    stats = ctx.store.get_meta(f"layer:avg_tokens_out:{layer}")
    return int(stats) if stats else default


def remember_avg_out(ctx, layer: str, outcomes) -> None:
    built = [o.tokens_out for o in outcomes if o.status == "built" and o.tokens_out]
    if built:
        ctx.store.set_meta(f"layer:avg_tokens_out:{layer}", sum(built) // len(built))


def date_of(ctx, group_key: str) -> str | None:
    """The source date of a conversation partition, from the lowest layer that has it."""
    for layer in ctx.pipeline.layer_order():
        art = ctx.store.current(layer, group_key)
        if art is not None:
            return art.metadata.get("meta.time.created_at")
    return None
