"""The brief's Tier 1 as the Synapse design defines it (004 §5), for a memory whose live source
keeps a working window (`pipeline.source(..., kind="live", window=12)`, the synapse template):
identity facts, working memory (the window's turns), the rolling summary of the turns before it,
active open loops and nudge candidates.

With the synapse template's layers built (`window_fold`, `open_loops`, `identity_facts`),
Tier 1 is read from them; the live inbox (the system of record for turns, as Postgres is
Synapse's) adds what was said since the last build, by the same rules, so Tier 1 holds what was
said a minute ago even before any build. Sessions that were forgotten
(the store's tombstones) contribute nothing: no turn, loop, fact or summary line.
"""
from __future__ import annotations

import json
from datetime import datetime

from synix_assets.engine.agent_memory.reads import as_of_instant
from synix_assets.engine.turns import DERIVED, turns_of
from synix_assets.forget.plan import TOMBSTONES
from synix_resources.live import procedural, window
from synix_resources.live.inbox import Inbox
from synix_resources.llm.mapreduce import CHARS_PER_TOKEN, estimate_tokens


def windowed_source(pipeline):
    """The pipeline's live source with a working window, or None."""
    return next((s for s in pipeline.sources.values() if s.kind == "live" and s.window), None)


def forgotten(paths) -> set[str]:
    if not paths.has_store():
        return set()
    store = paths.open_store(read_only=True)
    try:
        return set(store.get_meta(TOMBSTONES) or [])
    finally:
        store.close()


def fold_due(paths, pipeline, summarise: window.Summariser = window.extractive_fold) -> list[dict]:
    """Fold every session's evicted turns into its rolling summary (the janitor's pass; run by
    the live sensor's tick and before each Tier 1 read)."""
    source = windowed_source(pipeline)
    path = pipeline.resolve(source.path) if source else None
    if path is None or not path.is_file():
        return []
    inbox = Inbox.from_env(path)
    try:
        return window.fold_all(inbox, summarise, size=source.window)
    finally:
        inbox.close()


SYNAPSE_KINDS = ("window_fold", "loops", "identity")


def synapse_layers(pipeline) -> dict[str, str]:
    """step kind → the first layer of that kind, for the Synapse layers the pipeline declares."""
    out: dict[str, str] = {}
    for name, step in pipeline.steps.items():
        if step.kind in SYNAPSE_KINDS:
            out.setdefault(step.kind, name)
    return out


def tier1(paths, pipeline, session_id: str | None = None, *, now: datetime | None = None,
          as_of: str | None = None) -> dict | None:
    """Tier 1 for `session_id` (default: the most recently active session), or None when the
    pipeline keeps no working window. With Synapse layers built, loops and facts are the
    replay of their readings (plus the inbox's turns no build has read yet, by the same rules)
    and the rolling summary is the window_fold record; `as_of` (ISO): only what was said by
    then, the summary that covered no later turn, nudges as they stood then."""
    source, layers = windowed_source(pipeline), synapse_layers(pipeline)
    if source is None and not layers:
        return None
    size = source.window if source else pipeline.steps[layers["window_fold"]].config["window"] \
        if "window_fold" in layers else window.WINDOW
    t = as_of_instant(as_of)
    if t is None:
        fold_due(paths, pipeline)
    gone = forgotten(paths)
    built = _built(paths, pipeline, layers, t)
    path = pipeline.resolve(source.path) if source else None
    inbox = Inbox(path, read_only=True) if path is not None and path.is_file() else None
    try:
        said = inbox.user_turns() if inbox else []
        fresh = [procedural.rule_event(u) for u in said if u["session_id"] not in gone
                 and u["turn_id"] not in built["covered"] and (t is None or u["ts"] <= t)]
        posted = {u["turn_id"]: i for i, u in enumerate(said)}  # ties in time: the order posted
        events = built["events"] + fresh
        loops, facts = procedural.replay_events(sorted(events,
                                                       key=lambda e: (e["ts"], posted.get(e["turn_id"], -1))))
        if session_id is None and t is not None and events:  # the session active by then
            session_id = max(events, key=lambda e: (e["ts"], posted.get(e["turn_id"], -1)))["session_id"]
        session = session_id or (inbox.latest_session() if inbox else None) or built["latest"]
        session = None if session in gone else session
        turns = _session_turns(inbox, built, session, t)
        summary = _summary(inbox, built, session, turns, size)
    finally:
        if inbox is not None:
            inbox.close()
    for loop in loops:
        if loop["loop_id"] in built["records"]:
            loop["record_id"] = built["records"][loop["loop_id"]]
    when = datetime.fromisoformat(t.replace("Z", "+00:00")) if t else now
    return {"identity": facts, "session_id": session, "window": size,
            "working_memory": [{k: x[k] for k in ("turn_id", "role", "ts", "content")} for x in turns[-size:]],
            "rolling_summary": summary, "active_loops": procedural.active(loops),
            "nudge_candidates": procedural.nudges(loops, when), "loops": [procedural.public(l) for l in loops],
            "extractor": ", ".join(sorted({l["extractor"] for l in loops} | {f["extractor"] for f in facts}))
            or procedural.RULES, "from": "layers" if layers else "inbox", **({"as_of": t} if t else {})}


