"""Cutting a document into retrieval units.

A transcript that comes with its messages gets one unit per message, searched with its
neighbouring messages as a lower-weighted `context` column (BM25F-style), so a hit names the exact
messages while a question whose words are spread over two adjacent turns still matches. Other
documents are cut into ~120-word paragraph chunks.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from synix_resources.search.documents import IndexDoc

CONTEXT_MESSAGES = 2          # neighbours on each side that feed a message's context column
EMBED_CONTEXT = 0             # neighbours embedded with a message: 1 helped session recall
                              # (S@5 .76→.82) but blurred turn ranking (T@10 .55→.48) on LoCoMo
CHUNK_WORDS = 120             # size of a non-transcript chunk
# Bumped when what `units.title` holds changes, so `sync` rewrites old indexes' unit titles.
UNIT_TITLE_FORMAT = "title+date-1"


@dataclass(frozen=True)
class Unit:
    ord: int
    first_msg: int | None
    last_msg: int | None
    msg_ids: tuple
    body: str
    context: str
    embed_text: str


def _message_line(msg: dict) -> str:
    speaker = msg.get("speaker") or msg.get("role") or ""
    text = msg.get("text") or ""
    return f"{speaker}: {text}" if speaker else text


def _chunks(text: str, size: int = CHUNK_WORDS) -> list[str]:
    """Paragraph-aligned chunks of about `size` words; a long paragraph is split by words."""
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for para in [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]:
        words = para.split()
        if count and count + len(words) > size:
            chunks.append("\n\n".join(current))
            current, count = [], 0
        while len(words) > size:
            chunks.append(" ".join(words[:size]))
            words = words[size:]
        if words:
            current.append(" ".join(words))
            count += len(words)
    if current:
        chunks.append("\n\n".join(current))
    return chunks or [text]


def unit_title(title: str | None, date: str | None) -> str:
    """The text of a unit's `title` column: the document title plus its date spelled out
    ("8 May 2023"), so a query naming a day or month matches the conversation held then."""
    return " ".join(part for part in (title or "", _date_words(date)) if part)


def _date_words(date: str | None) -> str:
    if not date:
        return ""
    try:
        when = datetime.fromisoformat(str(date).replace("Z", "+00:00"))
    except ValueError:
        return ""
    return f"{when.day} {when.strftime('%B')} {when.year}"


def build_units(doc: IndexDoc) -> list[Unit]:
    if doc.messages:
        lines = [_message_line(m) for m in doc.messages]
        units = []
        for i, msg in enumerate(doc.messages):
            lo, hi = max(0, i - CONTEXT_MESSAGES), min(len(lines), i + CONTEXT_MESSAGES + 1)
            context = "\n".join(lines[j] for j in range(lo, hi) if j != i)
            index = int(msg.get("index", i))
            lo, hi = max(0, i - EMBED_CONTEXT), min(len(lines), i + EMBED_CONTEXT + 1)
            units.append(Unit(i, index, index, (str(msg.get("id", index)),), lines[i], context,
                               "\n".join(lines[lo:hi])))
        return units
    return [Unit(i, None, None, (), chunk, "", chunk)
            for i, chunk in enumerate(_chunks(doc.content))]
