"""The temporal fact layer (`pipeline.facts`; the Synapse design's Tier 2, 004 §2): facts about
entities with `valid_from` / `valid_until`, invalidated — never deleted — when a later turn
contradicts them, each citing the turns that state it.

Like the loops layer, it reads each conversation once (a *reading*: group key = the transcript's,
parent = the transcript, keyed by the transcript and the step version, so a changed or new
conversation is the only one read again): the statements its user turns make, by one model call
(the step's prompt, a JSON answer) or, offline or when the answer is not the JSON asked for, by
the rules of `engine/temporal.py`; the reading says which. From all readings in time order the
layer replays the facts (`temporal.replay`, no call) and stores one record per fact
(`~fact-…`), its parents the readings of the turns that state it and of the turn that
invalidated it, plus the board `~facts` (the facts valid now). Records are keyed by their content:
a new conversation that changes one fact's end stores a new version of that fact and nothing
else; forgetting a conversation removes its reading and every fact citing it, and the next
build's replay restores what those had invalidated.
"""
from __future__ import annotations

import json

from synix_assets.engine import temporal
from synix_assets.engine.agent import offline
from synix_assets.engine.llm_step import call_prompt, inherited, make_request, record_of
from synix_assets.engine.outcomes import LayerPlan, LayerResult, PartitionOutcome, WorkItem, built_outcome
from synix_assets.engine.turns import DERIVED, board_key, plan_readings, turn_lines, turns_of
from synix_assets.pipeline.fact_rules import parse_rules
from synix_resources.errors import LLMError, PromptError
from synix_resources.fingerprints import sha256_text

BOARD = DERIVED + "facts"
NOT_JSON = "rules (the model's answer was not the JSON asked for)"
NOTE = "offline: no model; facts by rules"
OPS = ("set", "add", "end")


def plan(ctx, layer: str, up: LayerPlan | None = None) -> LayerPlan:
    out = plan_readings(ctx, layer, "facts", up, BOARD)
    if offline(ctx):
        for w in out.stale:
            w.est_calls, w.reason = 0, f"{w.reason} ({NOTE})" if w.inputs else w.reason
    return out


def readings(store, layer: str) -> list:
    """The layer's readings (one per conversation), oldest first."""
    index = {gk: r for gk, r in store.current_index(layer).items() if not gk.startswith(DERIVED)}
    return sorted(store.get_many([r.artifact_id for r in index.values()]),
                  key=lambda a: (str(a.metadata.get("meta.time.created_at") or ""), a.group_key))


def build(ctx, layer: str, keys: set[str] | None = None) -> LayerResult:
    step = ctx.pipeline.steps[layer]
    p = plan(ctx, layer)
    result = LayerResult(layer, [PartitionOutcome(gk, "cached") for gk in p.cached])
    if p.blocked:
        result.outcomes += [PartitionOutcome(gk, "blocked", reason=f"upstream {step.upstream} failed")
                            for gk in p.blocked]
        return result
    todo = [w for w in p.stale if w.inputs]
    arts = {a.artifact_id: a for a in ctx.store.get_many([w.inputs[0] for w in todo])}
    for w in todo:
        try:
            result.outcomes.append(_read(ctx, layer, step, w, arts[w.inputs[0]]))
        except (LLMError, PromptError) as err:
            ctx.store.record_failure(ctx.run_id, layer, w.group_key, err.one_line())
            result.outcomes.append(PartitionOutcome(w.group_key, "failed", error=err.one_line()))
    if result.failed:
        return result
    if p.retire:
        result.retired = ctx.store.retire(layer, p.retire)
    if any(w.group_key == BOARD for w in p.stale):
        result.outcomes += _replay(ctx, layer, step)
    return result


def _read(ctx, layer: str, step, work: WorkItem, transcript) -> PartitionOutcome:
    """A conversation's reading: the statements of its user turns, by the model or the rules."""
    user = [t for t in turns_of(transcript) if t["role"] == "user"]
    spend: dict = {}
    if offline(ctx) or not user:
        stated, how = [s for t in user for s in temporal.rule_statements(t)], temporal.RULES
    else:
        req = make_request(ctx, layer, call_prompt(step, turn_lines(user)), [record_of(transcript)],
                           f"{layer}/{work.group_key}", shape="json")
        resp = ctx.llm.complete(req)
        spend = {"llm_calls": 0 if resp.from_cache else 1, "input_tokens": resp.input_tokens,
                 "output_tokens": resp.output_tokens, "cost_usd": resp.cost_usd}
        how = f"model {resp.model}"
        stated = model_statements(resp.text, user, how)
        if stated is None:
            stated, how = [dict(s, extractor=NOT_JSON) for t in user for s in temporal.rule_statements(t)], NOT_JSON
    meta = inherited(transcript.metadata)
    meta.update({"meta.step.version_hash": ctx.version(layer), "meta.custom.extractor": how,
                 "meta.custom.turn_ids": [t["turn_id"] for t in user],
                 "meta.custom.statements": len(stated),
                 "meta.step.provider": ctx.llm.provider, "meta.step.model": ctx.llm.model})
    content = json.dumps({"statements": stated}, ensure_ascii=False)
    stored = ctx.store.put(layer=layer, group_key=work.group_key, content=content,
                           materialization_key=work.key, level=ctx.pipeline.level(layer), metadata=meta,
                           audit={"source_ids": [transcript.artifact_id], **spend},
                           parents=[transcript.artifact_id], run_id=ctx.run_id)
    ctx.store.clear_failure(layer, work.group_key)
    return built_outcome(work.group_key, stored, ctx.llm, spend, reason=how, input_count=len(user),
                         preview=content)


