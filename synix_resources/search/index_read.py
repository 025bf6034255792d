"""The read side of the index: ranked search, drill-down below one artifact and exact phrase
search. One search reads one snapshot (`_snapshot`), so the generation its caches are keyed by
and the rows it reads belong to the same committed state."""
from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Collection, Iterable, Iterator

from synix_resources.errors import SearchArgumentError, SearchError
from synix_resources.search import fusion
from synix_resources.search.documents import Hit, HitSources, SearchResults
from synix_resources.search.filters import Filters, check_filters
from synix_resources.search.query import ParsedQuery, check_phrase, parse_query, require_text
from synix_resources.search.rows import Rows
from synix_resources.search.snippets import exact_snippet, fold, highlight, stem
from synix_resources.search.vectors import Vectors
from synix_resources.search.when import named_periods, padded, prefer_dated

MODES = ("fts", "semantic", "hybrid")
EXACT_PROBE_CHARS = 64  # head of an exact phrase used to find candidates (see `_exact`)
SCORED_QUERY_CACHE = 4        # recent (query, mode, filters) unit rankings kept
MAX_PERIODS = 3               # named periods a query's dated searches are run for


def check_mode_and_limit(mode, limit) -> None:
    """A search's mode is one of MODES and its limit a positive whole number; anything else is
    refused, never answered as full-text or with nothing."""
    if mode not in MODES:
        raise SearchArgumentError(f"unknown search mode {mode!r} — use one of {', '.join(MODES)}")
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise SearchArgumentError(f"limit must be a whole number of hits (1 or more), "
                                  f"not {type(limit).__name__} {limit!r}")
    if limit < 1:
        raise SearchArgumentError(f"limit must be 1 or more, got {limit}")


