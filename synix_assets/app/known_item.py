"""Known-item search, measured the way people search their history: "the conversation where I
asked about X". For N conversations picked deterministically, three words rare across the
corpus are taken from the conversation's own messages; a search finds the conversation when a
hit in its top k is that conversation's own record (its transcript, a passage of it, its
episode) or a rollup narrow enough to stand for it (`fusion.NARROW_COVER`).

Used by benchmarks/bench_known_item.py (every door) and importable by the eval."""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable

from synix_assets.engine.projections import transcript_messages
from synix_assets.project import ProjectPaths
from synix_resources.search.fusion import NARROW_COVER
from synix_resources.search.query import STOP_WORDS

_WORD = re.compile(r"[a-z]{4,24}")
MAX_SHARE = 0.05  # a word in more than this share of the conversations is not rare


@dataclass(frozen=True)
class KnownItem:
    """One question: `words` from conversation `conversation_id` (transcript `transcript_id`)."""

    conversation_id: str
    transcript_id: str
    title: str
    words: tuple[str, ...]

    @property
    def query(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class Corpus:
    """What measuring needs of a built project: its transcripts' words and, per artifact id,
    the conversations it covers."""

    words: dict[str, tuple[str, set[str], str]]   # conversation id -> (transcript id, words, title)
    covers: dict[str, frozenset[str]]              # artifact id -> conversation ids under it


def read_corpus(paths: ProjectPaths) -> Corpus:
    """The project's current source transcripts (level-0 records with messages) and what every
    current record covers, read once from the store."""
    store = paths.open_store(read_only=True)
    try:
        arts = [a for layer in store.layers() for a in store.list_layer(layer)]
        by_id = {a.artifact_id: a for a in arts}
        words: dict[str, tuple[str, set[str], str]] = {}
        conv_of: dict[str, str] = {}
        for a in arts:
            if a.parent_ids:
                continue
            messages = transcript_messages(a.content)
            if not messages:
                continue
            cid = a.metadata.get("meta.chat.conversation_id") or a.group_key
            conv_of[a.artifact_id] = cid
            text = " ".join(m["text"] for m in messages).lower()
            words[cid] = (a.artifact_id, set(_WORD.findall(text)) - STOP_WORDS,
                          a.metadata.get("meta.chat.title", ""))
        covers: dict[str, frozenset[str]] = {}

        def under(aid: str, seen: set[str]) -> frozenset[str]:
            if aid in covers:
                return covers[aid]
            if aid in conv_of:
                return frozenset([conv_of[aid]])
            art = by_id.get(aid)
            if art is None or aid in seen:
                return frozenset()
            seen.add(aid)
            found = frozenset().union(*(under(p, seen) for p in art.parent_ids)) if art.parent_ids else frozenset()
            covers[aid] = found
            return found

        for a in arts:
            covers[a.artifact_id] = under(a.artifact_id, set())
        return Corpus(words, covers)
    finally:
        store.close()


def _rank(seed: int, text: str) -> str:
    return hashlib.sha256(f"{seed}:{text}".encode()).hexdigest()


def known_items(corpus: Corpus, n: int = 80, *, words: int = 3, seed: int = 0) -> list[KnownItem]:
    """`n` conversations (in a seeded hash order of their ids) with `words` of their own words
    each: the rarest across the corpus (document frequency, at most MAX_SHARE of the
    conversations), ties broken by the same seeded hash. A conversation with fewer such words
    is passed over."""
    df = Counter(w for _, ws, _ in corpus.words.values() for w in ws)
    most = max(1, int(MAX_SHARE * len(corpus.words)))
    items = []
    for cid in sorted(corpus.words, key=lambda c: _rank(seed, c)):
        tid, ws, title = corpus.words[cid]
        rare = sorted((w for w in ws if df[w] <= most), key=lambda w: (df[w], _rank(seed, w)))
        if len(rare) >= words:
            items.append(KnownItem(cid, tid, title, tuple(rare[:words])))
        if len(items) == n:
            break
    return items


def finds(corpus: Corpus, artifact_id: str, conversation_id: str) -> bool:
    """Whether a hit on `artifact_id` finds the conversation: it covers it and at most
    NARROW_COVER conversations in all (a record of that conversation, or a narrow rollup)."""
    under = corpus.covers.get(artifact_id, frozenset())
    return conversation_id in under and len(under) <= NARROW_COVER


def recall_at(corpus: Corpus, items: Iterable[KnownItem],
              search: Callable[[str], list[str]], k: int = 5) -> dict:
    """Recall@k of `search` (a query -> the hits' artifact ids, best first) over `items`:
    {"recall": share found, "found": n, "questions": n, "missed": [queries]}."""
    found, missed, total = 0, [], 0
    for item in items:
        total += 1
        ids = search(item.query)[:k]
        if any(finds(corpus, aid, item.conversation_id) for aid in ids):
            found += 1
        else:
            missed.append(item.query)
    return {"recall": round(found / total, 4) if total else 0.0, "found": found,
            "questions": total, "missed": missed}
