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
from synix_assets.engine.outcomes import LayerPlan, LayerResult, PartitionOutcome
from synix_assets.engine.readings import read_one, read_stale
from synix_assets.engine.turns import DERIVED, board_key, plan_readings
from synix_assets.pipeline.fact_rules import parse_rules
from synix_resources.fingerprints import sha256_text

BOARD = DERIVED + "facts"
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
    result = LayerResult(layer, [PartitionOutcome(gk, "cached") for gk in p.cached], partial=p.partial)
    # conversations whose transcript failed wait (blocked); the others and the board build (§10.2)
    result.outcomes += [PartitionOutcome(gk, "blocked", reason=f"upstream {step.upstream} failed")
                        for gk in p.blocked]
    read_stale(ctx, layer, step, p, result, lambda w, transcript: read_one(
        ctx, layer, step, w, transcript, field="statements", by_rules=_rule_statements,
        parse=model_statements, rules_name=temporal.RULES, count_key="meta.custom.statements"))
    if result.failed:
        return result
    if p.retire:
        result.retired = ctx.store.retire(layer, p.retire)
    if any(w.group_key == BOARD for w in p.stale):
        result.outcomes += _replay(ctx, layer, step)
    return result


def _rule_statements(user: list[dict]) -> list[dict]:
    return [s for t in user for s in temporal.rule_statements(t)]


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
