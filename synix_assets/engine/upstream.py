"""Small lookups shared by the layer builders: failures upstream, version changes, averages."""
from __future__ import annotations


def open_failures(ctx, upstream: str, lapsed=frozenset()) -> dict[str, list[str]]:
    """Group key → the failures ("layer/group key") open for it in `upstream` or in any layer
    it is built from. `lapsed`: (layer, group key) of failure records found no longer in force
    (LayerPlan.lapsed)."""
    layers = {upstream} | ctx.pipeline.upstream(upstream)
    found: dict[str, list[str]] = {}
    for f in ctx.store.failures():
        if f.layer in layers and (f.layer, f.group_key) not in lapsed:
            found.setdefault(f.group_key, []).append(f"{f.layer}/{f.group_key}")
    return found


def blocked_groups(ctx, upstream: str, lapsed=frozenset()) -> set[str]:
    """Partitions with an open failure in `upstream` or below. A 1:1 layer (transform, the
    per-conversation steps) has nothing to build them from: its partition waits, blocked. A
    layer over many partitions (rollup, fold, agent) builds from what is there instead and
    records the gap (`gaps`, design §10.2)."""
    return set(open_failures(ctx, upstream, lapsed))


def gaps(failing: dict[str, list[str]], up) -> dict[str, list[str]]:
    """What a layer over many partitions is built without: the open failures below it
    (`failing`, from `open_failures`) and the gaps its inputs were built with (`up.partial`).
    Group key of the input → what is missing there."""
    found = {gk: list(ms) for gk, ms in failing.items()}
    for gk, missing in (up.partial.items() if up else ()):
        found.setdefault(gk, [])
        found[gk] += [m for m in missing if m not in found[gk]]
    return found


def settled_stale(up, failing) -> set[str]:
    """The partitions of `up` still to build whose build is not a retry of a failure (`failing`):
    a retried partition may fail again, so a layer built over it plans from what is there (its
    gap is recorded) and is rebuilt only once the retry succeeds and changes its input."""
    return set(up.stale_keys) - set(failing) if up else set()


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
