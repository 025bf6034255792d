"""Windowed fold (`pipeline.window_fold`, the Synapse rolling summary, design 004 §4): per
conversation, the last `window` turns stay verbatim (the working memory) and every older turn is
folded into the conversation's rolling summary exactly once.

One record per conversation (group key = the transcript's; parent = the transcript). When a
session grows, the record made from its previous version under the same step version is the
prior summary and only the turns evicted since are folded into it: its metadata lists every turn
folded so far (`meta.custom.folded_turn_ids`) and the ones this fold added. A changed prompt or
model folds from nothing again. The eviction rule and the offline summary are the live inbox's
(`synix_resources/live/window.py`), one implementation; with a model, one call per fold.
"""
from __future__ import annotations

from synix_assets.engine.agent import offline
from synix_assets.engine.llm_step import call_prompt, inherited, make_request, record_of
from synix_assets.engine.outcomes import LayerPlan, LayerResult, PartitionOutcome, built_outcome
from synix_assets.engine.turns import plan_readings, turn_lines, turns_of
from synix_resources.errors import LLMError, PromptError
from synix_resources.live import window

EMPTY = "(no turn has left the working window yet)"


NOTE = "offline: no model; the rolling summary is extractive, one line per folded turn"


def plan(ctx, layer: str, up: LayerPlan | None = None) -> LayerPlan:
    out = plan_readings(ctx, layer, "window_fold", up, None)
    if offline(ctx):
        for w in out.stale:
            w.est_calls, w.reason = 0, f"{w.reason} ({NOTE})"
    return out


def build(ctx, layer: str, keys: set[str] | None = None) -> LayerResult:
    step = ctx.pipeline.steps[layer]
    p = plan(ctx, layer)
    result = LayerResult(layer, [PartitionOutcome(gk, "cached") for gk in p.cached])
    result.outcomes += [PartitionOutcome(gk, "blocked", reason=f"upstream {step.upstream} failed")
                        for gk in p.blocked]
    todo = [w for w in p.stale if keys is None or w.group_key in keys]
    arts = {a.artifact_id: a for a in ctx.store.get_many([w.inputs[0] for w in todo if w.inputs])}
    for w in todo:
        if not w.inputs:  # its transcript is not built yet (planned ahead of the build)
            continue
        try:
            result.outcomes.append(_fold_one(ctx, layer, step, w, arts[w.inputs[0]]))
        except (LLMError, PromptError) as err:
            ctx.store.record_failure(ctx.run_id, layer, w.group_key, err.one_line())
            result.outcomes.append(PartitionOutcome(w.group_key, "failed", error=err.one_line(),
                                                    llm_calls=int(isinstance(err, LLMError))))
    if p.retire and keys is None:
        result.retired = ctx.store.retire(layer, p.retire)
    return result


def _fold_one(ctx, layer: str, step, work, transcript) -> PartitionOutcome:
    version = ctx.version(layer)
    turns = turns_of(transcript)
    prior = ctx.store.current(layer, work.group_key)
    done: list[str] = []
    if prior is not None and prior.metadata.get("meta.step.version_hash") == version:
        done = list(prior.metadata.get("meta.custom.folded_turn_ids") or [])
        if not set(done) <= {t["turn_id"] for t in turns}:  # not a grown session: start over
            prior, done = None, []
    else:
        prior = None
    todo = window.evicted(turns, step.config["window"], set(done))
    text, how, spend = (prior.content if done else EMPTY), "nothing evicted yet", {}
    if todo:
        text, how, spend = _summarise(ctx, layer, step, prior.content if done else "", todo, transcript)
    meta = inherited(transcript.metadata)
    meta.update({"meta.step.version_hash": version, "meta.custom.window": step.config["window"],
                 "meta.custom.folded_turn_ids": done + [t["turn_id"] for t in todo],
                 "meta.custom.newly_folded": [t["turn_id"] for t in todo],
                 "meta.custom.folded_through": todo[-1]["ts"] if todo else
                 (prior.metadata.get("meta.custom.folded_through") if prior else None),
                 "meta.custom.folds": (prior.metadata.get("meta.custom.folds", 0) if prior else 0) + bool(todo),
                 "meta.custom.window_turn_ids": [t["turn_id"] for t in turns[-step.config["window"]:]],
                 "meta.custom.how": how, "meta.step.provider": ctx.llm.provider,
                 "meta.step.model": ctx.llm.model})
    stored = ctx.store.put(layer=layer, group_key=work.group_key, content=text,
                           materialization_key=work.key, level=ctx.pipeline.level(layer),
                           metadata=meta, audit={"source_ids": [transcript.artifact_id], **spend},
                           parents=[transcript.artifact_id], run_id=ctx.run_id)
    ctx.store.clear_failure(layer, work.group_key)
    return built_outcome(work.group_key, stored, ctx.llm, spend, reason=how, input_count=len(todo),
                         preview=text)


def _summarise(ctx, layer: str, step, prior: str, todo: list[dict], transcript) -> tuple[str, str, dict]:
    """(new summary, how it was made, the call's spend): the inbox's extractive fold offline,
    else one call of the step's prompt."""
    if offline(ctx):
        text, how = window.extractive_fold(prior, todo)
        return text, how, {}
    prompt_text = call_prompt(step, prior, turn_lines(todo))
    req = make_request(ctx, layer, prompt_text, [record_of(transcript)], f"{layer}/{transcript.group_key}")
    resp = ctx.llm.complete(req)
    spend = {"llm_calls": 0 if resp.from_cache else 1, "input_tokens": resp.input_tokens,
             "output_tokens": resp.output_tokens, "cost_usd": resp.cost_usd,
             "provider": resp.provider, "model": resp.model}
    return resp.text.strip(), f"model {resp.model}", spend
