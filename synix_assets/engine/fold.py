"""Fold (N:1 ordered, accumulated state), design doc §3.8.

The output is a function of the whole ordered sequence. Every `checkpoint_every` items the state
is checkpointed under the fingerprint of the prefix it summarises; a rebuild resumes from the
last checkpoint whose prefix is unchanged, so inserting month 8 of 28 reruns months 7–28 only
(with checkpoint_every=6). State larger than `max_state_tokens` is compressed by the LLM.
"""
from __future__ import annotations

from synix_assets.engine.llm_step import (apply_pii, failure_flags, call_prompt, make_request, merged_pii,
                                          pii_findings, record_of)
from synix_assets.engine.outcomes import (LayerPlan, LayerResult, PartitionOutcome, WorkItem,
                                          rebuild_reason)
from synix_assets.engine.periods import sources_until
from synix_assets.engine.upstream import (avg_out_tokens, gaps, open_failures, settled_stale,
                                          version_changed)
from synix_assets.pipeline import builtin_prompts
from synix_assets.pipeline.records import Record
from synix_resources.errors import LLMError, PromptError
from synix_resources.fingerprints import fold_key, sequence_fingerprint
from synix_resources.llm.mapreduce import estimate_tokens
from synix_resources.process import progress

GROUP = "all"
EMPTY_STATE = "(no memory yet)"


def _ordered(ctx, layer: str, arts):
    order_key = ctx.pipeline.steps[layer].config["order_key"]
    if order_key == "group_key":
        return sorted(arts, key=lambda a: a.group_key)
    return sorted(arts, key=lambda a: (str(a.metadata.get(order_key) or ""), a.group_key))


def _resume_point(ctx, layer: str, hashes: list[str]):
    """(position, state) of the latest checkpoint whose prefix still matches."""
    best = (0, None)
    for cp in ctx.store.checkpoints(layer, ctx.version(layer)):
        if cp.position <= len(hashes) and cp.prefix_fingerprint == sequence_fingerprint(hashes[:cp.position]):
            if cp.position > best[0]:
                best = (cp.position, cp.state)
    return best


def plan(ctx, layer: str, up: LayerPlan | None = None) -> LayerPlan:
    step = ctx.pipeline.steps[layer]
    version = ctx.version(layer)
    current = ctx.store.current_index(layer).get(GROUP)
    gone = set(up.retire) if up else set()
    arts = _ordered(ctx, layer, [a for a in ctx.store.list_layer(step.upstream) if a.group_key not in gone])
    out = LayerPlan(layer, "fold")
    # A failed or refused input below is a gap, not a wall (design §10.2): the fold runs over
    # what is there and records what it is without.
    failing = open_failures(ctx, step.upstream, up.lapsed if up else ())
    missing = gaps(failing, up)
    if missing:
        out.partial[GROUP] = sorted({m for ms in missing.values() for m in ms})
    per_item = (avg_out_tokens(ctx, step.upstream) or 300) + (avg_out_tokens(ctx, layer) or 400) + 250
    stale_up = settled_stale(up, failing)
    if stale_up:
        keys = sorted({a.group_key for a in arts} | stale_up)
        first = min(keys.index(k) for k in stale_up)
        start, _ = _resume_point(ctx, layer, [a.content_hash for a in arts[:first]])
        calls = len(keys) - start
        out.stale.append(WorkItem(GROUP, None, "new" if current is None else "upstream changed",
                                  est_calls=calls, est_tokens_in=calls * per_item))
        return out
    if not arts:
        return out
    hashes = [a.content_hash for a in arts]
    key = fold_key(layer, sequence_fingerprint(hashes), version)
    reason = rebuild_reason(current, key, version_changed(ctx, layer, version))
    if reason is None:
        out.cached.append(GROUP)
        return out
    start, _ = _resume_point(ctx, layer, hashes)
    out.stale.append(WorkItem(GROUP, key, reason, inputs=[a.artifact_id for a in arts],
                              est_calls=len(arts) - start, est_tokens_in=(len(arts) - start) * per_item))
    return out


