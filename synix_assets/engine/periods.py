"""Dates of records: calendar periods for aggregates (month `2025-03`, ISO week `2025-W09`,
quarter `2025-Q1`) and the date of the latest source a record was built from."""
from __future__ import annotations

from datetime import datetime, timezone

UNDATED = "undated"
# A conversation's (and its episode's) updated_at is its last message; a rollup's or a fold's
# last_at is the latest source of its inputs; created_at is the earliest.
_SOURCE_DATES = ("meta.time.last_at", "meta.time.updated_at", "meta.time.created_at")


def _utc(iso: str) -> str:
    """An ISO date or date-time as UTC `YYYY-MM-DDTHH:MM:SSZ` (comparable as a string); text
    that is not one stays as it is."""
    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def sources_until(metadata: dict) -> str | None:
    """The date (UTC) of the latest source a record was built from, or None when undated."""
    dates = [_utc(str(metadata[k])) for k in _SOURCE_DATES if metadata.get(k)]
    return max(dates) if dates else None


def built_by(metadata: dict, instant: str) -> bool:
    """Whether every source of the record is dated at or before `instant` (UTC
    `YYYY-MM-DDTHH:MM:SSZ`): what a memory "as of" then could hold. An undated record: no."""
    until = sources_until(metadata)
    return until is not None and until <= instant


def period_of(iso: str | None, period: str) -> str:
    if not iso:
        return UNDATED
    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return UNDATED
    if period == "month":
        return f"{when.year:04d}-{when.month:02d}"
    if period == "quarter":
        return f"{when.year:04d}-Q{(when.month - 1) // 3 + 1}"
    if period == "week":
        year, week, _ = when.isocalendar()
        return f"{year:04d}-W{week:02d}"
    raise ValueError(f"unknown period {period!r}")
