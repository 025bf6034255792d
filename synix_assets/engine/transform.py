"""Transform (1:1): one output per input partition, e.g. transcripts → episode summaries."""
from __future__ import annotations

from synix_assets.engine.llm_step import (PendingCall, apply_pii, call_and_store, call_prompt,
                                          inherited, make_request, merged_pii, pii_findings,
                                          prompt_failed, record_of)
from synix_assets.engine.outcomes import (LayerPlan, LayerResult, PartitionOutcome, WorkItem,
                                          rebuild_reason)
from synix_assets.engine.upstream import (avg_out_tokens, blocked_groups, version_changed)
from synix_assets.pipeline.records import Record
from synix_resources.errors import PromptError
from synix_resources.fingerprints import transform_key

TRANSFORM_BATCH = 1000  # partitions whose inputs and prompts are in memory at a time


def plan(ctx, layer: str, up: LayerPlan | None = None, keys: set[str] | None = None) -> LayerPlan:
    """What to (re)build; with `keys`, only those partitions (nothing retired): a run of a few
    partitions reads their rows, not the whole layer's."""
    step = ctx.pipeline.steps[layer]
    version = ctx.version(layer)
    current = ctx.store.current_index(layer, keys)
    upstream = ctx.store.current_index(step.upstream, keys)
    stale_up = set(up.stale_keys) if up else set()
    gone_up = set(up.retire) if up else set()
    groups = (set(upstream) | stale_up) - gone_up
    if keys is not None:
        groups &= keys
    blocked = blocked_groups(ctx, step.upstream, up.lapsed if up else ())
    prompt_changed = version_changed(ctx, layer, version)
    out = LayerPlan(layer, "transform")
    est_in = avg_out_tokens(ctx, step.upstream, default=None)
    for gk in sorted(groups):
        if gk in blocked:
            out.blocked.append(gk)
            continue
        if gk in stale_up:
            item = next(w for w in up.stale if w.group_key == gk)
            out.stale.append(WorkItem(gk, None, "new" if gk not in current else "upstream changed",
                                      est_tokens_in=(est_in or item.est_tokens_in) + 250))
            out.dates[gk] = up.dates.get(gk)
            continue
        ref = upstream[gk]
        key = transform_key(layer, ref.artifact_id, version)
        reason = rebuild_reason(current.get(gk), key, prompt_changed)
        if reason is None:
            out.cached.append(gk)
            continue
        out.stale.append(WorkItem(gk, key, reason, inputs=[ref.artifact_id],
                                  est_tokens_in=(est_in or 0) + 250))
    # a partition over an input built with a gap has that gap too (design §10.2)
    out.partial = {gk: up.partial[gk] for gk in groups if up and gk in up.partial and gk not in blocked}
    # Dates of the partitions to build, so a period rollup's plan groups them into their months
    # (not one "undated" group) and plans the same partitions the build will make.
    known = [w.inputs[0] for w in out.stale if w.inputs]
    for art in ctx.store.get_many(known, outline=True) if known else ():
        out.dates[art.group_key] = art.metadata.get("meta.time.created_at")
    if keys is None:
        out.retire = sorted(set(current) - groups)
    return out


def build(ctx, layer: str, keys: set[str] | None = None) -> LayerResult:
    step = ctx.pipeline.steps[layer]
    level = ctx.pipeline.level(layer)
    p = plan(ctx, layer, keys=keys)
    # TRANSFORM_BATCH partitions at a time, earliest first: their inputs and prompts are all a
    # batch holds (not every transcript and prompt of a 10,000-conversation cold build at once),
    # and a period rollup above can start as soon as the batches of its period are stored.
    order = sorted(p.stale, key=lambda w: (str(p.dates.get(w.group_key) or ""), w.group_key))
    failed, built = [], []
    for start in range(0, len(order), TRANSFORM_BATCH):
        calls, batch_failed = _calls(ctx, layer, step, order[start:start + TRANSFORM_BATCH])
        failed += batch_failed
        built += call_and_store(ctx, layer, level, calls)
    position = {w.group_key: i for i, w in enumerate(p.stale)}  # outcomes in plan order, as before
    result = LayerResult(layer, sorted(failed, key=lambda o: position[o.group_key])
                         + sorted(built, key=lambda o: position[o.group_key]))
    result.outcomes += [PartitionOutcome(gk, "cached") for gk in p.cached if keys is None or gk in keys]
    result.outcomes += [PartitionOutcome(gk, "blocked", reason=f"upstream {step.upstream} failed")
                        for gk in p.blocked if keys is None or gk in keys]
    if keys is None and p.retire:
        result.retired = ctx.store.retire(layer, p.retire)
    return result


def _calls(ctx, layer: str, step, todo: list[WorkItem]) -> tuple[list[PendingCall], list[PartitionOutcome]]:
    """The LLM call of each work item (its input read now), and the items whose prompt failed."""
    inputs = {a.artifact_id: a for a in ctx.store.get_many([w.inputs[0] for w in todo])}
    calls, failed = [], []
    for w in todo:
        art = inputs[w.inputs[0]]
        records, found = apply_pii(step.config.get("pii"), [record_of(art)])
        rec = records[0]
        try:
            prompt_text = call_prompt(step, rec)
        except PromptError as err:
            failed.append(prompt_failed(ctx, layer, w.group_key, err))
            continue

        def render(sources, rec=rec):
            text = "\n\n".join(t for _, t in sources)
            return call_prompt(step, Record(rec.artifact_id, rec.layer, rec.group_key, text, rec.metadata))

        meta = inherited(art.metadata)
        meta["meta.step.version_hash"] = ctx.version(layer)
        redacted = step.config.get("pii") == "redact"
        pii_counts = merged_pii([art.metadata], None if redacted else found)
        if pii_counts:
            meta["meta.custom.pii"] = pii_counts
        if redacted and found:
            meta["meta.custom.pii_redacted"] = found
        if findings := pii_findings(step.config.get("pii"), records):
            meta["meta.custom.pii_findings"] = findings
        calls.append(PendingCall(w.group_key, make_request(ctx, layer, prompt_text, [rec],
                                                           f"{layer}/{w.group_key}", render),
                                 [art.artifact_id], meta, w.key, 1))
    return calls, failed
