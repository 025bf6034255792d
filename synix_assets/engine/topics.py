"""Topical rollups: which episodes belong to a topic, found through an episode search index.

Declared topics are searched for; `topics="auto"` first discovers topics from the episodes'
key phrases (deterministic: a greedy coverage pass over TF-IDF weighted content words, each
topic named by its most shared distinctive phrase; see `discover`).
"""
from __future__ import annotations

import math
from collections import Counter

from synix_resources.keyphrases import phrases
from synix_resources.search.documents import IndexDoc

RELATIVE_CUTOFF = 0.4  # of the best hit's BM25 score
DOMINANT = 0.5  # of a document's largest word share
TITLE_WEIGHT = 3  # a conversation's title says what it is about more surely than its body


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


def discover(texts: list[str], max_topics: int = 8, titles: list[str] | None = None) -> list[str]:
    """Topic names from a corpus: each topic is seeded by the content word most central to the
    documents not yet covered (summed TF-IDF share of each document), takes the documents the
    seed dominates, and is named by the phrase most characteristic of them (`_name`)."""
    n = len(texts)
    if n == 0:
        return []
    titles = list(titles or [""] * n)
    docs = []
    for text, title in zip(texts, titles):
        bag = phrases(text)
        for phrase, count in phrases(title).items():
            bag[phrase] += TITLE_WEIGHT * count
        docs.append(bag)
    df = Counter(p for d in docs for p in d)
    lo, hi = (2 if n >= 4 else 1), max(2, math.ceil(n * 0.4))
    idf = {p: math.log(n / c) + 1.0 for p, c in df.items()}
    share = [_shares(d, idf) for d in docs]
    seeds = {w for w, c in df.items() if lo <= c <= hi and " " not in w}
    uncovered = set(range(n))
    topics: list[str] = []
    while seeds and len(topics) < max_topics:
        weight: Counter = Counter()
        for i in uncovered:
            for word, value in share[i].items():
                if word in seeds:
                    weight[word] += value
        best = min(weight.items(), key=lambda kv: (-kv[1], kv[0]), default=(None, 0))[0]
        # a document joins the topic when the seed is one of its dominant words, not a mention
        cluster = {i for i in uncovered
                   if best and share[i].get(best, 0.0) >= DOMINANT * max(share[i].values())}
        if best is None:
            break
        seeds.discard(best)  # each pass removes one seed: the loop ends
        if len(cluster) >= lo:
            topics.append(_name(best, [docs[i] for i in cluster], idf))
            uncovered -= cluster
    return topics


def _shares(bag: Counter, idf: dict[str, float]) -> dict[str, float]:
    """Each word's share of a document's TF-IDF mass: how much the document is about it."""
    weights = {w: (1 + math.log(c)) * idf[w] for w, c in bag.items() if " " not in w}
    norm = math.sqrt(sum(v * v for v in weights.values())) or 1.0
    return {w: v / norm for w, v in weights.items()}


def _name(seed: str, cluster: list[Counter], idf: dict[str, float]) -> str:
    """The phrase with the most class-based TF-IDF in the topic's documents (title occurrences
    count TITLE_WEIGHT times), longer phrases favoured as more specific."""
    shared = Counter(p for d in cluster for p in d)
    floor = min(2, len(cluster))  # a name several conversations share, not one's aside

    def score(phrase: str) -> tuple:
        mass = sum(1 + math.log(d[phrase]) for d in cluster if phrase in d)
        return (mass * idf[phrase] * (1 + phrase.count(" ")), phrase)

    named = [p for p, c in shared.items() if c >= floor] or [seed]
    return max(named, key=score)


def topic_names(ctx, layer: str, arts) -> list[str]:
    step = ctx.pipeline.steps[layer]
    topics = step.config["topics"]
    if topics == "auto":
        ordered = sorted(arts, key=lambda a: a.group_key)
        return discover([a.content for a in ordered],
                        titles=[str(a.metadata.get("meta.chat.title") or "") for a in ordered])
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
