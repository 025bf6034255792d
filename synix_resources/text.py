"""Text that arrived from outside (command-line arguments, file names, API callers) and may not
be valid Unicode.

Python keeps bytes that are not UTF-8 as lone surrogates (U+DC80–U+DCFF, "surrogateescape"), and
an API caller can pass any lone surrogate. Such a string cannot be encoded as UTF-8, so SQLite,
JSON files and the terminal all reject it; callers check with `is_valid_text` and name the
value in errors with `escape_invalid`.
"""
from __future__ import annotations

import re

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def is_valid_text(text: str) -> bool:
    """True when `text` holds no lone surrogate (so it encodes as UTF-8)."""
    return _LONE_SURROGATE.search(text) is None


def escape_invalid(text: str) -> str:
    """`text` with each lone surrogate spelled out: an escaped byte as `\\xff`, others as `\\ud800`."""
    def spell(match: re.Match) -> str:
        code = ord(match.group())
        return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"
    return _LONE_SURROGATE.sub(spell, text)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def json_field(where: str, key: str) -> str:
    """The path of `key` inside the object at `where`: `where.key`, `where['odd key']`, or the
    key alone at the top (`where` empty). Long keys are cut; lone surrogates are spelled out."""
    name = escape_invalid(key[:40])
    step = f".{name}" if _NAME.fullmatch(name) else f"['{name}']"
    return step[1:] if not where and step.startswith(".") else where + step


def walk_json(value, where: str = "", depth: int = 0):
    """Every value of a parsed JSON document as (path, value, depth), parents before children;
    each object key also comes as a value of its own (with its member's path), so a check of
    every string covers the keys. A consumer that stops at some depth stops the walk there."""
    yield where, value, depth
    if isinstance(value, dict):
        for key, item in value.items():
            path = json_field(where, key)
            yield path, key, depth + 1
            yield from walk_json(item, path, depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from walk_json(item, f"{where}[{i}]", depth + 1)
