"""Parsed-conversation data model shared by every export parser.

A `Conversation` is what one chat export entry becomes after parsing: the messages of the
branch the user saw, in order, as plain text. `transcript()` is the canonical text form; its
content hash is what downstream layers fingerprint, so it must not depend on where the file
lives or when it was parsed.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from synix_resources.errors import ConversationSkipped
from synix_resources.fingerprints import content_hash
from synix_resources.text import escape_invalid, is_valid_text
from synix_resources.values import HugeInt, utc_iso

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

ROLES = ("user", "assistant", "tool", "system")
# Real exports nest under 20 levels (ChatGPT: 8). Anything far deeper is damaged or hostile, and
# would overflow Python's recursion limit in json, repr or the store, so it is refused up front.
MAX_NESTING = 100
_ROLE_LABELS = {"user": "User", "assistant": "Assistant", "tool": "Tool", "system": "System"}


def entry_id(raw: Any, *keys: str) -> str | None:
    """The first non-empty of `keys` in an export entry, as text; None for a non-object entry."""
    if not isinstance(raw, dict):
        return None
    value = next((raw[k] for k in keys if raw.get(k)), None)
    return str(value) if value else None


def checked_entry_id(raw: Any, *keys: str) -> str:
    """`entry_id`, raising `ConversationSkipped` (naming what is missing) when there is none."""
    if not isinstance(raw, dict):
        raise ConversationSkipped(f"entry is a {type(raw).__name__}, not an object")
    conv_id = entry_id(raw, *keys)
    if not conv_id:
        raise ConversationSkipped(f"entry has no {' or '.join(keys)}")
    return conv_id


def entry_problem(value: Any, limit: int = MAX_NESTING) -> str | None:
    """Why a decoded export entry cannot be stored safely, or None: lists/objects nested more
    than `limit` levels (json, repr and the store would overflow Python's recursion limit),
    text with a lone surrogate (JSON may escape one, e.g. "\\udcff", in a file that is valid
    UTF-8; SQLite cannot store it), or an integer too long for Python to read (`HugeInt`, from
    `load_json`). Iterative, so a 10,000-level value does not overflow the stack while being
    measured. The field is named by its path, e.g. `mapping.a.message`."""
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, str):
            bad = _LONE_SURROGATE.search(item)
            if bad:
                return f"has a lone surrogate escape \\u{ord(bad.group()):04x} in {field_name(where)}"
            continue
        if isinstance(item, HugeInt):
            return f"has {item} in {field_name(where)}"
        if depth > limit:
            return f"is nested more than {limit} levels deep"
        # pushed last to first, so the first problem in the file's order is the one reported
        if isinstance(item, dict):
            for key, child in reversed(item.items()):
                stack.append((child, depth + 1, (where, key)))
                stack.append((key, depth, (where, key)))
        elif isinstance(item, list):
            stack.extend((item[i], depth + 1, (where, i)) for i in range(len(item) - 1, -1, -1))
    return None


def spell_surrogates(text: str) -> str:
    """`text` with each lone surrogate spelled as its JSON escape (`\\udcff`), so it can be
    stored and printed and still reads as what the export holds."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def field_name(where: Any) -> str:
    """`(((None, "mapping"), "a"), "parts"), 0)` → "field mapping.a.parts[0]" (clipped, printable)."""
    steps: list[Any] = []
    while where is not None:
        where, step = where
        steps.append(step)
    if not steps:
        return "the entry itself"
    text = ""
    for step in reversed(steps):
        text += f"[{step}]" if isinstance(step, int) else f".{step}" if text else str(step)
    text = spell_surrogates(text)
    return "field " + (text if len(text) <= 80 else text[:79] + "…")


def checked_time(value: Any, name: str) -> str | None:
    """`utc_iso` of a date field: a date that does not parse or that UTC cannot hold (past 9999,
    before 1970 as epoch seconds) is unknown, as a missing one is; NaN or Infinity (Python writes
    them into JSON) is damage: `ConversationSkipped` naming the field. (An integer too long to
    read is damage too, found in the whole entry by `entry_problem`.)"""
    if isinstance(value, float) and not math.isfinite(value):
        spelled = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
        raise ConversationSkipped(f"{name} is {spelled}, not a date")
    return utc_iso(value)


def text_or_none(value: Any) -> str | None:
    """A title-like field as text: a string or number as is, anything else (a list or object in
    a title slot is damage, not a title) None."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def printable_path(path: Any) -> str:
    """A file name that can be printed and stored: bytes that are not UTF-8 are shown as \\xNN."""
    return escape_invalid(os.fspath(path))


def name_is_utf8(path: Any) -> bool:
    return is_valid_text(os.fspath(path))


@dataclass
class Message:
    message_id: str
    role: str  # user | assistant | tool | system
    author: str
    created_at: str | None  # UTC `YYYY-MM-DDTHH:MM:SSZ`
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def label(self) -> str:
        base = _ROLE_LABELS.get(self.role, self.role.title())
        if self.author and self.author not in (self.role, "human") and self.role == "tool":
            return f"{base} ({self.author})"
        return base


@dataclass
class Conversation:
    conversation_id: str
    title: str | None
    created_at: str | None
    updated_at: str | None
    source_format: str  # chatgpt | claude | claude-code
    source_path: str
    messages: list[Message] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def message_count(self) -> int:
        return len(self.messages)

    @property
    def first_message_at(self) -> str | None:
        stamps = [m.created_at for m in self.messages if m.created_at]
        return min(stamps) if stamps else None

    @property
    def last_message_at(self) -> str | None:
        stamps = [m.created_at for m in self.messages if m.created_at]
        return max(stamps) if stamps else None

    def transcript(self) -> str:
        """Readable, deterministic text. Messages are numbered from 1 so provenance can cite
        `#3-#7`. Excludes source_path and updated_at so a moved or re-opened export hashes the same."""
        started = self.created_at or self.first_message_at
        lines = [
            f"# {self.title or '(untitled)'}",
            f"Conversation: {self.conversation_id}",
            f"Date: {_human_time(started) if started else 'unknown'}",
            f"Source: {self.source_format}",
        ]
        for number, message in enumerate(self.messages, start=1):
            stamp = f" {_human_time(message.created_at)}" if message.created_at else ""
            lines.append("")
            lines.append(f"[#{number}{stamp}] {message.label()}:")
            lines.append(message.text)
        return "\n".join(lines) + "\n"

    def content_hash(self) -> str:
        return content_hash(self.transcript())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Conversation":
        messages = [Message(**m) for m in data.get("messages", [])]
        return cls(**{**data, "messages": messages})


def _human_time(iso: str) -> str:
    # "2024-01-05T10:02:33Z" → "2024-01-05 10:02 UTC"
    return f"{iso[:10]} {iso[11:16]} UTC"


@dataclass
class ParseReport:
    path: str
    format: str
    conversations: int = 0
    messages: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    bytes: int = 0