class _Folder:
    """Folds items one at a time from (start, state), checkpointing every `checkpoint_every`."""

    def __init__(self, ctx, layer: str, start: int, state: str | None):
        self.ctx, self.layer = ctx, layer
        self.step = ctx.pipeline.steps[layer]
        self.start = start
        self.state = state or EMPTY_STATE
        self.version = ctx.version(layer)
        self.max_tokens = state_limit(ctx, layer)
        self.every = self.step.config["checkpoint_every"]
        self.totals = {"calls": 0, "in": 0, "out": 0, "cost": 0.0, "compressions": 0}
        self.reduced: list[dict] = []
        self.last = None
        self.hashes: list[str] = []  # of every item folded so far, from position 0

    def advance(self, pos: int, art, hashes: list[str]) -> None:
        """Fold the item at `pos` (hashes: the content hashes of items 0..pos)."""
        ctx, layer, step, state = self.ctx, self.layer, self.step, self.state
        records, _ = apply_pii(step.config.get("pii"), [record_of(art)])
        rec = records[0]
        # The state is a source too: an extractive summariser must be able to keep it.
        prior = [("state", state)] if state != EMPTY_STATE else []
        req = make_request(ctx, layer, call_prompt(step, rec, state), [rec], f"{layer}/{rec.group_key}",
                           render=_step_render(step, rec, state), extra_sources=prior, shape="memory")
        last = self.last = ctx.llm.complete(req)
        _add(self.totals, last)
        if last.map_reduce_parts:  # an input over the window was summarised in parts first
            self.reduced.append({"input": rec.artifact_id, "parts": last.map_reduce_parts,
                                 "part_prompt_hashes": list(last.part_prompt_hashes)})
        state = last.text
        max_tokens = self.max_tokens
        if estimate_tokens(state) > max_tokens:
            comp = ctx.llm.complete(make_request(
                ctx, layer, builtin_prompts.compress_state(state, max_tokens),
                [], f"{layer}/compress@{pos + 1}", extra_sources=[("state", state)], shape="memory",
                render=lambda sources, limit=max_tokens: builtin_prompts.compress_state(
                    dict(sources)["state"], limit)))
            _add(self.totals, comp)
            self.totals["compressions"] += 1
            state = comp.text
        self.state = state
        progress.finished(layer, pos + 1 - self.start)
        if (pos + 1) % self.every == 0:
            ctx.store.put_checkpoint(layer, self.version, pos + 1, sequence_fingerprint(hashes[:pos + 1]), state)

    def failed(self, err) -> PartitionOutcome:
        """The states reached so far stay checkpointed; the partition is recorded as failed."""
        t = self.totals
        self.ctx.store.record_failure(self.ctx.run_id, self.layer, GROUP, err.one_line())
        return PartitionOutcome(GROUP, "failed", error=err.one_line(),
                                llm_calls=t["calls"] + isinstance(err, LLMError),
                                tokens_in=t["in"], tokens_out=t["out"], cost_usd=t["cost"],
                                flags=failure_flags(err))

    def store(self, arts, key: str) -> PartitionOutcome:
        """Store the folded state of the whole sequence `arts` under materialization key `key`."""
        ctx, layer, start, totals, text = self.ctx, self.layer, self.start, self.totals, self.state
        if self.last is None:  # every item was covered by a checkpoint: its state is the answer
            audit = {"resumed_from": start, "llm_calls": 0, "provider": ctx.llm.provider}
        else:
            audit = self.last.audit()
            audit.update({"resumed_from": start, "llm_calls": totals["calls"],
                          "compressions": totals["compressions"], "fold_tokens_in": totals["in"],
                          "fold_tokens_out": totals["out"], "fold_cost_usd": totals["cost"]})
            if self.reduced:
                audit["reduced_inputs"] = self.reduced
        dates = [str(a.metadata.get("meta.time.created_at")) for a in arts if a.metadata.get("meta.time.created_at")]
        meta = {"meta.time.created_at": min(dates) if dates else None,
                "meta.time.last_at": max((sources_until(a.metadata) or "" for a in arts), default="") or None,
                "meta.step.sequence": len(arts), "meta.step.resumed_from": start,
                "meta.step.version_hash": self.version, "meta.custom.groups": [a.group_key for a in arts],
                "meta.step.provider": ctx.llm.provider, "meta.step.model": ctx.llm.model}
        pii_counts = merged_pii([a.metadata for a in arts])
        if pii_counts:
            meta["meta.custom.pii"] = pii_counts
        if findings := pii_findings(self.step.config.get("pii"), [record_of(a) for a in arts]):
            meta["meta.custom.pii_findings"] = findings
        art = ctx.store.put(layer=layer, group_key=GROUP, content=text, materialization_key=key,
                            level=ctx.pipeline.level(layer), metadata=meta, audit=audit,
                            parents=[a.artifact_id for a in arts], run_id=ctx.run_id)
        ctx.store.clear_failure(layer, GROUP)
        return PartitionOutcome(
            GROUP, "built", artifact_id=art.artifact_id, reason=f"resumed at item {start + 1} of {len(arts)}",
            provider=ctx.llm.provider, model=ctx.llm.model, llm_calls=totals["calls"],
            tokens_in=totals["in"], tokens_out=totals["out"], cost_usd=totals["cost"],
            input_count=len(arts), content_hash=art.content_hash, preview=text[:600],
            from_response_cache=self.last is not None and not totals["calls"])


