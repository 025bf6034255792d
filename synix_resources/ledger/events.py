"""What one evidence event is, how an appended one is checked, and its stable id.

An id is content-addressed (`ev-` + 24 hex digits of the SHA-256 of the fields that say what
happened), not the design's UUID7: appending the same evidence twice (re-reading an export, a
retried request) is then one event, and an id that `create_memory(source_event_ids=…)` cites is
the same on every machine the ledger is copied to. An edited message is a new event beside the
old one (the ledger is append-only); metadata is not part of the id.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from synix_resources.errors import EvidenceRefused
from synix_resources.fingerprints import canonical_json, sha256_text
from synix_resources.text import is_valid_text
from synix_resources.values import instant

EVENT_ID = re.compile(r"^ev-[0-9a-f]{24}$")
MAX_CONTENT_CHARS = 2_000_000  # one event is a message, a session or a commit, not a corpus
TEXT_FIELDS = ("source", "event_type", "user_id", "title", "external_id", "conversation_id")


@dataclass(frozen=True)
class Event:
    id: str
    source: str
    event_type: str
    content: str
    timestamp: str | None = None
    user_id: str | None = None
    title: str = ""
    external_id: str | None = None
    conversation_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    seq: int = 0
    ingested_at: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def event_id(source: str, event_type: str, content: str, *, timestamp: str | None = None,
             user_id: str | None = None, title: str = "", external_id: str | None = None,
             conversation_id: str | None = None) -> str:
    """The stable id of an event with these fields."""
    return "ev-" + sha256_text(canonical_json([
        source, event_type, timestamp, user_id, title, external_id, conversation_id, content]))[:24]


def new_event(data: Mapping[str, Any]) -> Event:
    """An event from a caller's fields (checked; `timestamp` normalised to UTC), with its id.
    Raises `EvidenceRefused` naming the field and the fix."""
    if not isinstance(data, Mapping):
        raise EvidenceRefused(f"an event must be an object of fields, not {type(data).__name__}",
                              hint="give source, event_type and content (and optionally timestamp, "
                                   "user_id, title, external_id, conversation_id, metadata)")
    unknown = set(data) - {*TEXT_FIELDS, "content", "timestamp", "metadata"}
    if unknown:
        raise EvidenceRefused(f"unknown event field {sorted(unknown)[0]!r}",
                              hint="use source, event_type, content, timestamp, user_id, title, "
                                   "external_id, conversation_id, metadata")
    values: dict[str, Any] = {}
    for name in (*TEXT_FIELDS, "content"):
        value = data.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not is_valid_text(value):
            raise EvidenceRefused(f"event field {name!r} must be valid Unicode text",
                                  hint=f"send {name} as a UTF-8 string")
        values[name] = value
    for name in ("source", "event_type", "content"):
        if not values.get(name, "").strip():
            raise EvidenceRefused(f"event field {name!r} is missing or empty",
                                  hint=f"give the event a {name}")
    if len(values["content"]) > MAX_CONTENT_CHARS:
        raise EvidenceRefused(f"event content is {len(values['content']):,} characters; the limit "
                              f"is {MAX_CONTENT_CHARS:,}", hint="append it as several events")
    stamp = data.get("timestamp")
    timestamp = instant(stamp, "event timestamp") if stamp is not None else None
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise EvidenceRefused("event field 'metadata' must be a JSON object",
                              hint='send metadata as {"key": value, …}')
    try:
        metadata = json.loads(canonical_json(dict(metadata)))
    except (TypeError, ValueError) as err:
        raise EvidenceRefused(f"event metadata cannot be stored as JSON ({err})",
                              hint="use strings, numbers, booleans, lists and objects") from None
    ident = event_id(values["source"], values["event_type"], values["content"], timestamp=timestamp,
                     user_id=values.get("user_id"), title=values.get("title", ""),
                     external_id=values.get("external_id"),
                     conversation_id=values.get("conversation_id"))
    return Event(id=ident, source=values["source"], event_type=values["event_type"],
                 content=values["content"], timestamp=timestamp, user_id=values.get("user_id"),
                 title=values.get("title", ""), external_id=values.get("external_id"),
                 conversation_id=values.get("conversation_id"), metadata=metadata)
