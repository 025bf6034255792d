"""Aggregate (N:1 by key): period rollups (month/week/quarter) and topical rollups."""
from __future__ import annotations

from synix_assets.engine import reduction
from synix_assets.engine import topics as topic_finder
from synix_assets.engine.llm_step import (PendingCall, apply_pii, call_and_store, call_prompt,
                                          make_request, merged_pii, pii_findings, prompt_failed,
                                          record_of)
from synix_assets.engine.outcomes import (LayerPlan, LayerResult, PartitionOutcome, WorkItem,
                                          rebuild_reason)
from synix_assets.engine.periods import period_of, sources_until
from synix_assets.engine import upstream
from synix_assets.engine.upstream import avg_out_tokens, date_of, version_changed
from synix_assets.pipeline.records import Record
from synix_resources.errors import PromptError
from synix_resources.fingerprints import aggregate_key, combined_fingerprint


def _members(ctx, layer: str, upstream_arts, stale_up: set[str], up: LayerPlan | None) -> dict[str, list[str]]:
    """Group key → upstream group keys (by period or by topic search)."""
    step = ctx.pipeline.steps[layer]
    period = step.config["period"]
    if period:
        groups: dict[str, list[str]] = {}
        for art in upstream_arts:
            groups.setdefault(period_of(art.metadata.get("meta.time.created_at"), period), []).append(art.group_key)
        known = {a.group_key for a in upstream_arts}
        for gk in sorted(stale_up):
            if gk not in known:
                groups.setdefault(period_of(up.dates.get(gk), period), []).append(gk)
        return groups
    return topic_finder.memberships(ctx, layer, upstream_arts)


def plan(ctx, layer: str, up: LayerPlan | None = None) -> LayerPlan:
    step = ctx.pipeline.steps[layer]
    version = ctx.version(layer)
    current = ctx.store.current_index(layer)
    gone = set(up.retire) if up else set()
    # A period rollup plans from dates and content hashes alone: outlines (no texts) keep its
    # plan small at 10,000 inputs; topics are found by searching the inputs' texts.
    listed = ctx.store.outlines(step.upstream) if step.config["period"] else ctx.store.list_layer(step.upstream)
    arts = [a for a in listed if a.group_key not in gone]
    by_key = {a.group_key: a for a in arts}
    # A failed or refused input below is a gap, not a wall (design §10.2): each group builds from
    # the inputs that are there and records what it is built without.
    failing = upstream.open_failures(ctx, step.upstream, up.lapsed if up else ())
    missing = upstream.gaps(failing, up)
    stale_up = upstream.settled_stale(up, failing)
    out = LayerPlan(layer, "aggregate")
    if stale_up and not step.config["period"]:
        # Topic membership depends on content not built yet: every topic may change.
        names = topic_finder.topic_names(ctx, layer, arts) or sorted(current)
        for name in names:
            out.stale.append(WorkItem(name, None, "upstream changed" if name in current else "new",
                                      est_tokens_in=step.config["topic_limit"] * (avg_out_tokens(ctx, step.upstream) or 300)))
        return out
    members = _members(ctx, layer, arts, stale_up, up)
    prompt_changed = version_changed(ctx, layer, version)
    per_in = avg_out_tokens(ctx, step.upstream) or 300
    where = _gap_groups(ctx, step, missing, up)
    for group, keys in sorted(members.items()):
        if not keys:
            continue
        if group in where or "*" in where:
            out.partial[group] = sorted({m for g in (group, "*") for m in where.get(g, ())})
        est = len(keys) * per_in + 300
        if any(k in stale_up for k in keys):
            out.stale.append(WorkItem(group, None, "new" if group not in current else "upstream changed",
                                      est_tokens_in=est))
            continue
        key = aggregate_key(layer, group, combined_fingerprint(by_key[k].content_hash for k in keys), version)
        reason = rebuild_reason(current.get(group), key, prompt_changed)
        if reason is None:
            out.cached.append(group)
            continue
        out.stale.append(WorkItem(group, key, reason, inputs=[by_key[k].artifact_id for k in keys],
                                  est_tokens_in=est))
    out.retire = sorted(set(current) - set(members))
    return out


