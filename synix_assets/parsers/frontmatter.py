"""A note's YAML front matter → (properties, body, problem or None).

Most front matter is the plain shape Obsidian's property editor writes: `key: value` lines and
`key:` followed by `  - item` lines, values plain words, quoted strings or ISO dates. `_simple`
reads that shape without PyYAML, whose pure-Python constructor is most of a note's parse cost
even with libyaml's scanner; a value whose meaning YAML could read differently (numbers, yes/no,
null, times, flow lists, comments, anchors, block text…) sends the whole front matter to PyYAML,
so the result is always what `yaml.load(..., SafeLoader)` gives.
"""
from __future__ import annotations

import re
from datetime import date
from typing import Any

import yaml

_FRONT = re.compile(r"\A---[ \t]*\n(.*?)^(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S | re.M)
_FRONT_MAX = 64 * 1024
# libyaml's loader when PyYAML was built with it: the pure-Python one is slower still.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# YAML anchors and aliases: Obsidian never writes them, and an alias "bomb" expands exponentially.
_ALIAS = re.compile(r"(?:^|[\s\[{,:-])[&*][^\s,\]}]", re.M)

_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?:[ ]+(.*?))?[ ]*\Z")
_ITEM_LINE = re.compile(r"([ ]*)- (.*?)[ ]*\Z")
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
# A plain scalar YAML may read as text: no indicator first, no `: `, ` #` or trailing `:` (the
# resolver then decides whether it is text or a number, yes/no, null...).
_PLAIN = re.compile(r"[^-?:,\[\]{}#&*!|>'\"%@`\s](?:(?!:\s|\s#)[^\n])*(?<![:\s])\Z")
# Other line breaks (\r, NEL, LS, PS), a BOM, and what YAML refuses (`Reader.NON_PRINTABLE`),
# as ONE negated class: the two-class alternation cost ~30x more per character. Equal to
# "[\r\x85\u2028\u2029\ufeff]|" + NON_PRINTABLE on every code point (test_front_matter_fast_path).
ODD_CHARS_AS_YAML = "[\r\x85\u2028\u2029\ufeff]|" + yaml.reader.Reader.NON_PRINTABLE.pattern
_ODD_CHARS = re.compile("[^\x09\x0a\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
_STR_TAG = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()
_NO = object()  # "not the simple shape": read by PyYAML
_TEXT_SCALARS: dict[str, bool] = {}
_REMEMBERED = 4096


def split_front_matter(text: str) -> tuple[dict, str, str | None]:
    match = _FRONT.match(text)
    if not match:
        return {}, text, None
    front = match.group(1)
    if len(front) > _FRONT_MAX or (("&" in front or "*" in front) and _ALIAS.search(front)):
        return {}, text, "front matter is too large or uses YAML anchors; kept as text"
    data = _simple(front)
    if data is _NO:
        try:
            # BaseLoader would keep dates as text; SafeLoader turns `2023-09-12` into a date,
            # which the note parser spells back as ISO.
            data = yaml.load(front, Loader=_LOADER)
        except yaml.YAMLError as exc:
            # The note is still worth keeping: its front matter stays in the text as written.
            where = getattr(exc, "problem_mark", None)
            line = f" at line {where.line + 2}" if where is not None else ""
            return {}, text, f"front matter is not valid YAML{line}"
        except RecursionError:
            return {}, text, "front matter is nested too deeply"
        except ValueError as exc:  # SafeLoader's date constructor: `2022-02-30` is no day
            return {}, text, f"front matter has a value YAML cannot read ({exc})"
    if data is None:
        return {}, text[match.end():], None
    if not isinstance(data, dict):
        return {}, text, "front matter is not a set of key: value properties"
    return data, text[match.end():], None


def _simple(front: str) -> Any:
    """The front matter's mapping if it has the simple shape, else `_NO`."""
    if not front:
        return None
    if _ODD_CHARS.search(front):  # other line breaks, characters YAML refuses
        return _NO
    data: dict[str, Any] = {}
    bare: set[str] = set()  # `key:` lines: null unless items follow
    items: list | None = None  # the list the `- item` lines belong to
    indent = -1  # of its items: a deeper `- ` would continue the previous item's text in YAML
    for line in front[:-1].split("\n") if front.endswith("\n") else front.split("\n"):
        if line.startswith((" ", "-")):
            found = _ITEM_LINE.match(line)
            if found is None or items is None or indent not in (-1, len(found.group(1))):
                return _NO
            value = _scalar(found.group(2))
            if value is _NO:
                return _NO
            items.append(value)
            indent = len(found.group(1))
            continue
        found = _KEY_LINE.match(line)
        if found is None or not _reads_as_text(found.group(1)):
            return _NO
        key, raw = found.group(1), found.group(2)
        if raw is None:  # a list follows, or nothing: null, as in YAML
            items, indent = [], -1
            data[key] = items
            bare.add(key)
            continue
        value = [] if raw == "[]" else _scalar(raw)
        if value is _NO:
            return _NO
        data[key], items = value, None
        bare.discard(key)
    for key in bare:
        if not data[key]:
            data[key] = None
    return data


def _scalar(raw: str) -> Any:
    if len(raw) >= 2 and raw[0] == raw[-1] == '"' and '"' not in raw[1:-1] and "\\" not in raw:
        return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == "'" and "'" not in raw[1:-1]:
        return raw[1:-1]
    if _DAY.match(raw):
        try:
            return date.fromisoformat(raw)
        except ValueError:
            return _NO
    if _PLAIN.match(raw) and _reads_as_text(raw):
        return raw
    return _NO


def _reads_as_text(plain: str) -> bool:
    """Whether YAML's resolver reads this plain scalar as text (not a number, yes/no, null...).
    Remembered: a vault repeats its keys and many of its values, and the resolver is slow."""
    known = _TEXT_SCALARS.get(plain)
    if known is None:
        known = _RESOLVER.resolve(yaml.ScalarNode, plain, (True, False)) == _STR_TAG
        if len(_TEXT_SCALARS) >= _REMEMBERED:
            _TEXT_SCALARS.clear()
        _TEXT_SCALARS[plain] = known
    return known
