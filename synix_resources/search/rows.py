"""Row access shared by both sides of the index: the BM25 candidates of a query (filtered by
the SQL of `filters.Filters`), the units a filter allows, and the unit and document rows that
hits are made of (units cached per generation)."""
from __future__ import annotations

import json
from typing import Iterable, Iterator

from synix_resources.search import fusion, schema
from synix_resources.search.filters import Filters
from synix_resources.search.query import ParsedQuery, fts_match, quote_term

CANDIDATE_UNITS = 400         # units fetched per ranker before grouping by artifact
UNIT_ROW_CACHE = 50_000       # unit rows kept between queries (cleared when the index changes)


class Rows:
    """Reads of one index connection (`db`, a sqlite_utils Database)."""

    def __init__(self, db):
        self.db = db
        self._unit_cache: dict[int, dict] = {}
        self._unit_cache_generation: str | None = None

    def generation(self) -> str:
        return self.db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0]

    def rows_in(self, sql: str, ids: Iterable, args: Iterable = ()) -> Iterator[tuple]:
        """Rows of `sql` for `ids`, whose `{marks}` is the IN list: 500 ids per statement, under
        SQLite's bound-parameter limit."""
        ids, args = list(ids), list(args)
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            yield from self.db.execute(sql.format(marks=",".join("?" * len(part))),
                                       [*part, *args])

    # -- candidates -------------------------------------------------------------------------

    def fts_units(self, parsed: ParsedQuery, filters: Filters, include_hidden: bool,
                  restrict: set | None) -> list[tuple[int, float]]:
        match = fts_match(parsed)
        if match is None:  # symbols only (emoji): a plain substring scan of unit text
            where, args = filters.sql(include_hidden, prefix="u")
            rows = self.db.execute(
                f"SELECT u.id, 1.0 FROM units u "
                f"WHERE instr(u.body, ?) > 0 {where} ORDER BY u.id LIMIT ?",
                [parsed.literal, *args, CANDIDATE_UNITS]).fetchall()
        else:
            # Which FTS table is read decides searchable vs hidden; drill-down reads both.
            tables = [schema.SEARCHABLE_FTS] + ([schema.HIDDEN_FTS] if include_hidden else [])
            limit = CANDIDATE_UNITS if restrict is None else 100000
            rows = sorted((row for table in tables
                           for row in self.bm25(table, match, filters, limit)),
                          key=lambda r: (-r[1], r[0]))[:limit]
        if restrict is not None:
            rows = self.restrict(rows, restrict)
        return [(r[0], float(r[1])) for r in rows]

    def lacking_terms(self, parsed: ParsedQuery) -> list[str]:
        """The query's content terms that no searchable unit holds (one indexed lookup each,
        stopping at the first posting: cheap however common the term)."""
        table = schema.SEARCHABLE_FTS
        return [t for t in parsed.content_terms if self.db.execute(
            f"SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT 1", [quote_term(t)]).fetchone() is None]

    def bm25(self, table: str, match: str, filters: Filters, limit: int) -> list:
        """(unit id, BM25) of the best `limit` units of one FTS table matching `match`."""
        w = fusion.BM25_WEIGHTS
        score = f"-bm25({table}, {w[0]}, {w[1]}, {w[2]})"
        where, args = filters.sql(include_hidden=True, prefix="u")
        if not where:  # nothing to filter on: FTS alone, no join with units
            return self.db.execute(
                f"SELECT rowid, {score} AS s FROM {table} WHERE {table} MATCH ? "
                f"ORDER BY s DESC, rowid LIMIT ?", [match, limit]).fetchall()
        # Units carry their document's layer/date/source: filtering needs no join with docs.
        return self.db.execute(
            f"SELECT u.id, {score} AS s FROM {table} JOIN units u ON u.id = {table}.rowid "
            f"WHERE {table} MATCH ? {where} ORDER BY s DESC, u.id LIMIT ?",
            [match, *args, limit]).fetchall()

    def restrict(self, rows, restrict: set) -> list:
        if not rows:
            return rows
        allowed = {uid for uid, aid in self.rows_in(
            "SELECT u.id, d.artifact_id FROM units u JOIN docs d ON d.id = u.doc_id "
            "WHERE u.id IN ({marks})", [r[0] for r in rows]) if aid in restrict}
        return [r for r in rows if r[0] in allowed][:CANDIDATE_UNITS]

    def filter_units(self, unit_ids: list[int], filters: Filters,
                     include_hidden: bool) -> set[int]:
        where, args = filters.sql(include_hidden, prefix="u")
        return {r[0] for r in self.rows_in(
            "SELECT u.id FROM units u WHERE u.id IN ({marks}) " + where, unit_ids, args)}

    def allowed_units(self, filters: Filters, include_hidden: bool) -> Iterator[int]:
        """Ids of the units with a vector that `filters` allow (a period or a conversation
        is found through its index, not a scan of the units)."""
        where, args = filters.sql(include_hidden, prefix="u")
        for row in self.db.execute(
                f"SELECT u.id FROM units u WHERE u.vec_key IS NOT NULL {where}", args):
            yield row[0]

    # -- rows of hits -----------------------------------------------------------------------

    def doc_heads(self, doc_ids: Iterable[int]) -> dict[int, dict]:
        """What altitude dedup needs of each candidate document (no content, no sources)."""
        return {r[0]: {"artifact_id": r[1], "level": r[2], "ancestry": json.loads(r[3]),
                       "conversations": r[4]}
                for r in self.rows_in(
                    "SELECT id, artifact_id, level, ancestry, json_array_length(sources) "
                    "FROM docs WHERE id IN ({marks})", doc_ids)}

    @staticmethod
    def speaker(row: dict) -> str | None:
        if "speaker" not in row:  # rows are cached: parse the body once
            row["speaker"] = (fusion.message_speaker(row["body"])
                              if row["first_msg"] is not None else None)
        return row["speaker"]

    def unit_rows(self, unit_ids: list[int]) -> dict[int, dict]:
        # A query groups hundreds of candidate units, and the next query mostly the same ones:
        # reading and JSON-decoding them again was a third of a hybrid query's CPU time.
        generation = self.generation()
        if generation != self._unit_cache_generation or len(self._unit_cache) > UNIT_ROW_CACHE:
            self._unit_cache = {}
            self._unit_cache_generation = generation
        cache = self._unit_cache
        missing = [uid for uid in unit_ids if uid not in cache]
        for r in self.rows_in("SELECT id, doc_id, first_msg, last_msg, msg_ids, body "
                              "FROM units WHERE id IN ({marks})", missing):
            cache[r[0]] = {"doc_id": r[1], "first_msg": r[2], "last_msg": r[3],
                           "msg_ids": tuple(json.loads(r[4])), "body": r[5]}
        return {uid: cache[uid] for uid in unit_ids if uid in cache}

    def doc_rows(self, doc_ids: Iterable[int]) -> dict[int, dict]:
        return {r[0]: {"artifact_id": r[1], "layer": r[2], "level": r[3], "title": r[4],
                       "date": r[5], "content": r[6], "parent_ids": json.loads(r[7]),
                       "leaf_ids": json.loads(r[8]), "ancestry": set(json.loads(r[9])),
                       "sources": json.loads(r[10]),
                       "pii": (json.loads(r[11] or "{}") or {}).get("meta.custom.pii") or None}
                for r in self.rows_in(
                    "SELECT id, artifact_id, layer, level, title, date, content, parent_ids, "
                    "leaf_ids, ancestry, sources, metadata FROM docs WHERE id IN ({marks})",
                    doc_ids)}
