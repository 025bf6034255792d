"""A Markdown or plain-text note (Obsidian vault, any notes folder) → one `Conversation`
(format notes: export-formats.md §11).

A note is the user's own writing, so it becomes one `user` message. Its id is the path inside
the notes folder (stable across machines and copies); its title is the front matter's `title`,
else the file name without the suffix (Obsidian's convention), else the first heading. Dates
come from front matter (`created`, `date`, `published`, `clipped`; `updated`/`modified` for the
last change), else a date in the file name, else the file's modification time (recorded as such:
git and copies do not keep it). Front matter stays readable as `key: value` lines above the
body, so a meeting's people and topics are searchable; wikilinks and tags are listed in metadata.
"""
from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any, Callable

from synix_resources.errors import ConversationSkipped
from synix_resources.values import as_utc, utc_iso, utc_text

from .frontmatter import split_front_matter
from .model import Conversation, Message

FORMAT = "notes"
_HEADING = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)
_NAME_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
# An embed's `!` is left out: the link is the same, and a leading literal lets the search skip ahead.
_WIKILINK = re.compile(r"\[\[([^\]|#\n]+)(?:#[^\]|\n]*)?(?:\|[^\]\n]*)?\]\]")
# A tag is `#word` at the start or after whitespace.
_TAG = re.compile(r"(?<!\S)#([^\s#.,;:!?()\[\]{}'\"`]+)")
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_TAG_SPLIT = re.compile(r"[,\s]+")
_CREATED_KEYS = ("created", "date", "published", "clipped", "created_at", "creation_date")
_UPDATED_KEYS = ("updated", "modified", "updated_at", "last_modified")
_MAX_LINKS = 200
_PROPERTY_CHARS = 300


def parse_note(text: str, note_id: str, stem: str, source_path: str,
               mtime: Callable[[], float | None]) -> Conversation:
    """One note's text → a conversation; `ConversationSkipped` when it holds nothing.
    `mtime` gives the file's modification time: asked only when the note has no date."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    if text[:1] == "\ufeff":
        text = text.lstrip("\ufeff")
    front, body, front_problem = split_front_matter(text)
    metadata: dict[str, Any] = {"note_path": note_id}
    if front_problem:
        metadata["front_matter_error"] = front_problem
    shown = ""
    created = updated = None
    if front:
        metadata["properties"], shown = _properties(front)
        created, updated = _date_of(front, _CREATED_KEYS), _date_of(front, _UPDATED_KEYS)
    title = _text(front.get("title")) if front else None
    title = title or stem or _first_heading(body)
    date_source = "front matter"
    if created is None:
        named = _NAME_DATE.search(stem)
        created = _valid_day(named) if named else None
        date_source = "file name"
    if created is None:
        modified = mtime()
        if modified is not None:
            created, date_source = utc_iso(modified), "file modification time"
    if created is not None:
        metadata["date_source"] = date_source
    updated = updated or created

    if "[[" in text:
        # sorted by (lower, as written): links differing only in case keep one order whatever
        # the set's order (two stable sorts: as written, then lower case)
        links = sorted(set(map(str.strip, _WIKILINK.findall(text))))
        links.sort(key=str.lower)
        if links:
            metadata["links"] = links[:_MAX_LINKS]
    tags = _tags_in(body)
    if front and "tags" in front:
        tags.update(_tags(front["tags"]))
    if tags:
        metadata["tags"] = sorted(tags)[:_MAX_LINKS]

    body = body.strip()
    content = f"{shown}\n\n{body}" if shown and body else shown or body
    if not content:
        raise ConversationSkipped("empty conversation")
    message = Message(message_id=note_id, role="user", author="note", created_at=created,
                      text=content, metadata={})
    return Conversation(conversation_id=note_id, title=title or None, created_at=created,
                        updated_at=updated, source_format=FORMAT, source_path=source_path,
                        messages=[message], metadata=metadata)


def _plain(value: Any, depth: int = 0) -> Any:
    """A front-matter value as JSON-safe data (dates as ISO text), bounded in depth."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if depth > 8:
        return str(value)[:_PROPERTY_CHARS]
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [v if type(v) is str else _plain(v, depth + 1) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _date_of(front: dict, keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = front.get(key)
        if value is None:  # most keys are absent: one test for them
            continue
        if type(value) is date:  # what the front-matter fast path reads `2023-09-12` as
            return f"{value.isoformat()}T00:00:00Z"
        if isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, datetime):  # past 9999 once in UTC: unknown, the next key decides
            stamp = as_utc(value)
            if stamp is not None:
                return utc_text(stamp)
            continue
        if isinstance(value, date):
            return f"{value.isoformat()}T00:00:00Z"
        if isinstance(value, str):
            found = utc_iso(value)
            if found is None:
                day = _NAME_DATE.search(value)
                found = _valid_day(day) if day else None
            if found:
                return found
    return None


def _valid_day(match: re.Match) -> str | None:
    try:
        day = date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None
    return f"{day.isoformat()}T00:00:00Z"


def _first_heading(body: str) -> str | None:
    found = _HEADING.search(body)
    return found.group(1).strip() if found else None


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        return [t.lstrip("#") for t in _TAG_SPLIT.split(value) if t.strip("#")]
    if isinstance(value, list):
        return [str(t).lstrip("#") for t in value if t is not None and str(t).strip("#")]
    return []


def _tags_in(body: str) -> set[str]:
    if "#" not in body:
        return set()
    if "`" in body:  # `#include` in a code block is not a tag
        body = _CODE.sub(" ", body)
    return set(_TAG.findall(body))


def _properties(front: dict) -> tuple[dict[str, Any], str]:
    """The front matter as JSON-safe properties, and their `key: value` lines for the text
    (`title` left out: it is the title). One pass, the common value types (text, lists of
    text, days) inline: this runs for every note with front matter."""
    properties: dict[str, Any] = {}
    lines: dict[str, str] = {}  # by key, so a key YAML repeats as `1` and `'1'` keeps one place
    for key, value in front.items():
        if type(key) is not str:
            key = str(key)
        kind = type(value)
        if kind is str:
            shown = value
        elif kind is list:
            try:  # a list of text, the common case: joined as is, without a pass over it in Python
                shown = ", ".join(value)
            except TypeError:
                value = [v if type(v) is str else _plain(v, 1) for v in value]
                shown = _shown(value)
            else:
                if "" in value:
                    shown = ", ".join([v for v in value if v])
        elif kind is date:
            value = shown = value.isoformat()
        else:
            value = _plain(value)
            shown = _shown(value)
        properties[key] = value
        shown = " ".join(shown.split())
        if len(shown) > _PROPERTY_CHARS:
            shown = shown[:_PROPERTY_CHARS - 1] + "…"
        lines[key] = f"{key}: {shown}" if shown and key != "title" else ""
    return properties, "\n".join(filter(None, lines.values()))


def _shown(value: Any) -> str:
    """A property value (after `_plain`) as one line of text, "" when there is nothing to show."""
    if type(value) is str:
        return value
    if value is None or value == [] or value == {}:
        return ""
    if type(value) is list:
        return ", ".join([v if type(v) is str else str(v) for v in value if v is not None and v != ""])
    return str(value)
