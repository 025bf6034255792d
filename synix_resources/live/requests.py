"""Checking a live ingest request before anything is written: one-line reasons for every refusal.

The body arrives as bytes: it must be UTF-8 (strictly), JSON, an object with a non-empty `turns`
list of `{role, content, ts?, metadata?}`, within the size limits, and hold no text SQLite cannot
store (lone surrogates, which JSON may spell as `\\udcff`) and no number a JSON answer cannot carry
back (NaN, Infinity, a float that overflows, an integer of thousands of digits).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from synix_resources.errors import LiveInputError, LiveInputTooLarge
from synix_resources.names import check_live_id
from synix_resources.text import escape_invalid, is_valid_text, walk_json
from synix_resources.values import epoch_utc, iso_utc, utc_text

ROLES = ("user", "assistant", "tool", "system")
MAX_BODY_BYTES = 2 * 1024 * 1024
MAX_TURN_CHARS = 256 * 1024
MAX_TURNS = 500
MAX_NESTING = 20
MAX_INT_DIGITS = 40  # a 128-bit integer has 39; longer ones are data, sent as strings
# Turn times a transcript can hold: epoch seconds start at 1970, and a UTC time must keep a
# four-digit year (datetime cannot go past 9999).
FIRST_TS = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass
class Turn:
    role: str
    content: str
    ts: str | None = None  # UTC `YYYY-MM-DDTHH:MM:SSZ`, or None for "when it arrived"
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class IngestRequest:
    turns: list[Turn]
    session_id: str | None = None
    user_id: str | None = None
    idempotency_key: str | None = None


def _utc(value: Any, where: str) -> str:
    """ISO-8601 (naive = UTC) or epoch seconds (milliseconds above 1e11) → `YYYY-MM-DDTHH:MM:SSZ`,
    between 1970 and 9999 (synix_resources/values.py converts)."""
    parsed = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        parsed = epoch_utc(value)
    elif isinstance(value, str):
        parsed = iso_utc(value)
    if parsed is None or parsed < FIRST_TS:
        raise LiveInputError(f"{where}.ts {str(value)[:40]!r} is not a time between 1970 and 9999 (UTC)",
                             hint="give ISO-8601 (2025-06-01T10:00:00Z) or epoch seconds, or leave it out")
    return utc_text(parsed)


class _BadNumber:
    """A JSON number refused at the door, kept as its text until the walk over the body names
    the field it is in (json's parse hooks do not know where they are)."""

    def __init__(self, text: str, why: str):
        self.text, self.why = text, why


def _parse_int(text: str) -> int | _BadNumber:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:  # int() of it would also pass Python's 4,300-digit limit
        return _BadNumber(f"a {digits}-digit integer", f"over the {MAX_INT_DIGITS}-digit limit")
    return int(text)


def _parse_float(text: str) -> float | _BadNumber:
    value = float(text)
    return value if math.isfinite(value) else _BadNumber(text[:20], "too large for a number")


def _parse_constant(name: str) -> _BadNumber:  # NaN, Infinity, -Infinity: not JSON
    return _BadNumber(name, "not a finite number")


def _problem(data: dict) -> LiveInputError | None:
    """The refusal of the first bad value in the body, naming its field, or None."""
    for where, value, depth in walk_json(data):
        if depth > MAX_NESTING:
            return LiveInputError(f"{where} is nested more than {MAX_NESTING} levels deep",
                                  hint="flatten the metadata")
        if isinstance(value, _BadNumber):
            return LiveInputError(f"{where} is {value.text}, {value.why}",
                                  hint=f"send finite numbers of at most {MAX_INT_DIGITS} digits; "
                                       "anything else as a string")
        if isinstance(value, str) and not is_valid_text(value):
            return LiveInputError(f"{where} holds text that is not valid Unicode "
                                  f"('{escape_invalid(value[:40])}')", hint="send valid UTF-8 text")
    return None


def _named(data: dict, shared: dict, field_name: str) -> Any:
    """`session_id`/`user_id` at the top level or in the request's `metadata` (the Synapse
    clients' spelling); both is fine when they agree."""
    top, meta = data.get(field_name), shared.get(field_name)
    if top is not None and meta is not None and top != meta:
        raise LiveInputError(f"{field_name} {str(top)[:40]!r} and metadata.{field_name} "
                             f"{str(meta)[:40]!r} differ", hint=f"give {field_name} once")
    return top if top is not None else meta


def parse_ingest(body: bytes, *, idempotency_key: str | None = None) -> IngestRequest:
    """The request in `body`, or `LiveInputError` naming what is wrong (nothing is written)."""
    if len(body) > MAX_BODY_BYTES:
        raise LiveInputTooLarge(f"the request body is {len(body)} bytes, over the {MAX_BODY_BYTES}-byte limit",
                                hint="post fewer or shorter turns per request")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise LiveInputError(f"the request body is not UTF-8 (byte {err.start})",
                             hint="send JSON encoded as UTF-8") from None
    try:
        data = json.loads(text, parse_int=_parse_int, parse_float=_parse_float,
                          parse_constant=_parse_constant)
    except (json.JSONDecodeError, RecursionError) as err:
        reason = err.msg if isinstance(err, json.JSONDecodeError) else "nested too deep"
        raise LiveInputError(f"the request body is not JSON ({reason})",
                             hint='send {"turns": [{"role": "user", "content": "…"}]}') from None
    if not isinstance(data, dict):
        raise LiveInputError(f"the request body is a JSON {type(data).__name__}, not an object",
                             hint='send {"turns": [{"role": "user", "content": "…"}]}')
    problem = _problem(data)
    if problem is not None:
        raise problem
    unknown = sorted(set(data) - {"session_id", "user_id", "turns", "idempotency_key", "metadata"})
    if unknown:
        raise LiveInputError(f"unknown field {unknown[0]!r} in the request",
                             hint="fields: session_id, user_id, turns, idempotency_key, metadata")
    shared = data.get("metadata") or {}
    if not isinstance(shared, dict):
        raise LiveInputError(f"metadata is a {type(shared).__name__}, not an object")
    turns = data.get("turns")
    if not isinstance(turns, list) or not turns:
        raise LiveInputError("the request has no turns (`turns` must be a non-empty list)",
                             hint='send {"turns": [{"role": "user", "content": "…"}]}')
    if len(turns) > MAX_TURNS:
        raise LiveInputTooLarge(f"the request has {len(turns)} turns, over the limit of {MAX_TURNS}",
                                hint="split it into several requests")
    out = []
    for i, raw in enumerate(turns):
        where = f"turns[{i}]"
        if not isinstance(raw, dict):
            raise LiveInputError(f"{where} is a {type(raw).__name__}, not an object")
        extra = sorted(set(raw) - {"role", "content", "ts", "metadata"})
        if extra:
            raise LiveInputError(f"unknown field {extra[0]!r} in {where}", hint="fields: role, content, ts, metadata")
        role, content = raw.get("role"), raw.get("content")
        if role not in ROLES:
            raise LiveInputError(f"{where}.role {str(role)[:20]!r} is missing or unknown",
                                 hint=f"use one of {', '.join(ROLES)}")
        if not isinstance(content, str) or not content.strip():
            raise LiveInputError(f"{where}.content is missing or empty", hint="give the turn's text as a string")
        if len(content) > MAX_TURN_CHARS:
            raise LiveInputTooLarge(f"{where}.content is {len(content)} characters, over the {MAX_TURN_CHARS} limit",
                                    hint="split or shorten the turn")
        metadata = raw.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise LiveInputError(f"{where}.metadata is a {type(metadata).__name__}, not an object")
        # the request's metadata holds for every turn; a turn's own keys win
        metadata = {**{k: v for k, v in shared.items() if k not in ("session_id", "user_id")}, **metadata}
        ts = _utc(raw["ts"], where) if raw.get("ts") not in (None, "") else None
        out.append(Turn(role, content, ts, metadata))
    session_id = _named(data, shared, "session_id")
    user_id = _named(data, shared, "user_id")
    key = data.get("idempotency_key") or idempotency_key
    return IngestRequest(out, check_live_id(session_id, "session_id") if session_id is not None else None,
                         check_live_id(user_id, "user_id") if user_id is not None else None,
                         check_live_id(key, "idempotency_key") if key is not None else None)
