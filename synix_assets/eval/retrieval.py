"""Two ways to answer "which sessions and turns hold the evidence?" for one case.

`MemoryRetriever` searches the memory a pipeline built, as an agent would, and fuses two
rankings. Summaries: one altitude search over every indexed layer (the highest hit of a lineage
wins), then, hit by hit, down its provenance: the hit's own source turns, ranked by the question
(the leaf ranking restricted to its transcripts, or `drill_down(hit, question, per="passage")`).
A hit is credited with the sessions it derives from, matched turns first, then the rest of its
sources, so an episode or monthly hit counts for its source sessions. Leaves: the transcripts
themselves, searched directly (`search(..., leaves=True)`). k still means "k sessions (or turns)
read". Each hit's lineage is checked in the artifact store (`leaves`) against the index's
provenance: every hit must trace to benchmark turns.

`RawRag` is the baseline with no pipeline: every session's raw turns indexed and searched
(session = artifact search, turn = passage search) — the search engine alone.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from synix_assets.eval.data import Case
from synix_assets.eval.source import session_title, turn_map
from synix_resources.fingerprints import content_hash
from synix_resources.search.documents import IndexDoc
from synix_resources.search.index import SearchIndex
from synix_resources.store.artifact_store import ArtifactStore

DRILL_PASSAGES = 30   # turns ranked under one hit
DRILL_HITS = 5        # hits whose provenance is walked (an agent reads the first few)
TURNS_PER_ROUND = 2   # turns taken from each hit per round
CONTEXT_HITS = 5      # hits whose text goes into a QA prompt
CONTEXT_TURNS = 10    # drilled turns that go into a QA prompt
LEAF_PASSAGES = 30    # turns ranked on the transcripts directly
LEAF_POOL = 100       # ranked turns a summary hit's own turns are taken from
# The memory's ranking fuses the leaf ranking (the transcripts searched directly) with the
# summaries' (hits credited with the sessions/turns they derive from) by weighted reciprocal
# rank: weight / (FUSION_K + rank). A small k keeps the head of each list decisive.
FUSION_K = 2
# The leaf ranking is raw RAG's own (the same units), so the summaries may only move turns and
# sessions the leaves nearly tie on: a summary's best credit (0.05 / 3) is less than the gap
# between any two of the leaves' first 6 places, so the first 5 are the leaves' (raw RAG's) by
# construction, and it lifts an item a place or two around rank 10. Picked on LoCoMo
# conv-26/30/41 (topical: 0.15 S@5/T@10 .9426/.8877, 0.1 .9452/.8851, 0.05 .9452/.8877, raw
# RAG .9452/.8851; main equal to raw RAG at each), checked on conv-42/43 (topical 0.15
# .9416/.8541 against raw RAG's .9443/.8488; 0.05 equal to it in every category).
SUMMARY_WEIGHT = 0.05


@dataclass
class Ranking:
    sessions: list[str] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)
    layers: list[str] = field(default_factory=list)      # layer of each top hit, best first
    hits_checked: int = 0
    hits_complete: int = 0
    ms: float = 0.0
    passages: list[str] = field(default_factory=list)    # retrieved text, best first (QA context)

    def add(self, session: str | None, turn: str | None = None) -> None:
        if session is not None and session not in self.sessions:
            self.sessions.append(session)
        if turn is not None and turn not in self.turns:
            self.turns.append(turn)


def fuse_ranks(rankings: list[list[str]], weights: tuple[float, ...] = (1.0, SUMMARY_WEIGHT),
               k: int = FUSION_K) -> list[str]:
    """Weighted reciprocal-rank fusion of ranked id lists, best first (ties: first seen)."""
    score: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights):
        for i, item in enumerate(ranking):
            score[item] = score.get(item, 0.0) + weight / (k + i + 1)
    return sorted(score, key=lambda item: -score[item])


def case_docs(case: Case) -> list[IndexDoc]:
    """One transcript document per session, searched message by message (raw-rag): the same
    units as the memory's transcript of that session (its title, each turn as its speaker said
    it), so the memory's leaf search and raw RAG rank the same turns the same way."""
    docs = []
    for s in case.sessions:
        messages = tuple({"index": i, "id": t.turn_id, "speaker": t.speaker, "text": t.text}
                         for i, t in enumerate(s.turns))
        if not messages:
            continue
        content = "\n".join(f"{m['speaker']}: {m['text']}" for m in messages)
        docs.append(IndexDoc(
            artifact_id=f"{case.case_id}/{s.session_id}", layer="transcripts", level=0,
            content=content, content_hash=content_hash(content), title=session_title(s), date=s.date,
            source="benchmark", metadata={"session": s.session_id},
            sources=({"conversation_id": case.case_id, "title": s.session_id, "date": s.date,
                      "message_range": [0, len(messages) - 1]},),
            messages=messages))
    return docs


