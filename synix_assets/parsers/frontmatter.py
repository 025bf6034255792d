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

# `---` line, the front matter, a `---` or `...` line: the closing line is found with `str.find`
# (a lazy `(.*?)^---` regex tries the closing line at every character).
_OPEN = re.compile(r"---[ \t]*\n")
_CLOSE = re.compile(r"(?:---|\.\.\.)[ \t]*(?:\n|\Z)")
_FRONT_MAX = 64 * 1024
# libyaml's loader when PyYAML was built with it: the pure-Python one is slower still.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# YAML anchors and aliases: Obsidian never writes them, and an alias "bomb" expands exponentially.
_ALIAS = re.compile(r"(?:^|[\s\[{,:-])[&*][^\s,\]}]", re.M)

# The simple shape, one line per match (`^` + `\n`: a match is a whole line, so the front matter
# has the shape iff every line matches): `key: value`, `key:` (null, or a list follows) or
# `- item`. A value is a quoted string without quotes or escapes inside, `[]` (keys only), or a
# plain scalar YAML may read as text: no indicator first, no `: `, ` #` or trailing `:` (the
# resolver then decides whether it is text, or a number, yes/no, null, a date...).
# Possessive runs: the same lines as `(?:(?!:\s|\s#)[^\n])*(?<![:\s])`, without backtracking.
_PLAIN = r"""[^-?:,\[\]{}#&*!|>'"%@`\s](?:[^\n:\s]++|:(?!\s)|[^\S\n]++(?![#\n]))*+(?<![:\s])"""
_QUOTED = r""""[^"\\\n]*"|'[^'\n]*'"""
_LINE = re.compile(rf"^(?:([A-Za-z_][A-Za-z0-9_-]*):(?:[ ]+({_QUOTED}|\[\]|{_PLAIN}))?|([ ]*)- ({_QUOTED}|{_PLAIN}))[ ]*\n",
                   re.M)
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
# First characters after which YAML's resolver can read a plain scalar as something other than
# text: any other first character is text without asking it.
_RESOLVED_FIRST = frozenset(k for k in yaml.resolver.Resolver.yaml_implicit_resolvers if k)
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
    bounds = front_bounds(text)
    if bounds is None:
        return {}, text, None
    front = text[bounds[0]:bounds[1]]
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
        except ValueError as exc:  # `2022-02-30` is no day; an int of over 4,300 digits
            # Python's advice after the ';' (raise the digit limit) is not the note writer's fix
            return {}, text, f"front matter has a value YAML cannot read ({str(exc).split(';')[0]})"
    if data is None:
        return {}, text[bounds[2]:], None
    if not isinstance(data, dict):
        return {}, text, "front matter is not a set of key: value properties"
    return data, text[bounds[2]:], None


def front_bounds(text: str) -> tuple[int, int, int] | None:
    """(start, end) of the front matter between its `---` lines and where the body starts, or
    None when the text does not open with front matter."""
    opening = _OPEN.match(text)
    if opening is None:
        return None
    start = opening.end()
    # the line breaks before the next possible closing lines; each is searched for again only
    # once passed (a note of many `----` lines and no `...` must not rescan its whole rest)
    dashes, dots = text.find("\n---", start - 1), text.find("\n...", start - 1)
    while dashes >= 0 or dots >= 0:
        at = dots if dashes < 0 or 0 <= dots < dashes else dashes
        closing = _CLOSE.match(text, at + 1)
        if closing is not None:
            return start, at + 1, closing.end()
        if at == dashes:
            dashes = text.find("\n---", at + 1)
        else:
            dots = text.find("\n...", at + 1)
    return None


def _simple(front: str) -> Any:
    """The front matter's mapping if it has the simple shape, else `_NO`."""
    if not front:
        return None
    if _ODD_CHARS.search(front):  # other line breaks, characters YAML refuses
        return _NO
    if front[-1] != "\n":
        front += "\n"
    lines = _LINE.findall(front)
    if len(lines) != front.count("\n"):
        return _NO
    data: dict[str, Any] = {}
    bare: list[tuple[str, list]] = []  # `key:` lines: null unless items follow
    items: list | None = None  # the list the `- item` lines belong to
    indent = None  # of its items: a deeper `- ` would continue the previous item's text in YAML
    # The common values (quoted text, text no resolver could read otherwise) are taken inline:
    # this loop runs for every line of every note's front matter.
    for key, raw, spaces, item in lines:
        if not key:  # `- item`
            if items is None or (indent is not None and indent != spaces):
                return _NO
            indent = spaces
            first = item[0]
            if first == '"' or first == "'":
                items.append(item[1:-1])
            elif first not in _RESOLVED_FIRST:
                items.append(item)
            else:
                value = _resolved(item)
                if value is _NO:
                    return _NO
                items.append(value)
            continue
        if key[0] in _RESOLVED_FIRST and not (_TEXT_SCALARS.get(key) or _reads_as_text(key)):
            return _NO
        items = None
        if not raw:  # a list follows, or nothing: null, as in YAML
            data[key] = items = []
            bare.append((key, items))
            indent = None
            continue
        first = raw[0]
        if first == '"' or first == "'":
            data[key] = raw[1:-1]
        elif first == "[":  # `[]`, the only flow value `_LINE` takes
            data[key] = []
        elif first not in _RESOLVED_FIRST:
            data[key] = raw
        else:
            value = _resolved(raw)
            if value is _NO:
                return _NO
            data[key] = value
    for key, listed in bare:
        if data[key] is listed and not listed:  # not replaced by a later line of the same key
            data[key] = None
    return data


def _resolved(raw: str) -> Any:
    """A plain value whose first character a YAML resolver looks at: a day, text, or `_NO`."""
    if len(raw) == 10 and _DAY.match(raw):
        try:
            return date.fromisoformat(raw)
        except ValueError:
            return _NO
    return raw if _reads_as_text(raw) else _NO


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
