"""Snippets: the sentence of a hit that best shows why it matched, with the query's words in
[brackets], and the context around an exact phrase."""
from __future__ import annotations

import functools
import re
import unicodedata

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W_]+")  # close enough to unicode61 for choosing a snippet sentence


def highlight(text: str, stems: set[str], width: int = 240) -> str:
    """The sentence of `text` sharing most query words, with those words in [brackets]."""
    sentences = [s for s in _SENTENCE.split(text) if s.strip()] or [text]

    def overlap(sentence: str) -> int:
        return len({stem(t) for t in _WORD.findall(sentence.casefold())} & stems)

    best = max(sentences, key=overlap)  # max() keeps the first on ties: deterministic
    if len(best) > width:
        best = best[:width].rsplit(" ", 1)[0] + "…"

    def mark(m: re.Match) -> str:
        word = m.group(0)
        return f"[{word}]" if stem(word.casefold()) in stems else word

    return re.sub(r"[^\W_]+", mark, best)


@functools.lru_cache(maxsize=65536)  # called for every word of every snippet candidate
def stem(word: str) -> str:
    # A light suffix strip, only to decide what to highlight; ranking uses FTS5's porter.
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def exact_snippet(content: str, needle: str, width: int = 80) -> str:
    folded = fold(content)
    at = folded.find(needle)
    if at < 0 or len(folded) != len(content):
        # casefold changed the length (e.g. ß → ss): show the start rather than a shifted cut.
        return content[:2 * width]
    start, end = max(0, at - width), min(len(content), at + len(needle) + width)
    return ((("…" if start else "") + content[start:at] + "[" + content[at:at + len(needle)]
             + "]" + content[at + len(needle):end] + ("…" if end < len(content) else "")))
