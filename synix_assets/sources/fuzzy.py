"""`merge(dedupe="fuzzy")`: near-duplicate conversations under different ids — the same chat
exported twice with an edit, or by two tools — become one transcript.

Similarity is the share of the shorter conversation's 5-word shingles found in the other's
(containment: a re-export that was edited or continued still contains what the first one said);
two conversations at or above the merge's `threshold` (default 0.8, `FUZZY_THRESHOLD`) are one,
transitively.
Conversations shorter than MIN_SHINGLES shingles are never merged: too little text to tell.

Only conversations that share a blocking key — the same normalised title, or the same day they
started — are compared, each with at most NEIGHBOURS others of a block in a fixed order, so
10,000 conversations cost a few hundred thousand set comparisons at most, and the same input
always gives the same groups.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from synix_assets.sources.model import ConversationSummary

SHINGLE_WORDS = 5
MIN_SHINGLES = 10
NEIGHBOURS = 50
_WORD = re.compile(r"\w+")


def shingles(text: str) -> frozenset[int]:
    """The hashes of a text's runs of SHINGLE_WORDS words (lower-cased)."""
    words = _WORD.findall(text.lower())
    return frozenset(hash(" ".join(words[i:i + SHINGLE_WORDS]))
                     for i in range(max(0, len(words) - SHINGLE_WORDS + 1)))


def similarity(a: frozenset[int], b: frozenset[int]) -> float:
    """How much of the shorter set is in the longer one (0 when either is too short to judge)."""
    if min(len(a), len(b)) < MIN_SHINGLES:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def _blocks(summaries: list[ConversationSummary]) -> list[list[int]]:
    by: dict[tuple[str, str], list[int]] = {}
    for i, s in enumerate(summaries):
        title = " ".join(_WORD.findall(s.title.lower()))
        if title:
            by.setdefault(("title", title), []).append(i)
        if s.created_at:
            by.setdefault(("day", s.created_at[:10]), []).append(i)
    return [members for _, members in sorted(by.items()) if len(members) > 1]


def candidates(summaries: list[ConversationSummary]) -> list[ConversationSummary]:
    """The conversations that share a block with another: the only ones whose text is needed."""
    return [summaries[i] for i in sorted({i for block in _blocks(summaries) for i in block})]


@dataclass(frozen=True)
class Duplicate:
    summary: ConversationSummary
    similarity: float


def clusters(summaries: list[ConversationSummary], sets: Callable[[ConversationSummary], frozenset[int]],
             threshold: float) -> list[list[int]]:
    """Groups of near-duplicates (indexes into `summaries`, ascending); conversations alone are
    left out."""
    parent = list(range(len(summaries)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for block in _blocks(summaries):
        for pos, i in enumerate(block):
            for j in block[pos + 1:pos + 1 + NEIGHBOURS]:
                if root(i) != root(j) and similarity(sets(summaries[i]), sets(summaries[j])) >= threshold:
                    a, b = sorted((root(i), root(j)))
                    parent[b] = a
    groups: dict[int, list[int]] = {}
    for i in range(len(summaries)):
        groups.setdefault(root(i), []).append(i)
    return [members for members in groups.values() if len(members) > 1]


def merge_near_duplicates(chosen: dict[str, list[ConversationSummary]],
                          texts: Callable[[Iterable[ConversationSummary]], dict[str, str]],
                          threshold: float, pick: Callable[[list[ConversationSummary]], ConversationSummary],
                          ) -> tuple[dict[str, list[ConversationSummary]], dict[str, list[Duplicate]]]:
    """`chosen` (group key → the one conversation metadata_match chose) with near-duplicates
    joined: each group's key is its smallest member key (stable while the members stay), its
    conversation the one `pick` (the conflict rule) prefers. Also group key → the conversations
    merged into it. `texts` gives the transcript text of conversations by content hash."""
    keys = sorted(chosen)
    summaries = [chosen[k][0] for k in keys]
    wanted = candidates(summaries)
    if not wanted:
        return chosen, {}
    found = texts(wanted)
    cache: dict[str, frozenset[int]] = {}

    def sets(s: ConversationSummary) -> frozenset[int]:
        if s.content_hash not in cache:
            cache[s.content_hash] = shingles(found.get(s.content_hash, ""))
        return cache[s.content_hash]

    out = dict(chosen)
    merged: dict[str, list[Duplicate]] = {}
    for group in clusters(summaries, sets, threshold):
        members = [summaries[i] for i in group]
        winner = pick(members)
        for i in group:
            out.pop(keys[i])
        out[keys[group[0]]] = [winner]
        merged[keys[group[0]]] = [Duplicate(s, round(similarity(sets(winner), sets(s)), 3))
                                  for s in members if s is not winner]
    return out, merged
