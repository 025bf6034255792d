"""Search filters: the one check of each filter value (every interface — the index, the CLI, the
HTTP API, MCP, the layer listings — calls these) and `Filters`, their SQL.

The filters are the design's index table (000 §6.1): the layer (`step`), the document's date
(`meta.time.created_at`, a range), its period (`meta.time.period`, exact) and its conversation
(`meta.chat.conversation_id`, exact), plus the export source. Each is a condition of the SQL
that finds candidates, never a pass over a top-k already taken, so a filter never makes a
result shorter than its limit while more matching documents exist.
"""
from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from synix_resources.errors import SearchError
from synix_resources.search.query import require_text
from synix_resources.text import escape_invalid
from synix_resources.values import as_utc, utc_text

# A date, a prefix of one (year, month), or a date and time with an optional UTC offset.
_DATE = re.compile(r"(?P<date>\d{4}(?:-\d{2}(?:-\d{2})?)?)"
                   r"(?:[T ](?P<time>\d{2}(?::\d{2}(?::\d{2}(?:\.\d+)?)?)?)"
                   r"(?P<zone>Z|z|[+-]\d{2}:?\d{2})?)?")
DATE_FORMS = "YYYY, YYYY-MM, YYYY-MM-DD or an ISO date-time like 2024-03-05T14:30:00Z"
# The periods the pipeline's rollups and transcripts carry (engine/periods.py).
_PERIOD = re.compile(r"(?P<year>\d{4})-(?:(?P<month>\d{2})|W(?P<week>\d{2})|Q(?P<quarter>\d))")
PERIOD_FORMS = "YYYY-MM (a month), YYYY-Www (an ISO week) or YYYY-Qn (a quarter)"
UNDATED = "undated"  # the period of a rollup of undated conversations
MAX_CONVERSATION_CHARS = 1000


def check_date(value: object, what: str) -> str | None:
    """A since/until value as the prefix the index and the store compare dates with: a date
    (or year, or month) as given; a date-time in UTC without its zone (stored dates are UTC
    `YYYY-MM-DDTHH:MM:SSZ`), to the second. None or "" means no bound."""
    if value is None or value == "":
        return None
    text = require_text(value, what).strip()
    m = _DATE.fullmatch(text)
    if not m:
        raise SearchError(f"{what} '{escape_invalid(text[:40])}' is not a date",
                          hint=f"use {DATE_FORMS}")
    wrong = calendar_problem(text)
    if wrong:  # compared as text it would silently match nothing (or everything)
        raise SearchError(f"{what} '{text}' is not a real date ({wrong})", hint=f"use {DATE_FORMS}")
    if m["time"] is None:
        return m["date"]
    if m["date"].count("-") != 2:
        raise SearchError(f"{what} '{text}' has a time but no day", hint=f"use {DATE_FORMS}")
    clock = m["time"].split(".")[0]
    if not m["zone"] or m["zone"] in "Zz":
        return f"{m['date']}T{clock}"
    # An offset: the same instant in UTC, at the precision given.
    parts = [int(p) for p in clock.split(":")]
    zone = m["zone"].replace(":", "")
    offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5]))
    when = as_utc(datetime(*map(int, m["date"].split("-")), *parts,
                           tzinfo=timezone(offset if zone[0] == "+" else -offset)))
    if when is None:
        raise SearchError(f"{what} '{text}' is outside the years 0001-9999 in UTC", hint=f"use {DATE_FORMS}")
    return utc_text(when)[:11 + len(clock)]


def calendar_problem(value: str) -> str | None:
    """What is out of range in a `_DATE`-shaped value (month 13, 30 February, hour 25), or None."""
    head = _DATE.fullmatch(value)
    numbers = [int(n) for n in re.findall(r"\d+", head["date"] + " " + (head["time"] or "")
                                          if head else value)]
    year, month, day, hour, minute, second = (numbers + [None] * 6)[:6]
    if year == 0:
        return "there is no year 0"
    if month is not None and not 1 <= month <= 12:
        return f"there is no month {month}"
    if day is not None and not 1 <= day <= calendar.monthrange(year, month)[1]:
        return f"{calendar.month_name[month]} {year} has no day {day}"
    for name, n, top in (("hour", hour, 23), ("minute", minute, 59), ("second", second, 59)):
        if n is not None and n > top:
            return f"there is no {name} {n}"
    zone = head["zone"] if head else None
    if zone and zone not in "Zz" and (int(zone[1:3]) > 23 or int(zone[-2:]) > 59):
        return f"there is no UTC offset {zone}"
    return None


