"""Topical rollups: which episodes belong to a topic, found through an episode search index.

Declared topics are searched for; `topics="auto"` first discovers topics from the episodes'
distinctive terms (deterministic: document-frequency ranking with a greedy coverage pass).
"""
from __future__ import annotations

import math
import re
from collections import Counter

from synix_resources.search.documents import IndexDoc

RELATIVE_CUTOFF = 0.4  # of the best hit's BM25 score
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
_STOP = set("""about above after again against also among another because been before being below
between both came come could does doing done down during each even every from further have having
here into just like made make many might more most much must never only other over really same
should some such than that their them then there these they thing things this those through under
until very want well were what when where which while will with would your yours user assistant
conversation discussed summary episode their they them sam's users also including asked talked
mentioned wanted decided""".split())


def _index(ctx, layer: str, arts):
    # imported here, as in projections.py: only a topical rollup's step needs numpy/sqlite_utils
    from synix_resources.search.index import SearchIndex

    ctx.paths.internal.mkdir(parents=True, exist_ok=True)
    index = SearchIndex(ctx.paths.internal / f"topics-{layer}.db", embeddings=False)
    index.sync(f"topics-{layer}", [
        IndexDoc(artifact_id=a.artifact_id, layer=a.layer, level=a.level, content=a.content,
                 content_hash=a.content_hash, title=str(a.metadata.get("meta.chat.title") or ""),
                 date=a.metadata.get("meta.time.created_at"), metadata={})
        for a in arts])
    return index


def discover(texts: list[str], max_topics: int = 8) -> list[str]:
    """Topic names from a corpus: frequent-but-distinctive terms that together cover it."""
    docs = [set(w.lower() for w in _WORD.findall(t)) - _STOP for t in texts]
    n = len(docs)
    if n == 0:
        return []
    df = Counter(w for d in docs for w in d)
    lo, hi = (2 if n >= 4 else 1), max(2, math.ceil(n * 0.4))
    candidates = sorted((w for w, c in df.items() if lo <= c <= hi), key=lambda w: (-df[w], w))
    uncovered = set(range(n))
    topics: list[str] = []
    for _ in range(max_topics):
        best = max(candidates, default=None,
                   key=lambda w: (sum(1 for i in uncovered if w in docs[i]), df[w], w))
        if best is None or not any(best in docs[i] for i in uncovered):
            break
        covered = {i for i in uncovered if best in docs[i]}
        partner = Counter(w for i in covered for w in docs[i] if w != best and w in df and df[w] >= lo)
        second = min(partner.items(), key=lambda kv: (-kv[1], kv[0]))[0] if partner else None
        topics.append(f"{best} {second}" if second else best)
        uncovered -= covered
        candidates.remove(best)
    return topics


def topic_names(ctx, layer: str, arts) -> list[str]:
    step = ctx.pipeline.steps[layer]
    topics = step.config["topics"]
    if topics == "auto":
        return discover([a.content for a in sorted(arts, key=lambda a: a.group_key)])
    return list(topics)


def memberships(ctx, layer: str, arts) -> dict[str, list[str]]:
    step = ctx.pipeline.steps[layer]
    if not arts:
        return {}
    by_id = {a.artifact_id: a.group_key for a in arts}
    index = _index(ctx, layer, arts)
    out: dict[str, list[str]] = {}
    try:
        for topic in topic_names(ctx, layer, arts):
            hits = index.search(topic, layers=[step.upstream], mode="fts", limit=step.config["topic_limit"])
            # Keep the episodes that are about the topic, not every one that mentions a word of it.
            floor = RELATIVE_CUTOFF * max((h.score for h in hits), default=0.0)
            keys = sorted({by_id[h.artifact_id] for h in hits
                           if h.artifact_id in by_id and h.score >= floor})
            if keys:
                out[topic] = keys
    finally:
        index.close()
    return out