class IndexReader:
    """Reads of one index connection (`db`, a sqlite_utils Database) at `path` (named in errors)."""

    def __init__(self, db, path: Path, rows: Rows, vectors: Vectors):
        self.db = db
        self.path = path
        self.rows = rows
        self.vectors = vectors
        self._scored_units: OrderedDict[tuple, list] = OrderedDict()

    def clear_query_cache(self) -> None:
        self.vectors.clear_query_vectors()
        self._scored_units.clear()

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """Every read of one search in one read transaction, so the generation its caches are
        keyed by and the rows it reads belong to the same committed state. A caller already
        inside a transaction (the server's pooled readers) keeps its own."""
        conn = self.db.conn
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    def search(self, query: str, *, layers: Iterable[str] | None = None, mode: str = "fts",
               exact: bool = False, limit: int = 10, since: str | None = None,
               until: str | None = None, source: str | None = None,
               per: str = "artifact", leaves: bool = False, period: str | None = None,
               conversation: str | None = None, dates: bool = True,
               exclude: Collection[str] = ()) -> SearchResults:
        """`SearchIndex.search`."""
        check_mode_and_limit(mode, limit)
        if per not in ("artifact", "passage"):
            raise SearchError(f"unknown per={per!r} — use 'artifact' or 'passage'")
        checked = check_filters(layers=layers, since=since, until=until, source=source,
                                period=period, conversation=conversation)
        with self._snapshot():
            layer_list = self._check_layers(checked.layers)
            filters = dataclasses.replace(checked, layers=layer_list, leaves=leaves)
            if exact:
                return SearchResults(self._exact(check_phrase(query), filters, limit),
                                     mode="exact", requested_mode="exact")
            parsed = parse_query(query)
            dedup = layer_list is None and not leaves
            scored, used, notice = self._scored(parsed, mode, filters, restrict=None)
            weak = dedup and per == "artifact" and bool(self.rows.lacking_terms(parsed))
            if weak:
                # Words the summaries do not hold at all: the conversations' own words rank too
                # (the leaf ranking, as `leaves=True`). A summary leaves out most of what was
                # said, and a search must never find less than searching the transcripts
                # would. Altitude then folds each transcript into the narrow record above it
                # that matched (its episode), which ranks at the better of the two. Only then:
                # ranking every message costs tens of milliseconds at 10,000 conversations for
                # a common word, which the summaries hold anyway.
                below, _, _ = self._scored(parsed, mode, dataclasses.replace(filters, leaves=True),
                                           restrict=None)
                scored = sorted(dict([*below, *scored]).items(), key=lambda x: (-x[1], x[0]))
            hits = self._group(scored, parsed, per, limit, dedup, exclude)
            periods = named_periods(query) if dates and not (since or until or period) else []
            if periods and scored:
                # the same ranking kept to each named period (padded); its hits are preferred
                ids, hidden = [uid for uid, _ in scored], True  # `scored` holds allowed units only
                dated = []
                for lo, hi in padded(periods[:MAX_PERIODS]):
                    inside = self.rows.filter_units(
                        ids, dataclasses.replace(filters, since=lo, until=hi), hidden)
                    dated += self._group([(uid, sc) for uid, sc in scored if uid in inside],
                                         parsed, per, limit, dedup, exclude)
                hits = prefer_dated(hits, dated, per, limit)
            return SearchResults(hits, mode=used, requested_mode=mode, notice=notice, weak=weak)

    def drill_down(self, artifact_id: str, query: str | None = None, *, mode: str = "fts",
                   limit: int = 10, per: str = "artifact") -> SearchResults:
        """`SearchIndex.drill_down`."""
        require_text(artifact_id, "artifact id")
        if per not in ("artifact", "passage"):
            raise SearchError(f"unknown per={per!r} — use 'artifact' or 'passage'")
        with self._snapshot():
            row = self.db.execute("SELECT parent_ids, ancestry FROM docs WHERE artifact_id = ?",
                                  [artifact_id]).fetchone()
            if row is None:
                raise SearchError(f"artifact {artifact_id} is not in search index {self.path}")
            parents, ancestry = json.loads(row[0]), json.loads(row[1])
            if query is None:
                hits = [self._doc_hit(aid) for aid in parents]
                return SearchResults([h for h in hits if h is not None], mode="fts",
                                     requested_mode="fts")
            parsed = parse_query(query)
            restrict = set(ancestry) | set(parents)
            scored, used, notice = self._scored(parsed, mode, Filters(None, None, None, None),
                                                restrict=restrict)
            return SearchResults(self._group(scored, parsed, per, limit, dedup=False), mode=used,
                                 requested_mode=mode, notice=notice)

    def _check_layers(self, layers) -> list[str] | None:
        if layers is None:
            return None
        layer_list = [layers] if isinstance(layers, str) else list(layers)
        known = {r[0] for r in self.db.execute("SELECT DISTINCT layer FROM docs")}
        unknown = [lay for lay in layer_list if lay not in known]
        if unknown and known:
            raise SearchError(f"unknown layer {unknown[0]!r} in search index {self.path}",
                              hint=f"indexed layers: {', '.join(sorted(known))}")
        return layer_list

    @staticmethod
    def _include_hidden(filters: Filters, restrict: set | None) -> bool:
        # a named layer may be one the projection does not list (hidden: only ever found by
        # naming it); the layer filter keeps every other hidden document out
        return restrict is not None or filters.leaves or filters.layers is not None

    def _scored(self, parsed: ParsedQuery, mode: str, filters: Filters,
                restrict: set | None) -> tuple[list[tuple[int, float]], str, str | None]:
        """Every matching unit's score, best first; the mode used and why it fell back."""
        used, notice = mode, None
        if mode != "fts" and self.vectors.embedder() is None:
            used = "fts"
            notice = (f"{mode} search needs the embedding model, which is not installed; "
                      "showing full-text results")
        elif mode != "fts" and not self.vectors.has_vectors():
            used = "fts"
            notice = (f"{mode} search needs vectors, and this index has none "
                      "(enable search_index(..., embeddings=True) and rebuild); showing full-text results")
        include_hidden = self._include_hidden(filters, restrict)
        # The same query is often ranked twice (per artifact, then per passage): its unit scores
        # are kept for the next call while the index is unchanged (not for drill-downs).
        key = None if restrict is not None else (parsed.text, used, repr(filters),
                                                 self.rows.generation())
        scored = self._scored_units.get(key) if key is not None else None
        if scored is not None:
            self._scored_units.move_to_end(key)
        elif used == "fts":
            scored = self.rows.fts_units(parsed, filters, include_hidden, restrict)
        elif used == "semantic":
            semantic = self.vectors.vector_units(*self.vectors.similarities(parsed.text), filters,
                                                 include_hidden, restrict)
            scored = [(uid, sim) for uid, sim in semantic if sim >= fusion.MATCH_COSINE]
        else:
            lexical = self.rows.fts_units(parsed, filters, include_hidden, restrict)
            unit_ids, sims = self.vectors.similarities(parsed.text)
            semantic = self.vectors.vector_units(unit_ids, sims, filters, include_hidden, restrict)
            fused = fusion.fuse_scores(lexical, semantic, *self.vectors.scale_rows(
                unit_ids, sims, include_hidden, filters.leaves), fusion.SEMANTIC_WEIGHT)
            # a hit matches by its words, or by a meaning close enough (MATCH_COSINE)
            matching = {uid for uid, _ in lexical} | {uid for uid, sim in semantic
                                                       if sim >= fusion.MATCH_COSINE}
            scored = [(uid, score) for uid, score in fused if uid in matching]
        if key is not None and key not in self._scored_units:
            self._scored_units[key] = scored
            if len(self._scored_units) > SCORED_QUERY_CACHE:
                self._scored_units.popitem(last=False)
        return scored, used, notice

    def _group(self, scored: list[tuple[int, float]], parsed: ParsedQuery, per: str,
               limit: int, dedup: bool, exclude: Collection[str] = ()) -> list[Hit]:
        """Unit scores → hits: best unit per artifact (or every unit), altitude dedup; the
        artifacts in `exclude` are no candidates (so they hide nothing below them either)."""
        if not scored:
            return []
        unit_rows = self.rows.unit_rows([uid for uid, _ in scored])
        doc_of = {uid: r["doc_id"] for uid, r in unit_rows.items()}
        if exclude:
            heads = self.rows.doc_heads(set(doc_of.values()))
            scored = [(uid, sc) for uid, sc in scored if heads[doc_of[uid]]["artifact_id"] not in exclude]
            if not scored:
                return []
        if per == "artifact":
            picked = fusion.aggregate_by_doc(scored, doc_of)
        else:
            picked = fusion.with_document_prior(scored, doc_of, fusion.DOCUMENT_PRIOR)
            speakers = {uid: self.rows.speaker(r) for uid, r in unit_rows.items()}
            picked = fusion.with_speaker_prior(picked, speakers, parsed.terms,
                                               fusion.SPEAKER_PRIOR)
        if dedup:
            shown = self._altitude(picked, unit_rows, per)[:limit]
        else:
            shown = [(unit_rows[uid]["doc_id"], (uid, score)) for uid, score in picked[:limit]]
        docs = self.rows.doc_rows({doc_id for doc_id, _ in shown})
        stems = {stem(t) for t in parsed.terms}
        return [self._make_hit(docs[doc_id], unit_rows[uid], score, stems,
                               own=doc_id == unit_rows[uid]["doc_id"])
                for doc_id, (uid, score) in shown]

    def _altitude(self, picked: list[tuple[int, float]], unit_rows: dict[int, dict],
                  per: str) -> list[tuple[int, tuple[int, float]]]:
        """Altitude dedup (§4.6) of the picked units: [(doc shown, (unit, score))], best first.
        A matching record built from at most NARROW_COVER conversations stands for the matching
        records below it: they are dropped (reached by drill_down) and, per artifact, it ranks
        at the best of their scores and its own, showing the best-matching unit among them. A
        wider record (the core memory, a busy month) hides nothing: it ranks beside them."""
        heads = self.rows.doc_heads({unit_rows[uid]["doc_id"] for uid, _ in picked})
        above: dict[str, list[int]] = {}  # artifact id -> the narrow matching docs above it
        for uid, _ in picked:
            doc_id = unit_rows[uid]["doc_id"]
            if heads[doc_id]["conversations"] <= fusion.NARROW_COVER:
                for aid in heads[doc_id]["ancestry"]:
                    above.setdefault(aid, []).append(doc_id)

        def covering(doc_id: int) -> list[int]:
            level = heads[doc_id]["level"]
            return [d for d in above.get(heads[doc_id]["artifact_id"], ())
                    if heads[d]["level"] > level]

        if per == "passage":
            return [(unit_rows[uid]["doc_id"], (uid, score)) for uid, score in picked
                    if not covering(unit_rows[uid]["doc_id"])]
        stands: dict[int, tuple[int, float]] = {}
        for uid, score in picked:
            doc_id = unit_rows[uid]["doc_id"]
            ups = covering(doc_id)
            for shown in [d for d in ups if not covering(d)] if ups else [doc_id]:
                if shown not in stands or score > stands[shown][1]:
                    stands[shown] = (uid, score)
        return sorted(stands.items(), key=lambda x: (-x[1][1], x[0]))

    def _make_hit(self, doc: dict, unit: dict | None, score: float, stems: set[str],
                  snippet: str | None = None, own: bool = True) -> Hit:
        """`unit`: the best-matching unit, of `doc` itself or (`own=False`) of a record it
        stands for (altitude); its messages narrow the source only when `doc` has one."""
        sources = [dict(s) for s in doc["sources"]]
        message_range = None
        if unit is not None and unit["first_msg"] is not None and (own or len(sources) == 1):
            message_range = (unit["first_msg"], unit["last_msg"])
            # A transcript hit: narrow its own source entry to the matched messages.
            for s in sources:
                s["message_range"] = [unit["first_msg"], unit["last_msg"]]
        if snippet is None:
            snippet = highlight(unit["body"] if unit else doc["content"], stems)
        return Hit(
            artifact_id=doc["artifact_id"], layer=doc["layer"], level=doc["level"],
            score=round(float(score), 6), snippet=snippet, title=doc["title"] or "",
            date=doc["date"], provenance=tuple(doc["leaf_ids"]) or (doc["artifact_id"],),
            sources=HitSources(sources, tuple(doc["parent_ids"])), content=doc["content"],
            parent_ids=tuple(doc["parent_ids"]), message_range=message_range,
            message_ids=unit["msg_ids"] if message_range else (), pii=doc.get("pii"))

    def _doc_hit(self, artifact_id: str) -> Hit | None:
        row = self.db.execute("SELECT id FROM docs WHERE artifact_id = ?",
                              [artifact_id]).fetchone()
        if row is None:
            return None
        doc = self.rows.doc_rows([row[0]])[row[0]]
        return self._make_hit(doc, None, 0.0, set(), snippet=doc["content"][:240])

    # -- exact ------------------------------------------------------------------------------

    def _exact(self, phrase: str, filters: Filters, limit: int) -> list[Hit]:
        """Leaves containing `phrase` (case-insensitive substring, verified on the content);
        `phrase` was checked by `check_phrase` (text, no NUL, bounded length)."""
        needle = fold(phrase)
        where, args = filters.sql(include_hidden=True, prefix="d")
        # unscoped: the source transcripts; scoped: the named layers, whatever their level
        leaf = "d.level = 0" if filters.layers is None else "1 = 1"
        if len(phrase) >= 3 and self._trigram_covers(filters.layers):
            # trigram MATCH on a quoted string = substring candidates (case-insensitive). FTS5's
            # cost grows with the square of the phrase; its head already finds a superset of the
            # documents holding the whole phrase, which the scan below then verifies.
            probe = phrase[:EXACT_PROBE_CHARS]
            rows = self.db.execute(
                f"SELECT d.id FROM leaf_trigram JOIN docs d ON d.id = leaf_trigram.rowid "
                f"WHERE leaf_trigram MATCH ? AND {leaf} {where} ORDER BY d.id",
                ['"' + probe.replace('"', '""') + '"', *args]).fetchall()
        else:
            rows = self.db.execute(f"SELECT d.id FROM docs d WHERE {leaf} {where} ORDER BY d.id",
                                   args).fetchall()
        docs = self.rows.doc_rows([r[0] for r in rows])
        found = []
        for doc_id in sorted(docs):
            doc = docs[doc_id]
            count = fold(doc["content"]).count(needle)
            if count:
                found.append((count, doc_id))
        found.sort(key=lambda x: (-x[0], docs[x[1]]["artifact_id"]))
        hits = []
        for count, doc_id in found[:limit]:
            unit = self._exact_unit(doc_id, needle)
            hits.append(self._make_hit(docs[doc_id], unit, float(count), set(),
                                       snippet=exact_snippet(docs[doc_id]["content"], needle)))
        return hits

    def _trigram_covers(self, layers: list[str] | None) -> bool:
        """Whether the trigram side index holds every document exact search may return: it
        holds the leaves and hidden documents, not the searchable summaries."""
        if layers is None:
            return True
        marks = ",".join("?" * len(layers))
        return self.db.execute(f"SELECT 1 FROM docs WHERE layer IN ({marks}) AND level > 0 "
                               f"AND searchable = 1 LIMIT 1", layers).fetchone() is None

    def _exact_unit(self, doc_id: int, needle: str) -> dict | None:
        for r in self.db.execute("SELECT id FROM units WHERE doc_id = ? ORDER BY ord", [doc_id]):
            unit = self.rows.unit_rows([r[0]])[r[0]]
            if unit["first_msg"] is not None and needle in fold(unit["body"]):
                return unit
        return None
