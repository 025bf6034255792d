"""One raw export entry (its bytes, from `jsonscan`) → its decoded JSON value, or the reason
that conversation is skipped.

Bytes that are not UTF-8 are the file's fault (`UnicodeDecodeError` propagates: the caller
refuses the file). Everything else is local to the entry: nesting deeper than `MAX_NESTING`,
JSON that does not parse, a lone surrogate escape, an integer of more digits than Python reads
(4,300) — each raises `ConversationSkipped` with the real cause, and `entry_label` names the
entry from its top-level id fields without decoding it.
"""
from __future__ import annotations

import json
import re
from typing import Any

from synix_resources.errors import ConversationSkipped
from synix_resources.values import load_json
from .jsonscan import RawEntry, top_level_fields
from .model import MAX_NESTING, entry_problem, spell_surrogates

# Only an escaped surrogate can decode to a lone one (the UTF-8 decoder refuses encoded ones),
# so entries without such an escape skip the walk over every string.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LABEL_CHARS = 200


def decode_entry(entry: RawEntry) -> Any:
    text = entry.data.decode("utf-8")
    if entry.problem:
        raise ConversationSkipped(entry.problem)
    if entry.depth > MAX_NESTING:
        raise ConversationSkipped(f"is nested more than {MAX_NESTING} levels deep")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if entry.line is not None:
            raise ConversationSkipped(f"line {entry.line} is not valid JSON ({exc.msg})") from None
        at = entry.offset + len(text[:exc.pos].encode("utf-8"))
        raise ConversationSkipped(f"is not valid JSON ({exc.msg} near byte {at:,})") from None
    except ValueError:  # an integer too long for Python: decoded again to name its field
        raise ConversationSkipped(entry_problem(load_json(text)) or "holds a number Python cannot read") from None
    if _SURROGATE_ESCAPE.search(entry.data):
        problem = entry_problem(value)
        if problem:
            raise ConversationSkipped(problem)
    return value


def entry_label(entry: RawEntry, id_keys: tuple[str, ...]) -> str:
    """The entry's id from its top-level fields (the first of `id_keys` that has one), found
    without decoding the entry, else `#<position>` (also for an id too long to print on one
    line: a 5,000-digit number is the damage, not a name)."""
    if entry.data[:1] == b"{":
        found = {k: v for k, v in top_level_fields(entry.data) if k in id_keys and v}
        for key in id_keys:
            if found.get(key) and len(found[key]) <= _LABEL_CHARS:
                return spell_surrogates(found[key])
    return f"#{entry.number}"


def decode_whole(data: bytes) -> Any:
    """A file that is one conversation (a Gemini CLI checkpoint, a single-JSON Codex rollout) →
    its decoded value, or the reason it cannot be read as text: bad bytes, JSON that does not
    parse, nesting deeper than `MAX_NESTING`, a lone surrogate escape — its one report line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return f"is not valid UTF-8 (bad byte near byte {exc.start:,})"
    try:
        value = load_json(text)
    except json.JSONDecodeError as exc:
        return f"is not valid JSON ({exc.msg} near character {exc.pos:,})"
    except RecursionError:
        return f"is nested more than {MAX_NESTING} levels deep"
    return entry_problem(value) or value
