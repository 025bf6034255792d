"""User text → a safe FTS5 MATCH expression.

Raw user text never reaches MATCH: FTS5 gives meaning to quotes, `*`, `-`, `:`, `^`, `NEAR`,
`AND`/`OR`/`NOT` and parentheses, and an unbalanced quote is a syntax error. We cut the text into
word tokens ourselves and put each one inside a double-quoted FTS5 string, which FTS5 reads as
plain text whatever it contains.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from synix_resources.errors import SearchError
from synix_resources.text import escape_invalid, is_valid_text

# Long queries (a pasted page) would make an OR over thousands of terms; the first distinct
# terms carry the intent and keep query time bounded.
MAX_TERMS = 64

# An exact phrase is matched by substring (trigram candidates, then a scan of each candidate);
# FTS5's trigram phrase cost grows roughly with the square of the phrase length (100 KB: 31 s,
# 2.8 GB), and nobody remembers 1,000 characters verbatim.
MAX_PHRASE_CHARS = 1000

# A general English stop list (function words, auxiliaries, question words). Not tuned to any
# benchmark: these words carry no topic, so in an OR query they only add noise matches.
STOP_WORDS = frozenset("""
a about above after again against all also am an and any are aren as at be because been before
being below between both but by can cannot could couldn d did didn do does doesn doing don down
during each few for from further had hadn has hasn have haven having he her here hers herself him
himself his how i if in into is isn it its itself just ll m me might more most must mustn my myself
no nor not now o of off on once only or other ought our ours ourselves out over own re s same
shan she should shouldn so some such t than that the their theirs them themselves then there these
they this those through to too under until up ve very was wasn we were weren what when where which
while who whom why will with won would wouldn y you your yours yourself yourselves
ever else etc get got let lets like likely may much many one shall since thing things upon whose
""".split())


@dataclass(frozen=True)
class ParsedQuery:
    """A query cut into tokens. `terms` are lower-cased word tokens in order, without repeats;
    `content_terms` drops stop words unless that would leave nothing; `literal` is the text of a
    query that has symbols (emoji) but no word tokens, searched as a substring."""

    text: str
    terms: tuple[str, ...]
    content_terms: tuple[str, ...]
    literal: str | None = None


def _is_token_char(ch: str) -> bool:
    # Letters, digits and combining marks (Hebrew points, Devanagari vowel signs) form words,
    # as in SQLite's unicode61 tokenizer; everything else separates.
    cat = unicodedata.category(ch)
    return cat[0] in "LNM" or cat == "Co"


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of `text`, split the way unicode61 splits."""
    tokens: list[str] = []
    current: list[str] = []
    for ch in text:
        if _is_token_char(ch):
            current.append(ch)
        elif current:
            tokens.append("".join(current))
            current = []
    if current:
        tokens.append("".join(current))
    return [t.casefold() for t in tokens]


def require_text(value: object, what: str) -> str:
    """`value` if it is valid text; else a one-line `SearchError` naming it (bytes that are not
    UTF-8 on a command line arrive as lone surrogates, which SQLite cannot take)."""
    if not isinstance(value, str):
        raise SearchError(f"{what} must be text, got {type(value).__name__}")
    if not is_valid_text(value):
        shown = escape_invalid(value[:60])
        raise SearchError(f"{what} '{shown}' is not valid Unicode text (bytes that are not UTF-8, "
                          "or a lone surrogate)", hint="retype it as UTF-8 text")
    return value


def check_phrase(phrase: object) -> str:
    """An exact-search phrase: valid text, not empty, at most MAX_PHRASE_CHARS characters."""
    phrase = require_text(phrase, "exact search phrase").replace("\x00", "")
    if not phrase.strip():
        raise SearchError("exact search phrase is empty — give the text to find")
    if len(phrase) > MAX_PHRASE_CHARS:
        raise SearchError(f"exact search phrase is {len(phrase):,} characters; the limit is "
                          f"{MAX_PHRASE_CHARS:,}", hint="search for a shorter distinctive part of it")
    return phrase


def parse_query(text: str) -> ParsedQuery:
    """Cut user text into terms; raise `SearchError` when nothing searchable is left."""
    require_text(text, "search query")
    cleaned = text.replace("\x00", " ")
    seen: dict[str, None] = {}
    for token in tokenize(cleaned):
        if token not in seen:
            seen[token] = None
        if len(seen) >= MAX_TERMS:
            break
    terms = tuple(seen)
    if not terms:
        symbols = "".join(ch for ch in cleaned.strip()
                          if unicodedata.category(ch) == "So")  # emoji, pictographs
        if symbols:
            if len(cleaned.strip()) > MAX_PHRASE_CHARS:  # a substring scan, bounded like --exact
                raise SearchError(f"search query of {len(cleaned.strip()):,} symbols and no words "
                                  f"is longer than {MAX_PHRASE_CHARS:,} characters",
                                  hint="search for fewer symbols, or add words")
            return ParsedQuery(text=text, terms=(), content_terms=(), literal=cleaned.strip())
        if not cleaned.strip():
            raise SearchError("search query is empty — type some words to search for")
        raise SearchError(f"search query {text[:40]!r} has no words to search for — "
                          "use letters or digits")
    content = tuple(t for t in terms if t not in STOP_WORDS) or terms
    return ParsedQuery(text=text, terms=terms, content_terms=content)


def quote_term(term: str) -> str:
    """An FTS5 string literal: double quotes inside are doubled, so any text is safe."""
    return '"' + term.replace('"', '""') + '"'


def fts_match(parsed: ParsedQuery, *, operator: str = "OR") -> str | None:
    """The MATCH expression for `parsed`: its content terms joined by OR (ranked by BM25) or AND.
    None when the query has no word terms (symbol-only queries are matched as substrings)."""
    if operator not in ("OR", "AND"):
        raise SearchError(f"unknown query operator {operator!r} — use 'OR' or 'AND'")
    if not parsed.content_terms:
        return None
    return f" {operator} ".join(quote_term(t) for t in parsed.content_terms)
