"""Calendar periods for aggregates: month `2025-03`, ISO week `2025-W09`, quarter `2025-Q1`."""
from __future__ import annotations

from datetime import datetime

UNDATED = "undated"


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