class RawRag:
    name = "raw-rag"

    def __init__(self, case: Case, index_path: Path, *, embeddings: bool | str = "auto",
                 vector_cache: Path | None = None):
        self.case = case
        # vector_cache: the memory's index of the same case embedded the same turns
        self.index = SearchIndex(index_path, embeddings=embeddings, vector_cache=vector_cache)
        self.index.sync("benchmark", case_docs(case))
        self._session_of = {f"{case.case_id}/{s.session_id}": s.session_id for s in case.sessions}
        self._text = {t.turn_id: f"{t.speaker}: {t.text}" for s in case.sessions for t in s.turns}

    def rank(self, question: str, mode: str, depth: int = 10) -> tuple[Ranking, str | None]:
        self.index.clear_query_cache()  # each mode pays for its own query embedding
        start = time.perf_counter()
        # the search engine alone: the words, not the dates a pipeline gives its documents
        sessions = self.index.search(question, mode=mode, limit=depth, dates=False)
        turns = self.index.search(question, mode=mode, limit=depth, per="passage", dates=False)
        out = Ranking(ms=(time.perf_counter() - start) * 1000)
        for h in sessions:
            out.add(self._session_of.get(h.artifact_id))
            out.layers.append(h.layer)
        for h in turns:
            for tid in h.message_ids:
                out.add(None, tid)
        out.passages = [self._text[t] for t in out.turns[:CONTEXT_TURNS] if t in self._text]
        out.hits_checked = out.hits_complete = len(sessions)  # a raw turn is its own source
        return out, sessions.notice

    def close(self) -> None:
        self.index.close()


