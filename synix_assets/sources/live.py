"""A `live` source: the sessions its inbox's outbox handed to the build, as dated conversations.

Each handed session becomes one `Conversation` (id = session id, so every version of a session is
one partition and the merge rule keeps the newest), holding every turn up to the handed version;
each message keeps the posted turn id, and the transcript's metadata lists them in order, so
provenance goes from core memory down to the turns an agent posted. A handed version's turns
never change (later turns belong to later versions), so its summary is computed once and cached
in the store's meta table like an export file's.
"""
from __future__ import annotations

from pathlib import Path

from synix_assets.parsers.model import Conversation, Message
from synix_assets.sources.model import ConversationSummary, summarise
from synix_resources.fingerprints import sha256_text
from synix_resources.live.inbox import Inbox

LIVE_FORMAT = "live"
TITLE_CHARS = 80


def session_conversation(inbox: Inbox, session_id: str, version: int) -> Conversation:
    """The conversation of a session as of `version`: its turns, numbered as posted."""
    turns = inbox.turns(session_id, up_to_version=version)
    info = inbox.session(session_id) or {}
    first_user = next((t["content"] for t in turns if t["role"] == "user"), turns[0]["content"] if turns else "")
    title = " ".join(first_user.split())
    title = title if len(title) <= TITLE_CHARS else title[:TITLE_CHARS].rstrip() + "…"
    messages = [Message(message_id=t["turn_id"], role=t["role"], author=t["role"], created_at=t["ts"],
                        text=t["content"], metadata=t["metadata"]) for t in turns]
    stamps = [t["ts"] for t in turns]
    return Conversation(
        conversation_id=session_id, title=title or f"Session {session_id}",
        created_at=min(stamps) if stamps else None, updated_at=max(stamps) if stamps else None,
        source_format=LIVE_FORMAT, source_path=str(inbox.path), messages=messages,
        metadata={"turn_ids": [t["turn_id"] for t in turns], "session_version": version,
                  **({"user_id": info["user_id"]} if info.get("user_id") else {})})


def open_inbox(path: Path) -> Inbox | None:
    """The inbox at `path` for reading, or None when nothing was ever posted there."""
    return Inbox(path, read_only=True) if path.is_file() else None


def live_summaries(reader, source: str, path: Path) -> tuple[list, str]:
    """(summaries of the handed sessions, a fingerprint of what was handed)."""
    inbox = open_inbox(path)
    if inbox is None:
        return [], "live:empty"
    try:
        handed = inbox.handed()
        out = []
        for session_id, version in handed:
            meta_key = f"ingest:live:{source}:{path}:{session_id}:{version}"
            cached = reader.store.get_meta(meta_key)
            if cached is None:
                conv = session_conversation(inbox, session_id, version)
                cached = summarise(conv, source, LIVE_FORMAT).__dict__
                reader.store.set_meta(meta_key, cached)
            out.append(ConversationSummary(**cached))
    finally:
        inbox.close()
    return out, sha256_text("\n".join(f"{s}:{v}" for s, v in handed))


def live_conversation(summary) -> Conversation:
    """The conversation a live summary describes (the handed version with that content)."""
    from synix_resources.errors import ExportFormatError

    inbox = open_inbox(Path(summary.file))
    if inbox is not None:
        try:
            for session_id, version in inbox.handed():
                if session_id == summary.conversation_id:
                    for v in range(version, 0, -1):
                        conv = session_conversation(inbox, session_id, v)
                        if conv.content_hash() == summary.content_hash:
                            return conv
        finally:
            inbox.close()
    raise ExportFormatError(f"{summary.file}: session {summary.conversation_id} vanished while building",
                            hint="the session was forgotten during the build; run again")