def check_period(value: object, what: str = "period") -> str | None:
    """A period as rollups and transcripts carry it (`meta.time.period`): 2024-03, 2024-W09,
    2024-Q1, or `undated`. None or "" means no filter."""
    if value is None or value == "":
        return None
    text = require_text(value, what).strip()
    if text == UNDATED:
        return text
    m = _PERIOD.fullmatch(text)
    wrong = ""
    if m and m["month"] and not 1 <= int(m["month"]) <= 12:
        wrong = f" (there is no month {int(m['month'])})"
    elif m and m["week"] and not 1 <= int(m["week"]) <= 53:
        wrong = f" (there is no week {int(m['week'])})"
    elif m and m["quarter"] and not 1 <= int(m["quarter"]) <= 4:
        wrong = f" (there is no quarter {m['quarter']})"
    if not m or wrong:
        raise SearchError(f"{what} '{escape_invalid(text[:40])}' is not a period{wrong}",
                          hint=f"use {PERIOD_FORMS}")
    return text


def check_conversation(value: object, what: str = "conversation") -> str | None:
    """A conversation id (`meta.chat.conversation_id`, as a hit's `sources` show it)."""
    if value is None or value == "":
        return None
    text = require_text(value, what).strip()
    if not text or len(text) > MAX_CONVERSATION_CHARS or "\x00" in text:
        raise SearchError(f"{what} id '{escape_invalid(text[:40])}' is not a conversation id",
                          hint="copy it from a hit's sources or `synix get`")
    return text


@dataclass(frozen=True)
class Filters:
    """What a search keeps. `since`/`until` are `check_date` prefixes of the document's date,
    inclusive; `period` is the document's own `meta.time.period`; `conversation` keeps the
    documents built from that conversation (whose sources include it: its transcript, its
    episode, every rollup over it)."""

    layers: list[str] | None = None
    since: str | None = None
    until: str | None = None
    source: str | None = None
    leaves: bool = False  # only level-0 artifacts (the source transcripts, named or hidden)
    period: str | None = None
    conversation: str | None = None

    def sql(self, include_hidden: bool, prefix: str = "d") -> tuple[str, list]:
        """`AND …` conditions on the rows of table alias `prefix` (`d` docs, `u` units; a unit
        carries its document's layer, level, date and source)."""
        doc_id = f"{prefix}.id" if prefix == "d" else f"{prefix}.doc_id"
        parts, args = [], []
        if not include_hidden:
            parts.append(f"{prefix}.searchable = 1")
        if self.leaves:
            parts.append(f"{prefix}.level = 0")
        if self.layers is not None:
            parts.append(f"{prefix}.layer IN ({','.join('?' * len(self.layers))})")
            args.extend(self.layers)
        if self.since:
            parts.append(f"substr({prefix}.date, 1, ?) >= ?")
            args.extend([len(self.since), self.since])
        if self.until:
            parts.append(f"substr({prefix}.date, 1, ?) <= ?")
            args.extend([len(self.until), self.until])
        if self.source:
            parts.append(f"{prefix}.source = ?")
            args.append(self.source)
        if self.period:
            parts.append(f"{doc_id} IN (SELECT id FROM docs WHERE period = ?)")
            args.append(self.period)
        if self.conversation:
            parts.append(f"{doc_id} IN (SELECT doc_id FROM doc_conversations "
                         f"WHERE conversation_id = ?)")
            args.append(self.conversation)
        return ("AND " + " AND ".join(parts)) if parts else "", args

    def narrows(self) -> bool:
        """Whether anything beyond searchability is filtered on."""
        return any((self.layers is not None, self.since, self.until, self.source, self.leaves,
                    self.period, self.conversation))


def check_filters(*, layers: object = None, since: object = None, until: object = None,
                  source: object = None, period: object = None,
                  conversation: object = None) -> Filters:
    """Every filter value checked (a one-line `SearchError` names the first bad one) and
    normalised; `layers` read once (it may be any iterable) into a list, or None."""
    layer_list = None if layers is None else [layers] if isinstance(layers, str) else list(layers)
    for layer in layer_list or []:
        require_text(layer, "layer")
    if source is not None:
        require_text(source, "source")
    return Filters(layers=layer_list, since=check_date(since, "--since"),
                   until=check_date(until, "--until"), source=source,
                   period=check_period(period, "--period"),
                   conversation=check_conversation(conversation, "--conversation"))


def just_before(value: object, what: str = "before") -> str | None:
    """An exclusive end (`before`, design 003's browse_timeline) as the inclusive prefix bound
    `until` takes: the day, month or year before a date, the second before a date-time (stored
    dates are to the second), so `before=2025-03` keeps February and earlier. Before year 1:
    a bound no date reaches."""
    from datetime import date, datetime, timedelta

    bound = check_date(value, what)
    if bound is None:
        return None
    try:
        if "T" in bound:
            moment = datetime.strptime(bound, "%Y-%m-%dT%H:%M:%S") - timedelta(seconds=1)
            return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}"
        parts = [int(p) for p in bound.split("-")]
        if len(parts) == 3:
            day = date(*parts) - timedelta(days=1)
            return f"{day.year:04d}-{day:%m-%d}"
    except OverflowError:  # the first second/day of year 1: nothing is dated before it
        return "0000"
    year, month = parts[0], (parts[1] if len(parts) == 2 else None)
    if month is None:
        return f"{year - 1:04d}"
    return f"{year:04d}-{month - 1:02d}" if month > 1 else f"{year - 1:04d}-12"
