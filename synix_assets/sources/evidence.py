"""Feeding the evidence ledger from what a project already reads: every message of every export
conversation and every turn posted to a live inbox becomes one event.

Idempotent and cheap to repeat: an event's id is content-addressed (ledger/events.py), so a
re-read export appends nothing; an export file whose size and mtime are those of its last feed
is not opened at all, and an inbox is read from the last turn fed (marks in the ledger).
Forgotten conversations are never fed again: the ledger refuses them, and the store's forget
tombstones skip them before they are even parsed.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from synix_assets.parsers.detect import iter_conversations
from synix_assets.parsers.model import Conversation, ParseReport, printable_path
from synix_assets.sources.model import PARSER_VERSION
from synix_assets.sources.reader import SourceReader, source_root
from synix_resources import pii
from synix_resources.errors import ExportFormatError
from synix_resources.ledger.events import Event, event_id
from synix_resources.ledger.store import EvidenceLedger
from synix_resources.live.inbox import Inbox

log = logging.getLogger(__name__)
MESSAGE = "message"          # event_type of an export conversation's message
LIVE_TURN = "turn"           # event_type of a turn posted to a live inbox
TURN_BATCH = 1000
APPEND_BATCH = 5000


@dataclass
class FeedReport:
    appended: int = 0
    files_read: int = 0
    files_unchanged: int = 0
    turns_read: int = 0
    failed: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"appended": self.appended, "files_read": self.files_read,
                "files_unchanged": self.files_unchanged, "turns_read": self.turns_read,
                "failed": self.failed}


def message_events(conv: Conversation, source: str, user_id: str | None,
                   redacting: bool = False) -> list[Event]:
    """One event per message with text, in order; `source` is the export's format (chatgpt,
    claude, claude-code, …) as design 003 names sources, the pipeline's source in metadata.
    `redacting`: the merge reading this source has pii="redact", so the ledger holds the text
    as the transcripts do (placeholders), never what redaction keeps out of everything built."""
    out = []
    for n, msg in enumerate(conv.messages, start=1):
        if not msg.text.strip():
            continue
        external = f"{conv.conversation_id}/{msg.message_id or n}"
        stamp = msg.created_at or conv.created_at
        text, title = msg.text, conv.title or ""
        if redacting:
            text, title = pii.redact(text)[0], pii.redact(title)[0]
        fields = dict(source=conv.source_format, event_type=MESSAGE, content=text, timestamp=stamp,
                      user_id=user_id, title=title, external_id=external,
                      conversation_id=conv.conversation_id)
        out.append(Event(id=event_id(**fields), **fields, metadata={
            "role": msg.role, "author": msg.author, "n": n, "pipeline_source": source}))
    return out


def turn_event(turn: dict, source: str, redacting: bool = False) -> Event:
    content = pii.redact(turn["content"])[0] if redacting else turn["content"]
    fields = dict(source="live", event_type=LIVE_TURN, content=content, timestamp=turn["ts"],
                  user_id=turn["user_id"], title="", external_id=turn["turn_id"],
                  conversation_id=turn["session_id"])
    return Event(id=event_id(**fields), **fields,
                 metadata={"role": turn["role"], "pipeline_source": source, **turn["metadata"]})


def feed(pipeline, store, ledger: EvidenceLedger) -> FeedReport:
    """Append what is new in the pipeline's exports and live inboxes to `ledger`."""
    report = FeedReport()
    tombstones = set(store.get_meta("forget:tombstones") or [])
    user = pipeline.agent or None
    redacted = redacted_sources(pipeline)
    for source, path, fmt, mark_name, seen, _ in unread_files(pipeline, store, ledger, report):
        try:
            batch: list[Event] = []  # one durable transaction per APPEND_BATCH events, not per conversation
            for conv in iter_conversations(path, fmt, ParseReport(path=str(path), format=fmt),
                                           root=source_root(pipeline, source)):
                if conv.conversation_id not in tombstones:
                    batch += message_events(conv, source, user, source in redacted)
                if len(batch) >= APPEND_BATCH:
                    report.appended += len(ledger.append(batch).appended)
                    batch = []
            report.appended += len(ledger.append(batch).appended) if batch else 0
        except (ExportFormatError, OSError) as exc:  # that file only; the scan reports it too
            report.failed.append(exc.one_line() if isinstance(exc, ExportFormatError)
                                 else f"{printable_path(path)}: {exc}")
            continue
        ledger.set_mark(mark_name, seen)
        report.files_read += 1
    for src in pipeline.sources.values():
        if src.kind == "live":
            _feed_inbox(pipeline.resolve(src.path), src.name, ledger, report, src.name in redacted)
    return report


def unread_files(pipeline, store, ledger: EvidenceLedger, report: FeedReport | None = None):
    """(source, path, format, mark name, mark, size) of each export file the ledger has not read as
    it is now (its size and mtime differ from its last feed's); counted in `report`."""
    report = report if report is not None else FeedReport()
    reader = SourceReader(pipeline, store)
    for source, path, fmt in reader.files(lambda exc: report.failed.append(exc.one_line())):
        try:
            stat = path.stat()
        except OSError as exc:  # gone since it was listed: the scan reports it
            report.failed.append(f"{printable_path(path)}: {exc}")
            continue
        # a file name that is not UTF-8 is spelled out: SQLite takes no lone surrogate
        mark_name = f"export:{source}:{printable_path(path)}"
        seen = f"{stat.st_size}:{stat.st_mtime_ns}:{PARSER_VERSION}"
        if ledger.mark(mark_name) == seen:
            report.files_unchanged += 1
            continue
        yield source, path, fmt, mark_name, seen, stat.st_size


def unread_bytes(pipeline, store, ledger: EvidenceLedger) -> int:
    """How much the next feed reads from the exports (what decides where it runs)."""
    return sum(unread[-1] for unread in unread_files(pipeline, store, ledger))


def redacted_sources(pipeline) -> set[str]:
    """The sources a merge with pii="redact" reads."""
    return {name for step in pipeline.steps.values()
            if step.kind == "merge" and step.config.get("pii") == "redact" for name in step.from_}


def _feed_inbox(path: Path, source: str, ledger: EvidenceLedger, report: FeedReport,
                redacting: bool) -> None:
    if not path.is_file():
        return
    mark_name = f"live:{source}:{path}"
    position = int(ledger.mark(mark_name) or 0)
    inbox = Inbox(path, read_only=True)
    try:
        while turns := inbox.turns_after(position, limit=TURN_BATCH):
            report.appended += len(ledger.append(turn_event(t, source, redacting) for t in turns).appended)
            report.turns_read += len(turns)
            position = turns[-1]["seq"]
            ledger.set_mark(mark_name, str(position))
    finally:
        inbox.close()


SYNTHESISED = "synthesised_seq"  # the ledger's high-water mark when the last clean build began


def unsynthesised(ledger: EvidenceLedger) -> int:
    """How many events arrived since the last clean build began (what the 15-minute synthesis
    schedule waits for)."""
    return ledger.count(since_seq=int(ledger.mark(SYNTHESISED) or 0))
