"""Open loops and identity facts as layers (`pipeline.open_loops`, `pipeline.identity_facts`;
the Synapse procedural memory, design 004 §1).

The loops layer reads each conversation once (a *reading*: group key = the transcript's, parent
= the transcript): what each user turn opens, reinforces or completes and the facts it states,
as JSON events. With a model, one call per conversation (the step's prompt, a JSON answer);
offline, or when the answer is not the JSON asked for, the live inbox's rules
(`synix_resources/live/procedural.rule_event`, one implementation), and the reading says which.
From all readings in time order (`procedural.replay_events`, the inbox's replay) the layer
derives one record per loop (`~loop-…`: status open / reinforced / completed, its evidence
turns; parents = the readings those turns are in) and the board `~open` (the loops not
completed). The identity layer replays the same readings' facts: one record per fact (`~name`,
`~preference:…`) and the profile `~identity`. Derived records are keyed by their content, so a
replay that changes nothing stores nothing; forgetting a conversation removes its reading and
everything with it among its parents, and the next build replays the rest.
"""
from __future__ import annotations

import json

from synix_assets.engine.agent import offline
from synix_assets.engine.outcomes import LayerPlan, LayerResult, PartitionOutcome, WorkItem
from synix_assets.engine.readings import read_one, read_stale
from synix_assets.engine.turns import DERIVED, board_key, plan_readings
from synix_resources.fingerprints import sha256_text
from synix_resources.live import procedural as rules

BOARD = {"loops": DERIVED + "open", "identity": DERIVED + "identity"}
NOTE = "offline: no model; loops and facts by rules"


def plan(ctx, layer: str, up: LayerPlan | None = None) -> LayerPlan:
    kind = ctx.pipeline.steps[layer].kind
    if kind == "loops":
        out = plan_readings(ctx, layer, "loops", up, BOARD["loops"])
        if offline(ctx):
            for w in out.stale:
                w.est_calls, w.reason = 0, f"{w.reason} ({NOTE})"
        return out
    out = LayerPlan(layer, "identity")
    step = ctx.pipeline.steps[layer]
    if up is not None and (up.stale or up.blocked):
        out.stale.append(WorkItem(BOARD["identity"], None, "readings changed", est_calls=0))
        return out
    want = board_key(ctx.version(layer), [r.artifact_id for r in readings_index(ctx, step.upstream).values()])
    held = ctx.store.current(layer, BOARD["identity"])
    if held is None or held.materialization_key != want:
        out.stale.append(WorkItem(BOARD["identity"], want, "readings changed", est_calls=0))
    else:
        out.cached.append(BOARD["identity"])
    return out


def readings_index(ctx, layer: str) -> dict:
    return {gk: r for gk, r in ctx.store.current_index(layer).items() if not gk.startswith(DERIVED)}


def build(ctx, layer: str, keys: set[str] | None = None) -> LayerResult:
    step = ctx.pipeline.steps[layer]
    p = plan(ctx, layer)
    result = LayerResult(layer, [PartitionOutcome(gk, "cached") for gk in p.cached], partial=p.partial)
    # conversations whose transcript failed wait (blocked); the others and the board build (§10.2)
    result.outcomes += [PartitionOutcome(gk, "blocked", reason=f"upstream {step.upstream} failed")
                        for gk in p.blocked]
    source = layer if step.kind == "loops" else step.upstream
    if step.kind == "loops":
        read_stale(ctx, layer, step, p, result, lambda w, transcript: read_one(
            ctx, layer, step, w, transcript, field="events", by_rules=_rule_events, parse=model_events,
            rules_name=rules.RULES, all_turn_ids=True))
        if result.failed:
            return result
        if p.retire:
            result.retired = ctx.store.retire(layer, p.retire)
    if any(w.group_key == BOARD[step.kind] for w in p.stale):
        result.outcomes += _replay(ctx, layer, step, source)
    return result


def _rule_events(user: list[dict]) -> list[dict]:
    return [rules.rule_event(t) for t in user]


