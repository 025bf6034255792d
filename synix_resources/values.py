"""Dates and numbers that arrived from outside — export and benchmark files, request parameters
— converted so that one odd value never raises past the code that asked for it.

Python's own conversions raise on values a file or a caller can hold: `astimezone` on a date at
the edge of the calendar with an offset (`9999-12-31T23:59:59-14:00` is in year 10000 in UTC:
`OverflowError`), `fromtimestamp` on a huge or infinite epoch number, `int`/`json.loads` on an
integer of more than 4,300 digits (`ValueError`). Two kinds of caller use this module:

* readers of data (the export parsers, the eval loaders) get None for a date they cannot use
  (`utc_iso`, `epoch_utc`, `iso_utc`) or a `HugeInt` in place of a giant integer (`load_json`,
  `small_int`), and decide what that costs the one conversation or item holding it;
* doors (`as_of`, `valid_from`) call `instant`, which refuses the value with `InvalidTime`
  naming the parameter and the accepted form.
"""
from __future__ import annotations

import json
import math
import sys
from datetime import datetime, timezone
from typing import Any

from synix_resources.errors import InvalidTime

ISO_FORMS = "ISO 8601 between 0001 and 9999 in UTC, e.g. 2025-03-01 or 2025-03-01T09:30:00Z"
# Epoch numbers above this are milliseconds (JS-style stamps): 1e11 seconds is the year 5138.
_MILLISECONDS_FROM = 1e11


class HugeInt:
    """An integer with more digits than Python converts from text (4,300 by default). Loaders
    put it where the integer was, so the field holding it can be named; nothing reads it as a
    number."""

    __slots__ = ("digits",)

    def __init__(self, digits: int):
        self.digits = digits

    def __repr__(self) -> str:
        return f"a {self.digits:,}-digit integer"

    __str__ = __repr__


def small_int(text: str) -> int | HugeInt:
    """`int(text)` of a digit string (a sign allowed), or a `HugeInt` where `int` would raise
    for its length."""
    digits = len(text.strip().lstrip("+-"))
    if digits > sys.get_int_max_str_digits() > 0:
        return HugeInt(digits)
    return int(text)


def load_json(text: str | bytes) -> Any:
    """`json.loads`, except that an integer too long for Python becomes a `HugeInt` instead of
    a `ValueError` for the whole document. JSON that does not parse still raises
    `json.JSONDecodeError` (and deep nesting `RecursionError`). The common case pays nothing:
    the second, hooked decode runs only for a document that holds such an integer."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # Python's integer length limit
        return json.loads(text, parse_int=small_int)


def utc_text(when: datetime) -> str:
    """A UTC datetime as `YYYY-MM-DDTHH:MM:SSZ`, the year always four digits (`strftime("%Y")`
    drops the leading zeros of years before 1000 on Linux, and "999-…" sorts and parses wrong)."""
    return when.replace(tzinfo=None, microsecond=0).isoformat() + "Z"


def as_utc(when: datetime) -> datetime | None:
    """`when` in UTC (naive = already UTC: exports and callers write UTC without the suffix),
    or None when UTC cannot hold it (an offset that moves it before year 1 or past 9999)."""
    if when.tzinfo is None:
        return when.replace(tzinfo=timezone.utc)
    try:
        return when.astimezone(timezone.utc)
    except OverflowError:
        return None


def _iso(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None


def iso_utc(text: str) -> datetime | None:
    """An ISO 8601 date or date-time (`Z`/`z` or an offset; naive = UTC) in UTC, or None when it
    does not parse or is outside what UTC can hold."""
    parsed = _iso(text)
    return as_utc(parsed) if parsed is not None else None


def epoch_utc(seconds: float) -> datetime | None:
    """Epoch seconds (milliseconds above 1e11) in UTC, or None for NaN, infinity, a time before
    1970 or past 9999."""
    if not math.isfinite(seconds) or seconds < 0:
        return None
    if seconds > _MILLISECONDS_FROM:
        seconds /= 1000.0
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):  # past what a date (or the platform) can hold
        return None


def utc_iso(value: Any) -> str | None:
    """A date field of a file — epoch seconds or milliseconds (a number or its text) or an ISO
    8601 string — as `YYYY-MM-DDTHH:MM:SSZ`, else None (missing, not a date, or out of range)."""
    if value is None or isinstance(value, (bool, HugeInt)):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            when = epoch_utc(float(text))
        except ValueError:  # not a number: read it as ISO 8601
            when = iso_utc(text)
    elif isinstance(value, (int, float)):
        try:
            when = epoch_utc(float(value))
        except OverflowError:  # an int too big for a float
            return None
    else:
        return None
    return utc_text(when) if when is not None else None


def instant(value: object, what: str) -> str:
    """A date or date-time parameter (`as_of`, `valid_from`) as a UTC `YYYY-MM-DDTHH:MM:SSZ` (a
    date is its midnight, a time without a zone is UTC), so instants compare as strings; else
    `InvalidTime` naming `what` and the accepted form."""
    parsed = _iso(value) if isinstance(value, str) and value.strip() else None
    when = as_utc(parsed) if parsed is not None else None
    if when is None:
        shown = value[:40] if isinstance(value, str) else value
        why = "is not a date or date-time" if parsed is None else "is outside the years 0001-9999 in UTC"
        raise InvalidTime(f"{what} {shown!r} {why}", hint=f"use {ISO_FORMS}")
    return utc_text(when)