def _built(paths, pipeline, layers: dict, t: str | None) -> dict:
    """From the built Synapse layers: the loop readings' events (said by `t`), the turn ids they
    cover, the loop records' ids, and the window_fold records' history per conversation."""
    out = {"events": [], "covered": set(), "records": {}, "folds": {}, "latest": None, "transcripts": {}}
    if not layers or not paths.has_store():
        return out
    store = paths.open_store(read_only=True)
    try:
        if "loops" in layers:
            for a in store.list_layer(layers["loops"]):
                if a.group_key.startswith(DERIVED):
                    out["records"][a.group_key[len(DERIVED):]] = a.artifact_id
                    continue
                out["covered"].update(a.metadata.get("meta.custom.turn_ids") or [])
                out["events"] += [e for e in json.loads(a.content)["events"] if t is None or e["ts"] <= t]
        if "window_fold" in layers:
            layer = layers["window_fold"]
            step_from = pipeline.steps[layer].upstream
            dated = []
            for a in store.list_layer(layer):
                out["folds"][a.group_key] = store.history(layer, a.group_key)
                up = store.current(step_from, a.group_key)
                if up is not None:
                    out["transcripts"][a.group_key] = up
                dated.append((str(a.metadata.get("meta.time.updated_at") or a.metadata.get("meta.time.created_at") or ""), a.group_key))
            out["latest"] = max(dated)[1] if dated else None
    finally:
        store.close()
    return out


def _session_turns(inbox, built: dict, session: str | None, t: str | None) -> list[dict]:
    """The session's turns said by `t`: the inbox's when it holds the session, else the turns of
    its built transcript."""
    if session is None:
        return []
    turns = inbox.turns(session) if inbox is not None and inbox.session(session) else []
    if not turns and session in built["transcripts"]:
        turns = turns_of(built["transcripts"][session])
    return [x for x in turns if t is None or x["ts"] <= t]


def _summary(inbox, built: dict, session: str | None, turns: list[dict], size: int) -> dict | None:
    """The rolling summary that folded the most of the turns evicted from the window by then:
    a built window_fold version or the inbox's own (ahead of the build between builds)."""
    if session is None:
        return None
    evicted = {x["turn_id"] for x in window.evicted(turns, size)}
    candidates = []
    for a in built["folds"].get(session, []):
        folded = a.metadata.get("meta.custom.folded_turn_ids") or []
        if folded and set(folded) <= evicted:
            candidates.append({"session_id": session, "folds": a.metadata.get("meta.custom.folds", 1),
                               "text": a.content, "folded_turn_ids": folded,
                               "how": a.metadata.get("meta.custom.how"), "record_id": a.artifact_id,
                               "from": "layer"})
    live = window.rolling_summary(inbox, session) if inbox is not None else None
    if live is not None and set(live["folded_turn_ids"]) <= evicted:
        candidates.append({**live, "from": "inbox"})
    return max(candidates, key=lambda c: len(c["folded_turn_ids"]), default=None)


def tier1_text(t1: dict) -> str:
    """Tier 1 as the text an agent reads first."""
    parts = []
    if t1["identity"]:
        parts.append("## Identity\n" + "\n".join(f"- {f['key']}: {f['value']}" for f in t1["identity"]))
    if t1["rolling_summary"]:
        parts.append("## Rolling summary\n" + t1["rolling_summary"]["text"])
    if t1["working_memory"]:
        parts.append(f"## Working memory (session {t1['session_id']})\n"
                     + "\n".join(f"[{t['turn_id']}] {t['role']}: {t['content']}" for t in t1["working_memory"]))
    if t1["active_loops"]:
        parts.append("## Open loops\n" + "\n".join(f"- [{l['status']}] {l['text']} (since {l['created_at']})"
                                                    for l in t1["active_loops"]))
    if t1["nudge_candidates"]:
        parts.append("## Nudges\n" + "\n".join(f"- {l['text']} (idle {l['idle_days']} days)"
                                               for l in t1["nudge_candidates"]))
    return "\n\n".join(parts)


def fit_tier1(t1: dict, budget_tokens: int) -> int:
    """Cut Tier 1's text to half of a brief's `budget_tokens` (the other half is the built
    memory's: core, recent records, hits) and return the tokens it takes."""
    room = budget_tokens // 2
    if estimate_tokens(t1["text"]) > room:
        t1["text"] = t1["text"][:max(0, room - 1) * CHARS_PER_TOKEN].rstrip() + "…"
        t1["truncated"] = True
    return estimate_tokens(t1["text"])


_PIPELINES: dict = {}


def brief_tier1(paths, session_id: str | None = None, *, as_of: str | None = None) -> dict | None:
    """Tier 1 of the memory at `paths` (its pipeline loaded once per change of pipeline.py),
    or None when its pipeline keeps no working window."""
    file = paths.pipeline_file
    try:
        stamp = (str(file), file.stat().st_mtime_ns)
    except OSError:  # no pipeline file (yet): nothing declares a window
        return None
    pipeline = _PIPELINES.get(stamp)
    if pipeline is None:
        pipeline = _PIPELINES[stamp] = paths.load_pipeline()
    t1 = tier1(paths, pipeline, session_id, as_of=as_of)
    if t1 is not None:
        t1["text"] = tier1_text(t1)
    return t1
