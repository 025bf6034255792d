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
