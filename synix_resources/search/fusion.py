"""Ranking arithmetic: weighted fusion of BM25 and cosine scores, an artifact's score from its
units, and the document and speaker priors of passage ranking. The constants are read from this
module's globals at call time (tests patch them here)."""
from __future__ import annotations

from typing import Iterable

import numpy as np

# BM25F column weights: the message itself, its neighbours, the document title.
BM25_WEIGHTS = (1.0, 0.3, 0.5)
# Hybrid = weighted score fusion: (1 - w) * BM25 / best BM25 + w * min-max scaled cosine.
# Scores, unlike RRF ranks, keep how far ahead the best match is. w was picked on LoCoMo
# conv-26/30/41 and checked on conv-42/43 (eval/locomo.py); 0.3-0.5 all beat RRF on both halves.
SEMANTIC_WEIGHT = 0.4
# An artifact's score = its best unit + SPREAD_WEIGHT x the next SPREAD_UNITS - 1 units: a
# session that answers with several messages outranks one lucky line (session R@1 +2 points).
SPREAD_WEIGHT = 0.2
SPREAD_UNITS = 5
# A passage's score gains DOCUMENT_PRIOR x its artifact's score (as a share of the best
# artifact's): the turns of the conversation that answers best come first. Picked on LoCoMo
# conv-26/30/41, checked on conv-42/43: turn R@10 +0.7 / +1.3 points; 0.2-1.0 all help.
DOCUMENT_PRIOR = 0.5
# A passage whose speaker the query names ("what did Caroline…", "what did the assistant…")
# gains SPEAKER_PRIOR x the best passage's score: questions about a person are mostly answered
# by that person's own messages, whose name BM25 weighs little (it is on half the turns).
# Picked on LoCoMo conv-26/30/41 (hybrid turn R@10 +1.0), checked on conv-42/43.
SPEAKER_PRIOR = 0.15
# Unscoped search returns the highest altitude (design §4.6) where it is narrow. A rollup built from at most this many conversations narrowly covers the records under it: it
# stands for them in an unscoped search. A wider one (a month of a busy history, the core
# memory) ranks beside them instead of hiding them.
NARROW_COVER = 8
# A unit the query's words miss matches only if its cosine with the query reaches this: below
# it, semantic and hybrid search would pad the list with unrelated records ("bread" finding
# "Borrow checker…"). MiniLM cosines of unrelated chat lines sit around 0-0.2.
MATCH_COSINE = 0.25


def fuse_scores(lexical: list[tuple[int, float]], semantic: list[tuple[int, float]],
                unit_ids: np.ndarray, sims: np.ndarray,
                weight: float) -> list[tuple[int, float]]:
    """Weighted score fusion of a BM25 ranking and a cosine ranking, best first.

    BM25 is divided by the query's best BM25 (0 for a unit the words miss); cosine is min-max
    scaled over every unit of the index (`unit_ids` ascending, `sims` aligned), so a unit found
    by only one ranker still gets its real score from the other. Ties break on unit id.
    """
    lex = dict(lexical)
    best = max(lex.values(), default=0.0)
    lo, hi = (float(sims.min()), float(sims.max())) if len(sims) else (0.0, 0.0)
    span = hi - lo if hi > lo else 1.0
    cosine = dict(semantic)
    fused: dict[int, float] = {}
    for uid in dict.fromkeys([u for u, _ in lexical] + [u for u, _ in semantic]):
        if uid not in cosine:
            at = int(np.searchsorted(unit_ids, uid))
            found = at < len(unit_ids) and unit_ids[at] == uid
            cosine[uid] = float(sims[at]) if found else lo  # no vector: no semantic credit
        lexical_part = lex.get(uid, 0.0) / best if best > 0 else 0.0
        fused[uid] = (1.0 - weight) * lexical_part + weight * (cosine[uid] - lo) / span
    return sorted(fused.items(), key=lambda x: (-x[1], x[0]))


def aggregate_by_doc(scored: list[tuple[int, float]],
                     doc_of: dict[int, int]) -> list[tuple[int, float]]:
    """One (best unit, artifact score) per artifact, best first: the artifact score is its best
    unit's plus SPREAD_WEIGHT x its next SPREAD_UNITS - 1 units' (positive) scores."""
    per_doc: dict[int, list[tuple[int, float]]] = {}
    for uid, score in scored:  # `scored` is best first, so each list is too
        per_doc.setdefault(doc_of[uid], []).append((uid, score))
    picked = []
    for units in per_doc.values():
        best_uid, best = units[0]
        rest = sum(max(0.0, score) for _, score in units[1:SPREAD_UNITS])
        picked.append((best_uid, best + SPREAD_WEIGHT * rest))
    return sorted(picked, key=lambda x: (-x[1], x[0]))


def with_document_prior(scored: list[tuple[int, float]], doc_of: dict[int, int],
                        weight: float) -> list[tuple[int, float]]:
    """Passage scores plus `weight` x their artifact's `aggregate_by_doc` score divided by the
    best artifact's, best first (ties on unit id)."""
    if not scored or weight <= 0:
        return list(scored)
    doc_score = {doc_of[uid]: score for uid, score in aggregate_by_doc(scored, doc_of)}
    best = max(doc_score.values())
    if best <= 0:
        return list(scored)
    boosted = [(uid, score + weight * max(0.0, doc_score[doc_of[uid]]) / best)
               for uid, score in scored]
    return sorted(boosted, key=lambda x: (-x[1], x[0]))


def message_speaker(body: str) -> str | None:
    """The speaker of a message unit ("Caroline: …" → "caroline"), None for other units. A
    message of a multi-party chat exported as one side of a two-role conversation reads
    "User: Caroline: …": both names are its speaker ("user caroline")."""
    names = []
    rest = body
    for _ in range(2):
        head, sep, tail = rest.partition(": ")
        if not (sep and 0 < len(head) <= 40 and "\n" not in head):
            break
        names.append(head.strip().casefold())
        rest = tail
    return " ".join(names) or None


def with_speaker_prior(scored: list[tuple[int, float]], speakers: dict[int, str | None],
                       terms: Iterable[str], weight: float) -> list[tuple[int, float]]:
    """Passages spoken by someone the query names gain `weight` x the best score, best first."""
    named = {t.casefold() for t in terms}
    if not scored or weight <= 0 or not named:
        return list(scored)
    lift = weight * max(0.0, max(score for _, score in scored))
    boosted = [(uid, score + (lift if speakers.get(uid) and set(speakers[uid].split()) & named else 0.0))
               for uid, score in scored]
    return sorted(boosted, key=lambda x: (-x[1], x[0]))
