"""Checks of read parameters (limits, filters) and the summary a list shows of a record.

Dates, periods and conversation ids are checked by the search index's own checks
(`synix_resources/search/filters.py`), so a search and a layer listing accept and refuse the
same values."""
from __future__ import annotations

from synix_assets.engine.projections import artifact_title
from synix_resources.errors import ServeError
from synix_resources.search.filters import check_conversation, check_period

MAX_LIMIT = 200
PREVIEW_CHARS = 280
MODES = ("fts", "semantic", "hybrid")
# Metadata a layer listing can filter on: query name -> metadata key.
FILTERS = {"period": "meta.time.period", "conversation": "meta.chat.conversation_id",
           "source": "meta.source.name", "source_file": "meta.source.path"}
# The checks of the filter values a listing or a search takes, by query name.
CHECKS = {"period": check_period, "conversation": check_conversation}


class BadRequest(ServeError):
    """A request parameter is invalid (the HTTP layer answers 400)."""


def check_limit(limit: int, name: str = "limit") -> int:
    if not 1 <= int(limit) <= MAX_LIMIT:
        raise BadRequest(f"{name} must be between 1 and {MAX_LIMIT}, got {limit}")
    return int(limit)


def preview(text: str, chars: int = PREVIEW_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[:chars].rstrip() + "…"


def record_summary(art) -> dict:
    """What a list shows of a record: id, layer, title, date/period, sources count, preview."""
    m = art.metadata
    return {"artifact_id": art.artifact_id, "layer": art.layer, "level": art.level,
            "title": artifact_title(art), "group_key": art.group_key,
            "date": (m.get("meta.time.created_at") or "")[:10] or None,
            "period": m.get("meta.time.period"),
            "conversation_id": m.get("meta.chat.conversation_id"),
            "source_count": len(art.parent_ids), "created_at": art.created_at,
            "preview": preview(art.content)}
