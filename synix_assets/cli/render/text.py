"""Terminal safety: data (titles, snippets, ids, file names, error messages) made harmless to
print, and markup that keeps it literal."""
from __future__ import annotations

import re

from rich.markup import escape
from rich.text import Text

# What data must never send to a terminal raw: C0/C1 control characters (ESC starts colour,
# clear-screen, OSC 8 link and window-title sequences; BEL, CR and backspace rewrite the line),
# bidi overrides that reorder what is shown, and lone surrogates (not encodable).
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE_MULTILINE = re.compile(f"[{_UNSAFE}]")
_UNSAFE_ONE_LINE = re.compile(f"[{_UNSAFE}\n\t]")


def _spell(match: re.Match) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape), e.g. in a file name
        return f"\\x{code - 0xDC00:02x}"
    return {"\n": "\\n", "\t": "\\t"}.get(match.group()) or (
        f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def plain(value, *, one_line: bool = False) -> str:
    """Text from data (titles, snippets, ids, file names, error messages) as a terminal may show
    it: control characters, bidi overrides and undecodable bytes spelled out (`\\x1b[2J`), so
    export text can neither move the cursor, clear the screen, retitle the window nor plant a
    link. `one_line` also spells out newlines and tabs."""
    return (_UNSAFE_ONE_LINE if one_line else _UNSAFE_MULTILINE).sub(_spell, str(value))


def safe(value, *, one_line: bool = False) -> str:
    """`plain`, then Rich markup escaped: the form for putting data into a markup string
    (`[redacted]` stays literal). Emoji codes (`:x:`) stay literal because our consoles and
    `markup()` never replace them."""
    return escape(plain(value, one_line=one_line))


def markup(text: str) -> Text:
    """Our own markup (with `safe` data inside) as Text, for titles that Rich would otherwise
    parse with emoji codes on (Panel titles do)."""
    return Text.from_markup(text, emoji=False)
