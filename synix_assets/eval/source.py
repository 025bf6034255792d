"""A benchmark case → an export a Synix source reads: one dated conversation per session.

The export is in the Claude format (export-formats.md §2), which the parsers already read, so
the eval memory is built from exactly what a user's export becomes. Each session is one
conversation (`uuid` = `<case>/<session id>`, `created_at` = the session date); each turn is one
message, stamped a second after the previous one so the parser keeps the benchmark's order.
LoCoMo speakers are people, so their names lead the message text ("Caroline: …"): the name is
what a question asks about. Message number n of a transcript (`[#n]`, what the search index
calls the message id) is the n-th non-empty turn, so `turn_map` takes a hit back to turn ids.
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

from synix_assets.eval.data import Case, Session
from synix_resources.values import utc_text

EPOCH = "2000-01-01T00:00:00Z"  # the date of a session the benchmark does not date


def conversation_id(case_id: str, session_id: str) -> str:
    return f"{case_id}/{session_id}"


def written_turns(session: Session) -> list:
    """The turns that become messages (an empty turn would be dropped by the parser)."""
    return [t for t in session.turns if t.text.strip()]


def session_title(session: Session) -> str:
    """The conversation's name in the export: the session id (the benchmark has no titles).
    The raw-RAG baseline titles its session documents with it too, so the memory's transcripts
    and raw RAG's documents are the same units."""
    return session.session_id


def _stamp(base: datetime, offset: int) -> str:
    try:
        return utc_text(base + timedelta(seconds=offset))
    except OverflowError:  # a session dated in the last minute of 9999: its later turns share it
        return utc_text(datetime.max)


def session_conversation(case_id: str, session: Session) -> dict:
    base = datetime.fromisoformat((session.date or EPOCH).replace("Z", "+00:00")).astimezone(timezone.utc)
    messages = []
    cid = conversation_id(case_id, session.session_id)
    for i, turn in enumerate(written_turns(session)):
        text = f"{turn.speaker}: {turn.text}" if turn.speaker not in ("user", "assistant") else turn.text
        stamp = _stamp(base, i)
        messages.append({"uuid": f"{cid}#{turn.turn_id}", "sender": "human" if turn.role == "user" else "assistant",
                         "text": text, "content": [{"type": "text", "text": text}],
                         "created_at": stamp, "updated_at": stamp, "attachments": [], "files": []})
    return {"uuid": cid, "name": session_title(session), "created_at": _stamp(base, 0),
            "updated_at": _stamp(base, max(0, len(messages) - 1)), "chat_messages": messages}


def write_export(case: Case, path: Path) -> bool:
    """Write the case's export (atomically); False when the file already holds exactly this."""
    convs = [session_conversation(case.case_id, s) for s in case.sessions if written_turns(s)]
    text = json.dumps(convs, ensure_ascii=False, indent=0)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False  # unchanged: the build's file fingerprint stays the same
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return True


def turn_map(case: Case) -> dict[str, tuple[str, list[str]]]:
    """conversation id → (session id, turn id of message number n at index n - 1)."""
    return {conversation_id(case.case_id, s.session_id): (s.session_id, [t.turn_id for t in written_turns(s)])
            for s in case.sessions}
