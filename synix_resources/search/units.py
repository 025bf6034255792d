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
# Bumped when how a document is cut into units changes (the text a message is indexed as): a
# caller that keys its index on it (synix's search projection, `DOC_FORMAT`) rewrites them all.
UNIT_FORMAT = "relayed-speakers-1"
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


# A speaker's name opening a message: up to four words of letters (digits, . ' - inside), then ": ".
_NAME_LABEL = re.compile(r"[^\W\d_][\w.'’-]*(?: [\w.'’-]+){0,3}: ")
NAME_CHARS = 40


def _message_line(msg: dict, self_named: bool = False) -> str:
    speaker = msg.get("speaker") or msg.get("role") or ""
    text = msg.get("text") or ""
    if self_named:  # the text names its own speaker ("Caroline: …"): the role is only the channel
        return text
    return f"{speaker}: {text}" if speaker else text


def relayed(messages) -> bool:
    """True when every message of a transcript opens with its speaker's name ("Caroline: …"):
    a chat of named people exported as two roles (a multi-party chat pasted into a two-role
    export, the eval's LoCoMo sessions). Its messages are then indexed as the people said them
    ("Caroline: …", not "User: Caroline: …"), exactly as the same turns indexed with their
    speakers would be: the role is on half the lines and says nothing about the words, yet it
    lengthened every line for BM25 and shifted every vector."""
    texts = [str(m.get("text") or "") for m in messages]
    def named(text: str) -> bool:
        label = _NAME_LABEL.match(text)
        return label is not None and label.end() <= NAME_CHARS + 2

    return len(texts) >= 2 and all(named(t) for t in texts)


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
        named = relayed(doc.messages)
        lines = [_message_line(m, named) for m in doc.messages]
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
