"""The working window of a live session (the Synapse design, 004 §1 and §4): the last `size`
turns stay verbatim; every older turn is folded into the session's rolling summary exactly once.

A fold reads the current summary and the evicted turns not folded yet, computes the next summary
(slow: a model call, outside any transaction), then commits the new summary row and one `folded`
row per turn in ONE transaction that first checks the summary it started from is still the
newest. So a process killed mid-fold leaves nothing (the next fold redoes it), two folders racing
cannot both commit, and a turn's `folded` primary key forbids folding it twice.
"""
from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone
from typing import Callable

WINDOW = 12  # messages kept verbatim (6 user + assistant exchanges)
SUMMARY_CHARS = 4000  # the extractive summary keeps its newest lines within this
LINE_CHARS = 200
EXTRACTIVE = "extractive (no model: one line per folded turn)"

# summarise(prior summary text or "", evicted turns) -> (new summary text, how it was made)
Summariser = Callable[[str, list[dict]], tuple[str, str]]


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def extractive_fold(prior: str, turns: list[dict]) -> tuple[str, str]:
    """The offline summary: the prior lines plus each folded turn's first sentence, newest kept."""
    lines = [l for l in prior.splitlines() if l.strip()]
    for t in turns:
        first = re.split(r"(?<=[.!?])\s", " ".join(t["content"].split()), maxsplit=1)[0]
        lines.append(f"[{t['turn_id']}] {t['role']}: {first[:LINE_CHARS]}")
    while len("\n".join(lines)) > SUMMARY_CHARS and len(lines) > 1:
        lines.pop(0)
    return "\n".join(lines), EXTRACTIVE


def working_memory(inbox, session_id: str, size: int = WINDOW) -> list[dict]:
    """The turns in the window: the session's last `size`."""
    return inbox.turns(session_id, last=size)


def rolling_summary(inbox, session_id: str) -> dict | None:
    """The session's current rolling summary: text, fold count, every turn folded so far."""
    with inbox._read("reading the rolling summary") as conn:
        rows = conn.execute("SELECT seq, text, turn_ids, folded_at, how FROM summaries WHERE "
                            "session_id = ? ORDER BY seq", (session_id,)).fetchall()
    if not rows:
        return None
    seq, text, _, folded_at, how = rows[-1]
    folded = [t for r in rows for t in json.loads(r[2])]
    return {"session_id": session_id, "folds": seq, "text": text, "folded_turn_ids": folded,
            "folded_at": folded_at, "how": how}


def evicted(turns: list[dict], size: int, done=frozenset()) -> list[dict]:
    """The turns (in order) older than the window's last `size`, less those in `done` (folded
    already). The one rule of the window, for the inbox and for the build's fold layer."""
    return [t for t in turns[:max(0, len(turns) - size)] if t["turn_id"] not in done]


def pending(inbox, session_id: str, size: int = WINDOW) -> list[dict]:
    """Turns evicted from the window (older than its last `size`) and not folded yet."""
    turns = inbox.turns(session_id)
    if not evicted(turns, size):
        return []
    with inbox._read("reading folded turns") as conn:
        done = {r[0] for r in conn.execute("SELECT turn_id FROM folded WHERE session_id = ?", (session_id,))}
    return evicted(turns, size, done)


def fold(inbox, session_id: str, summarise: Summariser = extractive_fold, *, size: int = WINDOW,
         now: float | None = None) -> dict | None:
    """Fold the session's evicted, unfolded turns into its rolling summary (see the module
    docstring). Returns what was folded, or None when nothing was due or another fold won."""
    todo = pending(inbox, session_id, size)
    if not todo:
        return None
    prior = rolling_summary(inbox, session_id)
    start = prior["folds"] if prior else 0
    text, how = summarise(prior["text"] if prior else "", todo)
    now = time.time() if now is None else now
    ids = [t["turn_id"] for t in todo]
    with inbox._write("folding evicted turns into the rolling summary") as conn:
        newest = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM summaries WHERE session_id = ?",
                              (session_id,)).fetchone()[0]
        if newest != start:  # another folder committed first: its summary stands
            return None
        conn.execute("INSERT INTO summaries (session_id, seq, text, turn_ids, folded_at, how) "
                     "VALUES (?, ?, ?, ?, ?, ?)", (session_id, start + 1, text, json.dumps(ids), _iso(now), how))
        conn.executemany("INSERT INTO folded (turn_id, session_id, seq) VALUES (?, ?, ?)",
                         [(t, session_id, start + 1) for t in ids])
    return {"session_id": session_id, "seq": start + 1, "turn_ids": ids, "how": how}


def fold_all(inbox, summarise: Summariser = extractive_fold, *, size: int = WINDOW,
             now: float | None = None) -> list[dict]:
    """Fold every session with turns past its window (the janitor's pass)."""
    with inbox._read("reading sessions") as conn:
        rows = conn.execute("SELECT session_id FROM sessions WHERE turns > ? ORDER BY session_id",
                            (size,)).fetchall()
    return [r for r in (fold(inbox, s, summarise, size=size, now=now) for (s,) in rows) if r]
