"""Agent step (`pipeline.agent_step`): Syke's synthesis loop as a layer of the build.

The layer holds one record per evidence record the agent has read (group key = the input's, its
parent = the input; content: what the loop that read it wrote) and the map (`MAP_GROUP`, the
document the agent rewrote last; its parents are the memories held when it was written). The
memories and links themselves are the branch's memory-ops log, made into `agent_memories` /
`agent_links` records like every agent's writes, each op tagged `by: agent:<layer>` and its loop.

Incremental like a transform: an input is new evidence when the layer has no record of it
under the current step version; the new evidence is read in batches of `batch_size`, one loop
each, and nothing new means no call. A changed prompt or model (the step version) takes back
every op the step wrote and reads everything again. Forgetting a conversation removes its
evidence record, the memories citing it (forget drops their ops) and the map built on them;
the next build rewrites the map. Offline (the extractive provider) no model judges anything:
`agent_offline` writes one memory per key sentence of each record and a map by topic, and the
plan and the records say so.
"""
from __future__ import annotations

import hashlib

from synix_assets.engine import agent_offline
from synix_assets.engine.agent_loop import LoopState, Tools, run_loop
from synix_assets.engine.agent_memory import MemoryWriter
from synix_assets.engine.agent_memory.records import sync
from synix_assets.engine.llm_step import call_prompt, inherited, record_of
from synix_assets.engine.outcomes import LayerPlan, LayerResult, PartitionOutcome, WorkItem, rebuild_reason
from synix_assets.engine.upstream import gaps, open_failures, settled_stale, version_changed
from synix_assets.pipeline.prompts import prompt_identity
from synix_resources.agent_memory import MEMORY_LAYER
from synix_resources.agent_memory.log import MemoryLog
from synix_resources.errors import LLMError, PromptError
from synix_resources.fingerprints import sha256_text, transform_key
from synix_resources.process import progress

MAP_GROUP = "__map__"
NO_MAP = "(no map yet: this is the first synthesis)"


def author(layer: str) -> str:
    return f"agent:{layer}"


def offline(ctx) -> bool:
    return getattr(ctx.llm, "provider", "") == "extractive"