def _gap_groups(ctx, step, missing: dict[str, list[str]], up: LayerPlan | None) -> dict[str, list[str]]:
    """Group of this layer → the gaps of its inputs: by the missing input's date for a period
    rollup; for topics, where a missing input would land is unknown, so every topic ("*")."""
    if not missing:
        return {}
    if not step.config["period"]:
        return {"*": sorted({m for ms in missing.values() for m in ms})}
    where: dict[str, list[str]] = {}
    for gk, ms in missing.items():
        date = (up.dates.get(gk) if up else None) or date_of(ctx, gk)
        where.setdefault(period_of(date, step.config["period"]), []).extend(ms)
    return where


def build(ctx, layer: str, keys: set[str] | None = None) -> LayerResult:
    step = ctx.pipeline.steps[layer]
    level = ctx.pipeline.level(layer)
    p = plan(ctx, layer)
    todo = [w for w in p.stale if keys is None or w.group_key in keys]
    wanted = [i for w in todo for i in w.inputs]
    arts = {a.artifact_id: a for a in ctx.store.get_many(wanted)}
    calls, failed = [], []
    prompts = []  # (the step's prompt over any records) per call, for inputs over the window
    for w in todo:
        members = sorted((arts[i] for i in w.inputs),
                         key=lambda a: (str(a.metadata.get("meta.time.created_at") or ""), a.group_key))
        records, found = apply_pii(step.config.get("pii"), [record_of(a) for a in members])
        try:
            prompt_text = call_prompt(step, records, w.group_key)
        except PromptError as err:
            failed.append(prompt_failed(ctx, layer, w.group_key, err, len(members)))
            continue

        def render(sources, group=w.group_key, records=records):
            by_id = dict(sources)
            recs = [Record(r.artifact_id, r.layer, r.group_key, by_id.get(r.artifact_id, r.content),
                           r.metadata) for r in records]
            return call_prompt(step, recs, group)

        dates = [str(a.metadata.get("meta.time.created_at") or "") for a in members if a.metadata.get("meta.time.created_at")]
        ends = [d for d in (sources_until(a.metadata) for a in members) if d]
        meta = {"meta.time.created_at": min(dates) if dates else None,
                "meta.time.last_at": max(ends) if ends else None,
                "meta.time.period" if step.config["period"] else "meta.custom.topic": w.group_key,
                "meta.chat.conversation_count": len(members),
                "meta.step.version_hash": ctx.version(layer)}
        redacted = step.config.get("pii") == "redact"
        pii_counts = merged_pii([a.metadata for a in members], None if redacted else found)
        if pii_counts:
            meta["meta.custom.pii"] = pii_counts
        if redacted and found:
            meta["meta.custom.pii_redacted"] = found
        if findings := pii_findings(step.config.get("pii"), records):
            meta["meta.custom.pii_findings"] = findings
        calls.append(PendingCall(w.group_key, make_request(ctx, layer, prompt_text, records,
                                                           f"{layer}/{w.group_key}", render,
                                                           shape="rollup"),
                                 [a.artifact_id for a in members], meta, w.key, len(members)))
        prompts.append((records, lambda recs, group=w.group_key: call_prompt(step, recs, group)))
    calls, unfit = reduction.fit_to_window(
        ctx, layer, level, [(c, recs, prompt_of) for c, (recs, prompt_of) in zip(calls, prompts)])
    result = LayerResult(layer, failed + unfit + call_and_store(ctx, layer, level, calls))
    result.outcomes += [PartitionOutcome(g, "cached") for g in p.cached if keys is None or g in keys]
    result.partial = {g: m for g, m in p.partial.items() if keys is None or g in keys}
    if keys is None and p.retire:
        result.retired = ctx.store.retire(layer, p.retire)
        reduction.retire_parts(ctx, layer, p.retire)
    return result