def model_statements(text: str, user: list[dict], how: str) -> list[dict] | None:
    """The model's JSON answer as statements (in turn order), or None when it is not the object
    asked for or names a turn that is not one of the user's."""
    start, end = text.find("{"), text.rfind("}")
    try:
        answer = json.loads(text[start:end + 1]) if start >= 0 else None
        by_turn = {t["turn_id"]: t for t in user}
        out = []
        for s in answer["statements"]:
            turn = by_turn[str(s["turn_id"])]
            op = str(s.get("op", "set"))
            if op not in OPS or not str(s["value"]).strip() or not str(s["subject"]).strip():
                return None
            out.append({"turn_id": turn["turn_id"], "ts": turn["ts"], "session_id": turn["session_id"],
                        "subject": str(s["subject"]).strip(), "attribute": " ".join(str(s["attribute"]).lower().split()),
                        "value": str(s["value"]).strip(), "op": op, "extractor": how})
        order = {t["turn_id"]: i for i, t in enumerate(user)}
        return sorted(out, key=lambda s: order[s["turn_id"]])
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _replay(ctx, layer: str, step) -> list[PartitionOutcome]:
    """Every reading's statements in time order → one record per fact, and the board."""
    version = ctx.version(layer)
    arts = readings(ctx.store, layer)
    stated, reading_of = [], {}
    for a in arts:
        for s in json.loads(a.content)["statements"]:
            stated.append(s)
            reading_of[s["turn_id"]] = a.artifact_id
    stated.sort(key=lambda s: s["ts"])  # stable: a conversation's turns keep their order
    facts = temporal.replay(stated, parse_rules(layer, step.config.get("implies")))
    level = ctx.pipeline.level(layer)
    outcomes, keep = [], {BOARD}
    for f in facts:
        gk = DERIVED + f["fact_id"]
        keep.add(gk)
        cited = f["evidence"] + ([f["invalidated_by"]["turn_id"]] if f["invalidated_by"] else [])
        parents = sorted({reading_of[t] for t in cited if t in reading_of})
        key = sha256_text(version + json.dumps(f, sort_keys=True) + "".join(parents))
        held = ctx.store.current(layer, gk)
        if held is not None and held.materialization_key == key:
            outcomes.append(PartitionOutcome(gk, "cached"))
            continue
        meta = {"meta.step.version_hash": version, "meta.time.created_at": f["valid_from"],
                **{f"meta.custom.{k}": v for k, v in f.items()}}
        stored = ctx.store.put(layer=layer, group_key=gk, content=temporal.fact_text(f), materialization_key=key,
                               level=level, metadata=meta, audit={"source_ids": parents},
                               parents=parents, run_id=ctx.run_id)
        outcomes.append(PartitionOutcome(gk, "built", artifact_id=stored.artifact_id, input_count=len(parents),
                                         reason="invalidated" if f["valid_until"] else "valid",
                                         preview=temporal.fact_text(f)))
    gone = [gk for gk in ctx.store.current_index(layer) if gk.startswith(DERIVED) and gk not in keep]
    if gone:
        ctx.store.retire(layer, gone)
    ids = [a.artifact_id for a in arts]
    board = "\n".join("- " + temporal.fact_text(f) for f in facts if f["valid_until"] is None)
    stored = ctx.store.put(layer=layer, group_key=BOARD, content=board or "(none)",
                           materialization_key=board_key(version, ids), level=level,
                           metadata={"meta.step.version_hash": version, "meta.custom.readings": len(ids),
                                     "meta.custom.facts": len(facts)},
                           audit={"source_ids": ids}, parents=ids, run_id=ctx.run_id)
    outcomes.append(PartitionOutcome(BOARD, "built", artifact_id=stored.artifact_id, input_count=len(ids),
                                     preview=board[:600]))
    return outcomes
