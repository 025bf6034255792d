"""Procedural memory of live turns (the Synapse design, 004 §1): open loops — commitments,
todos, questions — with status and evidence, and identity facts about the user.

Both are a pure replay of the user's turns in order, so the same turns always give the same
loops and facts, a forgotten session's turns take their loops and facts with them, and nothing
needs migrating when the rules change. Without a model the rules below are the extractor (every
record says so: `extractor` = RULES); a loop is:
- created by "I will / I'll / I need to / need to / remind me to / TODO …" (or "should I …?"),
- reinforced when a later statement of the same loop (half its key words or more) comes again,
- completed by a turn saying "done / finished / completed / did …" about the loop's key words.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from synix_resources.fingerprints import sha256_text

RULES = "rules (no model used)"
NUDGE_DAYS = 3
_LOOP = re.compile(r"\b(?:(I will|I'll|I need to|I have to|need to|remind me to|TODO:?)\s+)(.+?)(?:[.!?;]|$)", re.I)
_QUESTION = re.compile(r"\b((?:should I|how do I|can I|what should I)\b[^?]*)\?", re.I)
_DONE = re.compile(r"\b(done|finished|completed|did|sent|booked|paid|submitted)\b", re.I)
_STOP = frozenset("""the a an to of for and or on in at my me it this that with about be is was
will just also then really some need have has had did done finished completed tomorrow today
week next""".split())
_FACTS = [
    ("name", re.compile(r"\b(?i:my name is|call me)\s+([A-Z][\w'-]+(?: [A-Z][\w'-]+)?)")),
    ("location", re.compile(r"\b(?i:I live in|I'm based in|I am based in|I moved to)\s+([A-Z][\w'-]+(?:,? [A-Z][\w'-]+)*)")),
    ("job", re.compile(r"\b(?:I work as|my job is|I'm working as)\s+(?:an? )?([^.,!?;]{3,60})", re.I)),
    ("employer", re.compile(r"\b(?i:I work (?:at|for))\s+([A-Z][\w&'-]+(?: [A-Z][\w&'-]+)*)")),
    ("preference", re.compile(r"\bI (?:prefer|love|like|hate|don't like|do not like)\s+([^.,!?;]{3,60})", re.I)),
]
KINDS = {"i will": "commitment", "i'll": "commitment", "remind me to": "reminder"}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if len(w) > 2 and w not in _STOP}


def _overlap(loop_words: set[str], words: set[str]) -> float:
    return len(loop_words & words) / len(loop_words) if loop_words else 0.0


def _day(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def replay(turns: list[dict]) -> tuple[list[dict], list[dict]]:
    """(loops, identity facts) the user's `turns` (in order) add up to, by the rules."""
    return replay_events([rule_event(t) for t in turns if t["role"] == "user"])


def rule_event(t: dict) -> dict:
    """What one user turn says, by the rules: loops it completes (the turn's text when it says
    done/finished/…), loop statements (kind, phrase) and facts (key, value). A model extractor
    answers the same shape (engine/procedural.py), so both replay alike."""
    text = " ".join(t["content"].split())
    return {"turn_id": t["turn_id"], "ts": t["ts"], "session_id": t.get("session_id"),
            "completes": [text] if _DONE.search(text) else [], "mentions": _statements(text),
            "facts": [(key, m.group(1).strip()) for key, rule in _FACTS for m in rule.finditer(text)],
            "extractor": RULES}


def replay_events(events: list[dict]) -> tuple[list[dict], list[dict]]:
    """(loops, identity facts) a sequence of turn events (in order) adds up to."""
    loops: dict[str, dict] = {}
    facts: dict[str, dict] = {}
    for e in events:
        for text in e["completes"]:
            _complete(loops, e, text)
        for kind, phrase in e["mentions"]:
            _mention(loops, e, kind, phrase)
        for key, value in e["facts"]:
            _fact(facts, e, key, value)
    return list(loops.values()), list(facts.values())


def _statements(text: str) -> list[tuple[str, str]]:
    out = [(KINDS.get(m.group(1).lower(), "todo"), m.group(2).strip()) for m in _LOOP.finditer(text)]
    return out + [("question", m.group(1).strip()) for m in _QUESTION.finditer(text)]


def _mention(loops: dict, t: dict, kind: str, phrase: str) -> None:
    words = _words(phrase)
    if not words:
        return
    for loop in loops.values():
        if loop["status"] != "completed" and _overlap(loop["words"], words) >= 0.5:
            loop.update(status="reinforced", reinforced_at=t["ts"], mentions=loop["mentions"] + 1)
            loop["evidence"].append(t["turn_id"])
            return
    loop_id = "loop-" + sha256_text(f"{t['turn_id']}\n{phrase.lower()}")[:12]
    loops[loop_id] = {"loop_id": loop_id, "kind": kind, "text": phrase, "status": "open",
                      "created_at": t["ts"], "reinforced_at": None, "completed_at": None,
                      "mentions": 1, "evidence": [t["turn_id"]], "words": words,
                      "session_id": t.get("session_id"), "extractor": t.get("extractor", RULES)}


def _complete(loops: dict, t: dict, text: str) -> None:
    words = _words(text)
    for loop in loops.values():
        if loop["status"] != "completed" and _overlap(loop["words"], words) >= 0.5 \
                and t["turn_id"] not in loop["evidence"]:
            loop.update(status="completed", completed_at=t["ts"])
            loop["evidence"].append(t["turn_id"])


def _fact(facts: dict, t: dict, key: str, value: str) -> None:
    slot = f"{key}:{value.lower()}" if key == "preference" else key
    old = facts.get(slot)
    if old is not None and old["value"].lower() == value.lower():
        old["evidence"].append(t["turn_id"])
        old["last_seen"] = t["ts"]
        return
    facts[slot] = {"fact_id": slot, "key": key, "value": value, "first_seen": t["ts"], "last_seen": t["ts"],
                   "evidence": [t["turn_id"]], "extractor": t.get("extractor", RULES),
                   "replaces": {"value": old["value"], "evidence": old["evidence"]} if old else None}


def active(loops: list[dict]) -> list[dict]:
    return [public(l) for l in loops if l["status"] != "completed"]


def nudges(loops: list[dict], now: datetime | None = None, days: float = NUDGE_DAYS) -> list[dict]:
    """Loops still open whose last mention is older than `days`: worth bringing up again."""
    now = now or datetime.now(timezone.utc)
    return [public(l) | {"idle_days": round((now - _day(l["reinforced_at"] or l["created_at"])).total_seconds() / 86400, 1)}
            for l in loops if l["status"] != "completed"
            and now - _day(l["reinforced_at"] or l["created_at"]) > timedelta(days=days)]


def public(loop: dict) -> dict:
    return {k: v for k, v in loop.items() if k != "words"}
