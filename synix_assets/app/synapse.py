"""The brief's Tier 1 as the Synapse design defines it (004 §5), for a memory whose live source
keeps a working window (`pipeline.source(..., kind="live", window=12)`, the synapse template):
identity facts, working memory (the window's turns), the rolling summary of the turns before it,
active open loops and nudge candidates.

Tier 1 is read from the live inbox (the system of record for turns, as Postgres is Synapse's),
so it holds what was said a minute ago even before any build. Sessions that were forgotten
(the store's tombstones) contribute nothing: no turn, loop, fact or summary line.
"""
from __future__ import annotations

from datetime import datetime

from synix_assets.forget.plan import TOMBSTONES
from synix_resources.live import procedural, window
from synix_resources.live.inbox import Inbox



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


def tier1(paths, pipeline, session_id: str | None = None, *, now: datetime | None = None) -> dict | None:
    """Tier 1 for `session_id` (default: the most recently active session), or None when the
    pipeline keeps no working window."""
    source = windowed_source(pipeline)
    if source is None:
        return None
    fold_due(paths, pipeline)
    path = pipeline.resolve(source.path)
    gone = forgotten(paths)
    empty = {"identity": [], "working_memory": [], "rolling_summary": None, "active_loops": [],
             "nudge_candidates": [], "session_id": None, "extractor": procedural.RULES,
             "window": source.window}
    if not path.is_file():
        return empty
    inbox = Inbox(path, read_only=True)
    try:
        loops, facts = procedural.replay([t for t in inbox.user_turns() if t["session_id"] not in gone])
        session = session_id or inbox.latest_session()
        if session in gone:
            session = None
        turns = window.working_memory(inbox, session, source.window) if session else []
        summary = window.rolling_summary(inbox, session) if session else None
    finally:
        inbox.close()
    return {**empty, "session_id": session, "identity": facts,
            "working_memory": [{k: t[k] for k in ("turn_id", "role", "ts", "content")} for t in turns],
            "rolling_summary": summary, "active_loops": procedural.active(loops),
            "nudge_candidates": procedural.nudges(loops, now), "loops": [procedural.public(l) for l in loops]}


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


_PIPELINES: dict = {}


def brief_tier1(paths, session_id: str | None = None) -> dict | None:
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
    t1 = tier1(paths, pipeline, session_id)
    if t1 is not None:
        t1["text"] = tier1_text(t1)
    return t1
