"""The turns of a transcript record, and the per-conversation plan the Synapse layers share
(`window_fold`, `loops`): one record per conversation, keyed by its transcript and the step
version, so a grown session, a new conversation or a changed prompt is what gets rebuilt."""
from __future__ import annotations

import re

from synix_assets.engine.outcomes import LayerPlan, WorkItem, rebuild_reason
from synix_assets.engine.upstream import blocked_groups, version_changed
from synix_resources.fingerprints import sha256_text, transform_key

# A message header of Conversation.transcript(): "[#3 2024-01-05 10:02 UTC] User:"
_HEADER = re.compile(r"^\[#(\d+)(?: (\d{4}-\d\d-\d\d \d\d:\d\d) UTC)?\] (.+):$")
_EPOCH = "1970-01-01T00:00:00Z"


def turns_of(art) -> list[dict]:
    """The turns of a transcript record in order: turn id (a live turn's posted id, else
    `<conversation>#<n>`), role, ISO time, content and session (= conversation) id."""
    meta = art.metadata
    conversation = meta.get("meta.chat.conversation_id") or art.group_key
    posted = meta.get("meta.custom.turn_ids") or []
    fallback = meta.get("meta.time.created_at") or _EPOCH
    turns: list[dict] = []
    for line in art.content.splitlines():
        head = _HEADER.match(line)
        if head:
            n, stamp, label = int(head.group(1)), head.group(2), head.group(3)
            turn_id = posted[n - 1] if n - 1 < len(posted) else f"{conversation}#{n}"
            ts = f"{stamp[:10]}T{stamp[11:]}:00Z" if stamp else fallback
            turns.append({"turn_id": turn_id, "role": label.split(" (")[0].lower(), "ts": ts,
                          "content": "", "session_id": conversation})
        elif turns:
            turns[-1]["content"] += ("\n" if turns[-1]["content"] else "") + line
    for t in turns:
        t["content"] = t["content"].strip()
    return turns


def turn_lines(turns: list[dict]) -> str:
    return "\n".join(f"[{t['turn_id']}] {t['role']}: {' '.join(t['content'].split())}" for t in turns)


def plan_readings(ctx, layer: str, kind: str, up: LayerPlan | None, extra: str | None) -> LayerPlan:
    """One work item per conversation of the step's input whose record is missing or was made
    from another transcript or step version; `extra`: the layer's one record made from all the
    others (a board), stale whenever any reading is, or when it is missing (forget removed it)."""
    step = ctx.pipeline.steps[layer]
    version = ctx.version(layer)
    current = ctx.store.current_index(layer)
    upstream = ctx.store.current_index(step.upstream)
    stale_up = set(up.stale_keys) if up else set()
    groups = (set(upstream) | stale_up) - set(up.retire if up else ())
    out = LayerPlan(layer, kind)
    blocked = blocked_groups(ctx, step.upstream, up.lapsed if up else ())
    changed = version_changed(ctx, layer, version)
    for gk in sorted(groups):
        if gk in blocked:
            out.blocked.append(gk)
            continue
        ref = upstream.get(gk)
        key = transform_key(layer, ref.artifact_id, version) if ref and gk not in stale_up else None
        reason = "new" if key is None and gk not in current else \
            "upstream changed" if key is None else rebuild_reason(current.get(gk), key, changed)
        if reason is None:
            out.cached.append(gk)
        else:
            out.stale.append(WorkItem(gk, key, reason, inputs=[ref.artifact_id] if key else []))
    derived = {gk for gk in current if gk.startswith(DERIVED)}
    if extra is not None:
        if out.blocked:  # the board is made from the readings there are; the rest is its gap (§10.2)
            out.partial[extra] = [f"{step.upstream}/{gk}" for gk in out.blocked]
        want = board_key(version, [r.artifact_id for gk, r in current.items() if gk in groups])
        held = current.get(extra)
        if out.stale or held is None or held.materialization_key != want:
            out.stale.append(WorkItem(extra, None, "readings changed", est_calls=0))
        else:
            out.cached.append(extra)
    out.retire = sorted(set(current) - groups - derived)
    return out


def board_key(version: str, reading_ids) -> str:
    """The key of a record made from all the readings of a layer: their ids under the version."""
    return sha256_text(version + "\n" + "\n".join(sorted(reading_ids)))


# Group keys of the records a layer derives from all its readings (loops, facts, the board):
# never planned one by one, replaced or retired as a whole by the layer's replay.
DERIVED = "~"