def build(ctx, layer: str, keys: set[str] | None = None) -> LayerResult:
    p = plan(ctx, layer)
    result = LayerResult(layer, partial=p.partial)
    if not p.stale:
        result.outcomes += [PartitionOutcome(GROUP, "cached") for _ in p.cached]
        return result
    work = p.stale[0]
    arts = _ordered(ctx, layer, ctx.store.get_many(work.inputs))
    hashes = [a.content_hash for a in arts]
    start, state = _resume_point(ctx, layer, hashes)
    folder = _Folder(ctx, layer, start, state)
    try:
        for pos in range(start, len(arts)):
            folder.advance(pos, arts[pos], hashes)
    except (LLMError, PromptError) as err:
        result.outcomes.append(folder.failed(err))
        return result
    result.outcomes.append(folder.store(arts, work.key))
    return result


def has_checkpoints(ctx, layer: str) -> bool:
    return bool(ctx.store.checkpoints(layer, ctx.version(layer)))


def build_streaming(ctx, layer: str, arrivals) -> LayerResult:
    """Fold items as they arrive, before the whole sequence exists (the work graph feeds each
    month's rollup as soon as it and every earlier one are stored). Only for a fold with no
    checkpoint of its version (nothing to resume from). When the sequence that finally exists
    is the one folded, it is stored as `build` would have; otherwise (a prediction was wrong,
    an input failed) `build` runs, resuming from the checkpoints written meanwhile."""
    folder = _Folder(ctx, layer, 0, None)
    folded, hashes = [], []
    try:
        for art in arrivals:
            hashes.append(art.content_hash)
            folder.advance(len(folded), art, hashes)
            folded.append(art)
    except (LLMError, PromptError) as err:
        return LayerResult(layer, [folder.failed(err)])
    p = plan(ctx, layer)
    if not p.stale or [a.artifact_id for a in _ordered(ctx, layer, ctx.store.get_many(
            p.stale[0].inputs))] != [a.artifact_id for a in folded]:
        return build(ctx, layer)
    return LayerResult(layer, [folder.store(folded, p.stale[0].key)], partial=p.partial)


def state_limit(ctx, layer: str) -> int:
    """The state's token budget: the step's max_state_tokens, but never more than a third of
    what the model's window leaves for the prompt, so state + next input + prompt fit."""
    step = ctx.pipeline.steps[layer]
    configured = step.config["max_state_tokens"]
    settings = ctx.pipeline.llm_settings(step)
    window = ctx.llm.context_window_for(settings["model"] or ctx.llm.model)
    if not window:
        return configured
    system = settings["system"] or getattr(step.prompt, "__synix_system__", None) or ""
    room = window - settings["max_tokens"] - estimate_tokens(system)
    return max(100, min(configured, room // 3))


def _step_render(step, rec: Record, state: str):
    """Re-renders the fold prompt with summaries in place of an input or state over the window."""
    def render(sources: list[tuple[str, str]]) -> str:
        by_id = dict(sources)
        text = by_id.get(rec.artifact_id, rec.content)
        return call_prompt(step, Record(rec.artifact_id, rec.layer, rec.group_key, text, rec.metadata),
                           by_id.get("state", state))
    return render


def _add(totals: dict, response) -> None:
    totals["calls"] += 0 if response.from_cache else 1
    totals["in"] += response.input_tokens
    totals["out"] += response.output_tokens
    totals["cost"] += response.cost_usd