def model_events(text: str, user: list[dict], how: str) -> list[dict] | None:
    """The model's JSON answer as replay events (one per user turn it names, in turn order), or
    None when it is not the object asked for."""
    start, end = text.find("{"), text.rfind("}")
    try:
        answer = json.loads(text[start:end + 1]) if start >= 0 else None
        named = {str(t["turn_id"]): t for t in answer["turns"]}
        by_turn = {t["turn_id"]: t for t in user}
        events = []
        for t in user:
            said = named.get(t["turn_id"])
            if said is None:
                continue
            events.append({"turn_id": t["turn_id"], "ts": t["ts"], "session_id": t["session_id"],
                           "completes": [str(c) for c in said.get("completes", [])],
                           "mentions": [(str(m.get("kind", "todo")), str(m["text"])) for m in said.get("mentions", [])],
                           "facts": [(str(f["key"]), str(f["value"])) for f in said.get("facts", [])],
                           "extractor": how})
        return events if set(named) <= set(by_turn) else None
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _replay(ctx, layer: str, step, source: str) -> list[PartitionOutcome]:
    """Derive the loop (or fact) records and the board from every reading, oldest turn first."""
    version = ctx.version(layer)
    index = readings_index(ctx, source)
    arts = sorted(ctx.store.get_many([r.artifact_id for r in index.values()]),
                  key=lambda a: (str(a.metadata.get("meta.time.created_at") or ""), a.group_key))
    events, reading_of = [], {}
    for a in arts:
        for e in json.loads(a.content)["events"]:
            events.append(e)
            reading_of[e["turn_id"]] = a.artifact_id
    events.sort(key=lambda e: e["ts"])  # stable: a conversation's turns keep their order
    loops, facts = rules.replay_events(events)
    if step.kind == "loops":
        items = [(DERIVED + l["loop_id"], _loop_text(l), rules.public(l)) for l in loops]
        board = "\n".join(f"- [{l['status']}] {l['text']}" for l in loops if l["status"] != "completed")
    else:
        items = [(DERIVED + f["fact_id"], f"{f['key']}: {f['value']}", f) for f in facts]
        board = "\n".join(f"- {f['key']}: {f['value']}" for f in facts)
    outcomes, keep = [], {BOARD[step.kind]}
    level = ctx.pipeline.level(layer)
    for gk, text, record in items:
        keep.add(gk)
        parents = sorted({reading_of[t] for t in record["evidence"] if t in reading_of})
        key = sha256_text(version + json.dumps(record, sort_keys=True, default=str) + "".join(parents))
        held = ctx.store.current(layer, gk)
        if held is not None and held.materialization_key == key:
            outcomes.append(PartitionOutcome(gk, "cached"))
            continue
        meta = {"meta.step.version_hash": version, "meta.time.created_at":
                record.get("created_at") or record.get("first_seen"),
                **{f"meta.custom.{k}": v for k, v in record.items()}}
        stored = ctx.store.put(layer=layer, group_key=gk, content=text, materialization_key=key,
                               level=level, metadata=meta, audit={"source_ids": parents},
                               parents=parents, run_id=ctx.run_id)
        outcomes.append(PartitionOutcome(gk, "built", artifact_id=stored.artifact_id, input_count=len(parents),
                                         reason=record.get("status", "fact"), preview=text[:600]))
    gone = [gk for gk in ctx.store.current_index(layer) if gk.startswith(DERIVED) and gk not in keep]
    if gone:
        ctx.store.retire(layer, gone)
    ids = [a.artifact_id for a in arts]
    stored = ctx.store.put(layer=layer, group_key=BOARD[step.kind], content=board or "(none)",
                           materialization_key=board_key(version, [r.artifact_id for r in index.values()]),
                           level=level, metadata={"meta.step.version_hash": version,
                                                      "meta.custom.readings": len(ids)},
                           audit={"source_ids": ids}, parents=ids, run_id=ctx.run_id)
    outcomes.append(PartitionOutcome(BOARD[step.kind], "built", artifact_id=stored.artifact_id,
                                     input_count=len(ids), preview=board[:600]))
    return outcomes


def _loop_text(loop: dict) -> str:
    return f"[{loop['status']}] {loop['kind']}: {loop['text']}"
