"""What a scan of a pipeline's sources yields: a summary per conversation, keyed for Dagster.

A summary (keys, content hash, dates) is all a scan keeps; the full conversation is parsed again
only when its transcript has to be (re)built.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from synix_assets.parsers.model import Conversation
from synix_assets.parsers.textfiles import TEXT_SUFFIXES
from synix_resources.fingerprints import content_hash, sha256_text

EXPORT_SUFFIXES = (".json", ".jsonl", ".zip", ".vscdb")  # .vscdb: Cursor's SQLite chat store
# Hidden folders (.obsidian, .git, .trash) are skipped when a source folder is read, except
# SpecStory's own history folder.
VISIBLE_HIDDEN_DIRS = (".specstory",)
# Bumped when parsing changes what a file yields: cached summaries of older parsers are not reused.
PARSER_VERSION = "parsers-5"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def partition_key(conversation_id: str) -> str:
    """A Dagster-safe partition key for a conversation id (stable, readable when possible)."""
    clean = _SAFE.sub("_", conversation_id.strip())[:80]
    if clean != conversation_id or not clean:
        clean = f"{clean[:60]}-{sha256_text(conversation_id)[:10]}".lstrip("-")
    return clean


@dataclass(frozen=True)
class ConversationSummary:
    key: str
    conversation_id: str
    title: str
    created_at: str | None
    updated_at: str | None
    content_hash: str
    message_count: int
    source: str
    file: str
    format: str
    chars: int


@dataclass
class IngestResult:
    summaries: list[ConversationSummary] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    failed_files: list[tuple[str, str]] = field(default_factory=list)  # (file, one-line error)
    skipped: list[tuple[str, str, str]] = field(default_factory=list)  # (file, conversation, reason)
    fingerprint: str = ""


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def summarise(conv: Conversation, source: str, fmt: str) -> ConversationSummary:
    transcript = conv.transcript()  # built once: its hash is `conv.content_hash()`
    return ConversationSummary(
        key=partition_key(conv.conversation_id), conversation_id=conv.conversation_id,
        title=conv.title or "", created_at=conv.created_at or conv.first_message_at,
        updated_at=conv.updated_at or conv.last_message_at, content_hash=content_hash(transcript),
        message_count=conv.message_count, source=source, file=conv.source_path, format=fmt,
        chars=len(transcript))
