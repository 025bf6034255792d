"""The evidence ledger file (`<project>/.synix/ledger.db`): SQLite + WAL + FTS5, append-only.

Durability as the live inbox: `synchronous=FULL` and one `BEGIN IMMEDIATE` transaction per
append, so an append that returned is on disk. Append-only is enforced by triggers
(migrations.py): an UPDATE always aborts, a DELETE only for a conversation recorded in
`forgotten` first — `forget` is the one way out, and a forgotten conversation is never appended
again (a re-read old export cannot bring it back).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from synix_resources.fingerprints import canonical_json
from synix_resources.ledger.events import EVENT_ID, Event
from synix_resources.ledger.migrations import LEDGER_MIGRATIONS
from synix_resources.search.filters import check_date
from synix_resources.search.query import fts_match, parse_query
from synix_resources.store.connection import StoreConnection, utc_now

COLUMNS = ("seq, id, user_id, source, event_type, timestamp, title, content, external_id, "
           "conversation_id, metadata, ingested_at")
INSERT_CHUNK = 500


@dataclass
class AppendResult:
    appended: list[str] = field(default_factory=list)   # ids written now
    existing: list[str] = field(default_factory=list)   # ids the ledger already held
    forgotten: list[str] = field(default_factory=list)  # ids of forgotten conversations, not written

    def to_json(self) -> dict:
        return {"appended": len(self.appended), "existing": len(self.existing),
                "forgotten": len(self.forgotten), "ids": self.appended + self.existing}


@dataclass(frozen=True)
class Resolved:
    """What `resolve` found of the ids asked for, in the order asked."""
    found: list[Event]
    missing: list[str]

    def to_json(self) -> dict:
        return {"found": [e.to_json() for e in self.found], "missing": self.missing}


def _event(row) -> Event:
    seq, ident, user, source, etype, ts, title, content, ext, conv, meta, at = row
    return Event(id=ident, source=source, event_type=etype, content=content, timestamp=ts,
                 user_id=user, title=title, external_id=ext, conversation_id=conv,
                 metadata=json.loads(meta), seq=seq, ingested_at=at)


class EvidenceLedger(StoreConnection):
    def __init__(self, path: str | Path, *, read_only: bool = False):
        super().__init__(path, migrations=LEDGER_MIGRATIONS, read_only=read_only)
        if not read_only:  # an append that returned must survive a power cut
            self._open_conn().execute("PRAGMA synchronous = FULL")

    # ---- writes -------------------------------------------------------------------------
    def append(self, events: Iterable[Event]) -> AppendResult:
        """Append events in one transaction; an id already held is not written again."""
        result = AppendResult()
        batch = list(events)
        with self._write("appending evidence") as conn:
            gone = {r[0] for r in conn.execute("SELECT conversation_id FROM forgotten")}
            now = utc_now()
            for ev in batch:
                if ev.conversation_id is not None and ev.conversation_id in gone:
                    result.forgotten.append(ev.id)
                    continue
                cur = conn.execute(
                    f"INSERT OR IGNORE INTO events ({COLUMNS.replace('seq, ', '')}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (ev.id, ev.user_id, ev.source, ev.event_type, ev.timestamp, ev.title,
                     ev.content, ev.external_id, ev.conversation_id, canonical_json(ev.metadata), now))
                (result.appended if cur.rowcount else result.existing).append(ev.id)
        return result

    def forget(self, conversation_ids: Iterable[str]) -> int:
        """Record the conversations as forgotten and delete their events (the only delete the
        triggers allow); FTS segments are merged so no old segment keeps their words."""
        cids = sorted(set(conversation_ids))
        if not cids:
            return 0
        with self._write("forgetting evidence") as conn:
            now = utc_now()
            conn.executemany("INSERT OR IGNORE INTO forgotten (conversation_id, forgotten_at) "
                             "VALUES (?, ?)", [(c, now) for c in cids])
            removed = 0
            for i in range(0, len(cids), INSERT_CHUNK):
                chunk = cids[i:i + INSERT_CHUNK]
                removed += conn.execute(
                    f"DELETE FROM events WHERE conversation_id IN ({','.join('?' * len(chunk))})",
                    chunk).rowcount
            conn.execute("INSERT INTO events_fts(events_fts) VALUES ('optimize')")
        return removed

    def set_mark(self, name: str, value: str) -> None:
        with self._write("recording a ledger mark") as conn:
            conn.execute("INSERT INTO marks (name, value, updated_at) VALUES (?, ?, ?) "
                         "ON CONFLICT(name) DO UPDATE SET value = excluded.value, "
                         "updated_at = excluded.updated_at", (name, value, utc_now()))

    # ---- reads --------------------------------------------------------------------------
    def mark(self, name: str) -> str | None:
        with self._read("reading a ledger mark") as conn:
            row = conn.execute("SELECT value FROM marks WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def high_water(self) -> int:
        """The seq of the newest event (0: none); grows with every append, never reused."""
        with self._read("reading the ledger's high-water mark") as conn:
            row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        return int(row[0]) if row else 0

    def count(self, *, since_seq: int = 0) -> int:
        with self._read("counting events") as conn:
            return conn.execute("SELECT count(*) FROM events WHERE seq > ?", (since_seq,)).fetchone()[0]

    def sources(self) -> dict[str, int]:
        with self._read("counting events per source") as conn:
            return dict(conn.execute("SELECT source, count(*) FROM events GROUP BY source ORDER BY source"))

    def get(self, ids: Iterable[str]) -> dict[str, Event]:
        wanted = [i for i in dict.fromkeys(ids) if isinstance(i, str) and EVENT_ID.match(i)]
        out: dict[str, Event] = {}
        with self._read("reading events") as conn:
            for i in range(0, len(wanted), INSERT_CHUNK):
                chunk = wanted[i:i + INSERT_CHUNK]
                for row in conn.execute(f"SELECT {COLUMNS} FROM events WHERE id IN "
                                        f"({','.join('?' * len(chunk))})", chunk):
                    out[row[1]] = _event(row)
        return out

    def resolve(self, ids: Iterable[str]) -> Resolved:
        """Which of `ids` name events held here (a forgotten event is missing)."""
        asked = list(dict.fromkeys(ids))
        held = self.get(asked)
        return Resolved(found=[held[i] for i in asked if i in held],
                        missing=[i for i in asked if i not in held])

    def search(self, query: str, *, limit: int = 10, source: str | None = None,
               since: str | None = None, before: str | None = None) -> list[tuple[Event, float]]:
        """Events matching `query` by BM25 (best first, with their score; lower is better)."""
        match = fts_match(parse_query(query))
        if match is None:
            return []
        where, args = _window(source, since, before)
        sql = (f"SELECT {', '.join('e.' + c.strip() for c in COLUMNS.split(','))}, "
               "bm25(events_fts) AS score FROM events_fts JOIN events e ON e.seq = events_fts.rowid "
               f"WHERE events_fts MATCH ? {''.join(' AND e.' + w for w in where)} "
               "ORDER BY score LIMIT ?")
        with self._read("searching evidence") as conn:
            return [(_event(r[:-1]), r[-1]) for r in conn.execute(sql, (match, *args, int(limit)))]

    def timeline(self, *, since: str | None = None, before: str | None = None,
                 source: str | None = None, limit: int = 50) -> list[Event]:
        """Events in a time window, oldest first (design 003's `browse_timeline`)."""
        where, args = _window(source, since, before)
        sql = (f"SELECT {COLUMNS} FROM events {'WHERE ' + ' AND '.join(where) if where else ''} "
               "ORDER BY timestamp, seq LIMIT ?")
        with self._read("reading the timeline") as conn:
            return [_event(r) for r in conn.execute(sql, (*args, int(limit)))]

    def iter_since(self, seq: int) -> Iterator[Event]:
        with self._read("reading new events") as conn:
            rows = conn.execute(f"SELECT {COLUMNS} FROM events WHERE seq > ? ORDER BY seq", (seq,)).fetchall()
        return map(_event, rows)


def _window(source: str | None, since: str | None, before: str | None) -> tuple[list[str], list]:
    where, args = [], []
    if source:
        where.append("source = ?")
        args.append(source)
    # the same date forms as every other since/before (YYYY[-MM[-DD]] or an ISO date-time),
    # as the prefix stored UTC timestamps compare with: `before=2025-03` ends with February
    if since:
        where.append("timestamp >= ?")
        args.append(check_date(since, "since"))
    if before:
        where.append("timestamp < ?")
        args.append(check_date(before, "before"))
    return where, args