class MemoryRetriever:
    name = "memory"

    def __init__(self, case: Case, search_path: Path, store_path: Path):
        self.case = case
        self.index = SearchIndex(search_path, embeddings="auto")
        self.store = ArtifactStore(store_path)
        self._convs = turn_map(case)
        self._text = {t.turn_id: f"{t.speaker}: {t.text}" for s in case.sessions for t in s.turns}
        self._complete: dict[str, bool] = {}

    def _locate(self, conversation_id: str | None, message_id: str | None) -> tuple[str | None, str | None]:
        entry = self._convs.get(conversation_id or "")
        if entry is None:
            return None, None
        session, turns = entry
        if message_id is None:
            return session, None
        try:
            n = int(message_id)
        except ValueError:
            return session, None
        return session, turns[n - 1] if 1 <= n <= len(turns) else None

    def complete(self, hit) -> bool:
        """The hit's lineage in the store reaches benchmark sessions only, and exactly the
        leaves the index credits it with."""
        if hit.artifact_id not in self._complete:
            leaves = self.store.leaves(hit.artifact_id, max_depth=32, max_count=1_000_000)
            convs = [a.metadata.get("meta.chat.conversation_id") for a in leaves]
            self._complete[hit.artifact_id] = bool(leaves) and all(c in self._convs for c in convs) \
                and {a.artifact_id for a in leaves} == set(hit.provenance)
        return self._complete[hit.artifact_id]

    def credit(self, hit, question: str, mode: str, leaf_turns: list | None = None) -> tuple[list, list]:
        """(sessions, turns) one hit is credited with, best first: the turns its drill-down
        reaches and their sessions, then the sources the question's words did not reach.
        `leaf_turns` ((transcript id, session, turn) best first, from `leaf_ranking`) replaces
        the drill-down query: the hit's own turns are the ranked turns of its provenance."""
        sessions, turns = [], []

        def add(session, turn):
            if session is not None and session not in sessions:
                sessions.append(session)
            if turn is not None and turn not in turns:
                turns.append(turn)

        conv = hit.sources[0].get("conversation_id") if hit.sources else None
        if hit.message_ids:  # a transcript the pipeline indexes itself
            for mid in hit.message_ids:
                add(*self._locate(conv, mid))
            return sessions, turns
        if leaf_turns is not None:
            mine = set(hit.provenance)
            ranked = [(session, turn) for aid, session, turn in leaf_turns if aid in mine]
        else:
            ranked = [self._locate(under.sources[0].get("conversation_id") if under.sources else None, mid)
                      for under in self.index.drill_down(hit.artifact_id, question, mode=mode,
                                                         limit=DRILL_PASSAGES, per="passage")
                      for mid in under.message_ids]
        for session, turn in ranked:
            add(session, turn)
        for src in hit.sources:  # sources the words did not reach still derive the hit
            add(self._locate(src.get("conversation_id"), None)[0], None)
        return sessions, turns

    def rank(self, question: str, mode: str, depth: int = 10) -> tuple[Ranking, str | None]:
        self.index.clear_query_cache()
        start = time.perf_counter()
        hits = self.index.search(question, mode=mode, limit=depth)
        leaves, pool = self.leaf_ranking(question, mode, depth)
        below = [self.credit(h, question, mode, pool) for h in hits[:DRILL_HITS]]
        summaries = Ranking()
        # Read the hits in rounds: each hit's best session and best TURNS_PER_ROUND turns, then
        # the next ones, so one wrong hit cannot fill the top k with its own turns.
        for r in range(max((max(len(s), len(t)) for s, t in below), default=0)):
            for sessions, turns in below:
                if r < len(sessions):
                    summaries.add(sessions[r])
                for turn in turns[r * TURNS_PER_ROUND:(r + 1) * TURNS_PER_ROUND]:
                    summaries.add(None, turn)
        out = Ranking(sessions=fuse_ranks([leaves.sessions, summaries.sessions]),
                      turns=fuse_ranks([leaves.turns, summaries.turns]))
        out.ms = (time.perf_counter() - start) * 1000
        out.layers = [h.layer for h in hits]
        out.hits_checked = len(hits) + leaves.hits_checked
        out.hits_complete = sum(self.complete(h) for h in hits) + leaves.hits_complete
        out.passages = [h.content for h in hits[:CONTEXT_HITS]] + \
            [self._text[t] for t in out.turns[:CONTEXT_TURNS] if t in self._text]
        return out, hits.notice

    def leaf_ranking(self, question: str, mode: str, depth: int) -> tuple[Ranking, list]:
        """Sessions and turns ranked on the transcripts themselves (the leaves every summary
        derives from): an agent searching its memory also reads below the summaries. Also the
        pool of ranked turns, (transcript id, session, turn) best first, that summary hits are
        expanded into (each hit's turns are the pool's turns of its provenance)."""
        out = Ranking()
        docs = self.index.search(question, mode=mode, limit=depth, leaves=True)
        for h in docs:
            out.add(self._locate(h.sources[0].get("conversation_id") if h.sources else None, None)[0])
        pool = []
        for h in self.index.search(question, mode=mode, limit=LEAF_POOL, per="passage", leaves=True):
            conv = h.sources[0].get("conversation_id") if h.sources else None
            for mid in h.message_ids:
                session, turn = self._locate(conv, mid)
                if turn is not None:
                    pool.append((h.artifact_id, session, turn))
        for _, _, turn in pool[:LEAF_PASSAGES]:
            out.add(None, turn)
        out.hits_checked = len(docs)
        out.hits_complete = sum(self.complete(h) for h in docs)
        return out, pool

    def close(self) -> None:
        self.index.close()
        self.store.close()
