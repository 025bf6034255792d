"""PII detection and redaction (regex; no network, no model).

`pii="flag"` records how many findings of each kind a record holds (`meta.custom.pii`);
`pii="detect"` also records where each one is (`meta.custom.pii_findings`: kind and character
span, never the value, so the metadata does not copy what it points at) and leaves the text as
it is; `pii="redact"` replaces them with typed placeholders before the text reaches an LLM or
the index.
"""
from __future__ import annotations

import re
from collections import Counter

_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("API_KEY", re.compile(r"\b(?:sk-(?:ant-)?[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|ghp_[A-Za-z0-9]{30,}|"
                           r"xox[baprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,})")),
    ("EMAIL", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")),
    ("IBAN", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")),
    ("CARD", re.compile(r"\b(?:\d[ -]?){13,19}\b")),
    ("US_SSN", re.compile(r"\b\d{3}-\d{2}-\d{4}\b")),
    ("PHONE", re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]\d{2,8}){1,4}(?![\w])")),
]


_DATEISH = re.compile(r"(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])")


def _luhn_ok(digits: str) -> bool:
    nums = [int(c) for c in digits if c.isdigit()]
    if not 13 <= len(nums) <= 19:
        return False
    total = 0
    for i, n in enumerate(reversed(nums)):
        if i % 2:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return total % 10 == 0


def _valid(kind: str, text: str) -> bool:
    if kind == "CARD":
        return _luhn_ok(text)
    if kind == "PHONE":
        digits = sum(c.isdigit() for c in text)
        # dates and clock times (e.g. a transcript's own "2024-01-05 10:02") are not phones
        return 8 <= digits <= 15 and not _DATEISH.search(text)
    return True


def find_pii(text: str) -> list[tuple[str, int, int]]:
    """Non-overlapping (kind, start, end) spans, earlier patterns winning overlaps."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[str, int, int]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            s, e = m.span()
            if any(s < te and ts < e for ts, te in taken) or not _valid(kind, m.group()):
                continue
            taken.append((s, e))
            found.append((kind, s, e))
    return sorted(found, key=lambda x: x[1])


# A record's findings listed in its metadata at most (its counts are always complete): enough to
# review a record, without a pasted contact list making every read of the record slow.
MAX_FINDINGS = 200


def locate(text: str) -> list[dict]:
    """`pii="detect"`: where the findings are, as {"kind", "start", "end"} (the first
    MAX_FINDINGS)."""
    return [{"kind": kind, "start": s, "end": e} for kind, s, e in find_pii(text)[:MAX_FINDINGS]]


def summarise(text: str) -> dict[str, int]:
    return dict(Counter(kind for kind, _, _ in find_pii(text)))


def redact(text: str) -> tuple[str, dict[str, int]]:
    spans = find_pii(text)
    out, last = [], 0
    for kind, s, e in spans:
        out.append(text[last:s])
        out.append(f"[{kind}]")
        last = e
    out.append(text[last:])
    return "".join(out), dict(Counter(k for k, _, _ in spans))