def plan(ctx, layer: str, up: LayerPlan | None = None) -> LayerPlan:
    step = ctx.pipeline.steps[layer]
    version = ctx.version(layer)
    current = ctx.store.current_index(layer)
    upstream = ctx.store.current_index(step.upstream)
    # A failed or refused input below is a gap, not a wall (design §10.2): the loop reads what
    # is there, and the map records what it is without.
    failing = open_failures(ctx, step.upstream, up.lapsed if up else ())
    stale_up = settled_stale(up, failing)
    groups = (set(upstream) | stale_up) - set(up.retire if up else ())
    out = LayerPlan(layer, "agent")
    if missing := gaps(failing, up):
        out.partial[MAP_GROUP] = sorted({m for ms in missing.values() for m in ms})
    changed = version_changed(ctx, layer, version)
    note = f" ({agent_offline.NOTE})" if offline(ctx) else ""
    for gk in sorted(groups):
        ref = upstream.get(gk)
        key = transform_key(layer, ref.artifact_id, version) if ref and gk not in stale_up else None
        reason = "new" if key is None else rebuild_reason(current.get(gk), key, changed)
        if reason is None:
            out.cached.append(gk)
        else:
            out.stale.append(WorkItem(gk, key, reason, inputs=[ref.artifact_id] if key else [],
                                      est_calls=0))
    loops = -(-len(out.stale) // step.config["batch_size"])
    if out.stale or MAP_GROUP not in current or changed:
        turns = 0 if offline(ctx) else max(1, min(3, step.config["max_turns"]))
        out.stale.append(WorkItem(MAP_GROUP, None, ("evidence to read" if out.stale else "map missing")
                                  + note, est_calls=turns * max(1, loops),
                                  est_tokens_in=turns * max(1, loops) * 4000))
    else:
        out.cached.append(MAP_GROUP)
    out.retire = sorted(set(current) - groups - {MAP_GROUP})
    return out


def build(ctx, layer: str, keys: set[str] | None = None) -> LayerResult:
    step = ctx.pipeline.steps[layer]
    result = LayerResult(layer)
    version = ctx.version(layer)
    if version_changed(ctx, layer, version) and ctx.paths.memory_log.is_file():
        _take_back(ctx, layer)  # a new prompt or model reads everything again, from scratch
    p = plan(ctx, layer)
    result.partial = p.partial
    result.outcomes += [PartitionOutcome(gk, "cached") for gk in p.cached]
    todo = [w for w in p.stale if w.group_key != MAP_GROUP]
    arts = {a.artifact_id: a for a in ctx.store.get_many([w.inputs[0] for w in todo])} if todo else {}
    todo.sort(key=lambda w: (str(arts[w.inputs[0]].metadata.get("meta.time.created_at") or ""), w.group_key))
    current_map = ctx.store.current(layer, MAP_GROUP)
    state = LoopState(current_map.content if current_map is not None else NO_MAP)
    size = step.config["batch_size"]
    batches = [todo[i:i + size] for i in range(0, len(todo), size)] or ([[]] if any(
        w.group_key == MAP_GROUP for w in p.stale) else [])
    # one writer (one open log) for the whole build: each write and sync replays only what is new
    writer = MemoryWriter(ctx.paths, tags={"by": author(layer)}, apply=False, store=ctx.store)
    try:
        for n, batch in enumerate(batches):
            loop_id = "loop-" + sha256_text(version + "".join(w.key or "" for w in batch)
                                            + (current_map.artifact_id if current_map else ""))[:16]
            state = LoopState(state.map_text)
            writer.tags["loop"] = loop_id
            try:
                state = _loop(ctx, writer, step, [arts[w.inputs[0]] for w in batch], loop_id, state)
            except (LLMError, PromptError) as err:
                for w in batch or [p.stale[-1]]:
                    ctx.store.record_failure(ctx.run_id, layer, w.group_key, err.one_line())
                    result.outcomes.append(PartitionOutcome(w.group_key, "failed", error=err.one_line(),
                                                            llm_calls=state.calls + 1))
                return result
            ops = _loop_ops(ctx, state)
            result.outcomes += [_store_read(ctx, layer, w, arts[w.inputs[0]], loop_id, state, version, ops)
                                for w in batch]
            result.outcomes.append(_store_map(ctx, layer, loop_id, state, version, n == 0))
            progress.finished(layer, n + 1)
    finally:
        writer.close()
    if p.retire:
        result.retired = ctx.store.retire(layer, p.retire)
    return result


def _loop(ctx, writer: MemoryWriter, step, arts: list, loop_id: str, state: LoopState) -> LoopState:
    tools = Tools(ctx, writer, list(step.config["tools"]), state)
    records = [record_of(a) for a in arts]
    if offline(ctx):
        return agent_offline.run(tools, records)
    base = call_prompt(step, state.map_text, records)
    evidence = [(r.artifact_id, r.content) for r in records]
    return run_loop(ctx, tools, step, base, evidence, f"{step.name}/{loop_id}", prompt_identity(step.prompt))


def _loop_ops(ctx, state: LoopState) -> list[dict]:
    """The ops this loop wrote, as the log holds them (read by their ids, not the whole log)."""
    if not state.op_ids or not ctx.paths.memory_log.is_file():
        return []
    log = MemoryLog(ctx.paths.memory_log, read_only=True)
    try:
        return log.ops_named(state.op_ids)
    finally:
        log.close()


def _spend(state: LoopState) -> dict:
    return {"llm_calls": state.calls, "tokens_in": state.tokens_in, "tokens_out": state.tokens_out,
            "cost_usd": state.cost_usd}


AUDIT_KEYS = ("provider", "model", "temperature", "max_tokens", "prompt_template_hash", "flags")


def _audit(ctx, state: LoopState, loop_id: str, sources: list[str]) -> dict:
    """The loop's audit on one of its records. Only what names this record's own sources: the
    answers and prompts cite every record the loop read, and a forgotten conversation must
    leave no id in the records of the others (the log keeps the writes, the cache the answers)."""
    last = state.last.audit() if state.last is not None else {"provider": ctx.llm.provider,
                                                                "model": ctx.llm.model}
    audit = {k: last[k] for k in AUDIT_KEYS if k in last}
    audit.update({"source_ids": list(sources), "loop": loop_id, "turns": len(state.turns),
                  "stopped": state.stopped, "input_tokens": state.tokens_in,
                  "output_tokens": state.tokens_out, "cost_usd": state.cost_usd,
                  "llm_calls": state.calls,
                  "tool_calls": [[c.get("name") for c in t["calls"]] for t in state.turns]})
    return audit


def _store_read(ctx, layer, work: WorkItem, art, loop_id: str, state: LoopState, version: str,
                loop_ops: list[dict]) -> PartitionOutcome:
    """The record of one piece of evidence the loop read: which of the loop's ops cite it."""
    ops = [o for o in loop_ops if art.artifact_id in o.get("evidence", [])]
    lines = [f"{o['op']} {o.get('new_id') or o.get('memory_id')}: {o.get('content', o.get('reason', ''))[:200]}"
             for o in ops] or ["(nothing worth remembering)"]
    content = f"Read by synthesis loop {loop_id}.\n" + "\n".join(lines)
    meta = inherited(art.metadata)
    meta.update({"meta.step.version_hash": version, "meta.custom.loop": loop_id,
                 "meta.custom.ops": [o["op_id"] for o in ops],
                 "meta.custom.memories": [o.get("new_id") or o.get("memory_id") for o in ops],
                 "meta.step.provider": ctx.llm.provider, "meta.step.model": ctx.llm.model})
    if offline(ctx):
        meta["meta.custom.offline"] = agent_offline.NOTE
    stored = ctx.store.put(layer=layer, group_key=work.group_key, content=content,
                           materialization_key=work.key, level=ctx.pipeline.level(layer),
                           metadata=meta, audit=_audit(ctx, state, loop_id, [art.artifact_id]),
                           parents=[art.artifact_id], run_id=ctx.run_id)
    ctx.store.clear_failure(layer, work.group_key)
    return PartitionOutcome(work.group_key, "built", artifact_id=stored.artifact_id, input_count=1,
                            reason=f"read in {loop_id}", provider=ctx.llm.provider, model=ctx.llm.model,
                            content_hash=stored.content_hash, preview=content[:600])


def _store_map(ctx, layer: str, loop_id: str, state: LoopState, version: str, first: bool) -> PartitionOutcome:
    """The map after a loop: the one the agent wrote (or kept), on the memories held now. The
    loop's spend is reported on the map's outcome (one per loop)."""
    held = [a for a in ctx.store.list_layer(MEMORY_LAYER) if a.metadata.get("state") == "active"]
    meta = {"meta.step.version_hash": version, "meta.custom.loop": loop_id,
            "meta.custom.map_written": state.map_written, "meta.custom.stopped": state.stopped,
            "meta.custom.memories_held": len(held),
            "meta.step.provider": ctx.llm.provider, "meta.step.model": ctx.llm.model}
    if offline(ctx):
        meta["meta.custom.offline"] = agent_offline.NOTE
    text = state.map_text if state.map_text.strip() else NO_MAP
    key = sha256_text(f"{version}\n{loop_id}\n{hashlib.sha256(text.encode()).hexdigest()}")
    stored = ctx.store.put(layer=layer, group_key=MAP_GROUP, content=text, materialization_key=key,
                           level=ctx.pipeline.level(layer) + 1, metadata=meta,
                           audit=_audit(ctx, state, loop_id, [a.artifact_id for a in held]),
                           parents=[a.artifact_id for a in held], run_id=ctx.run_id)
    ctx.store.clear_failure(layer, MAP_GROUP)
    return PartitionOutcome(MAP_GROUP, "built", artifact_id=stored.artifact_id, reason=state.stopped,
                            provider=ctx.llm.provider, model=ctx.llm.model, **_spend(state),
                            input_count=len(held), content_hash=stored.content_hash, preview=text[:600])


def _take_back(ctx, layer: str) -> None:
    """Drop every op this step wrote and its records: the new version starts from nothing."""
    log = MemoryLog(ctx.paths.memory_log)
    try:
        log.drop_by(author(layer))
        state = log.state()
    finally:
        log.close()
    sync(ctx.store, state)
    ctx.store.retire(layer, list(ctx.store.current_index(layer)))

