"""The live inbox of one memory: an append-only SQLite file of posted turns, their sessions and
the outbox that hands closed sessions to the build.

Durability: WAL with `synchronous=FULL`, and every request is one `BEGIN IMMEDIATE` transaction,
so when `ingest` returns the turns are on disk (a power cut after the answer loses nothing) and a
crash before it leaves nothing half-written.

Sessions: a session is open until it has been idle for `idle_gap_s` (default 15 minutes, measured
on the server's clock when the next turn arrives or by `close_idle`) or is closed explicitly. A
turn for a closed session reopens it as its next version: the conversation then holds every turn
so far, and the build's merge rule (same conversation id) decides which version is current.

Outbox (the contract of the Synapse design): a closing writes its outbox row in the same
transaction; `claim` moves due rows to `building` under one batch id — only while no other
batch is building, so a session is handed to one build at a time; `finish` marks a batch built,
or schedules it again with exponential backoff, or dead-letters it with the reason after
`max_attempts`.
"""
from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from synix_resources.errors import IdempotencyConflict, SessionNotFound
from synix_resources.fingerprints import canonical_json, sha256_text
from synix_resources.live.migrations import LIVE_MIGRATIONS
from synix_resources.live.requests import IngestRequest
from synix_resources.names import check_session_id
from synix_resources.settings import (DEFAULT_LIVE_BACKOFF_S, DEFAULT_LIVE_IDLE_MINUTES,
                                      DEFAULT_LIVE_MAX_ATTEMPTS, settings)
from synix_resources.store.connection import StoreConnection

IDLE_GAP_S = DEFAULT_LIVE_IDLE_MINUTES * 60
MAX_ATTEMPTS = DEFAULT_LIVE_MAX_ATTEMPTS
BACKOFF_S = DEFAULT_LIVE_BACKOFF_S
MAX_BACKOFF_S = 3600.0
STATES = ("pending", "building", "built", "dead")
HANDED = ("building", "built")  # what the build reads: sessions handed over by the outbox


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Inbox(StoreConnection):
    """One tenant's inbox file (`<project>/.synix/live/inbox.db`)."""

    def __init__(self, path: str | Path, *, idle_gap_s: float = IDLE_GAP_S,
                 max_attempts: int = MAX_ATTEMPTS, backoff_s: float = BACKOFF_S,
                 read_only: bool = False):
        super().__init__(path, migrations=LIVE_MIGRATIONS, read_only=read_only)
        if not read_only:
            # The answer to an ingest promises the turns are on disk: FULL syncs the WAL at
            # every commit (NORMAL could lose the last commits on a power cut).
            self._open_conn().execute("PRAGMA synchronous = FULL")
        self.idle_gap_s = float(idle_gap_s)
        self.max_attempts = int(max_attempts)
        self.backoff_s = float(backoff_s)

    @classmethod
    def from_env(cls, path: str | Path, **kwargs) -> "Inbox":
        """An inbox with the deployment's settings: SYNIX_LIVE_IDLE_MINUTES (15),
        SYNIX_LIVE_MAX_ATTEMPTS (5), SYNIX_LIVE_BACKOFF_S (30, doubled per failed attempt)."""
        config = settings()
        return cls(path, idle_gap_s=config.live_idle_minutes * 60,
                   max_attempts=config.live_max_attempts, backoff_s=config.live_backoff_s, **kwargs)

    # ---- writes on the request path ----------------------------------------------------

    def ingest(self, req: IngestRequest, *, now: float | None = None) -> dict:
        """Append the turns (opening, or reopening, the session) in one durable transaction and
        return what was written: session id, version and the new turn ids. A repeated
        idempotency key returns the first answer and writes nothing."""
        now = time.time() if now is None else now
        digest = sha256_text(canonical_json({
            "session_id": req.session_id, "user_id": req.user_id,
            "turns": [t.__dict__ for t in req.turns]}))
        with self._write("ingesting turns") as conn:
            if req.idempotency_key:
                row = conn.execute("SELECT request_hash, response FROM requests WHERE idempotency_key = ?",
                                   (req.idempotency_key,)).fetchone()
                if row is not None:
                    if row[0] != digest:
                        raise IdempotencyConflict(
                            f"idempotency key {req.idempotency_key!r} was already used for a different request",
                            hint="use a new key for a new request; retry with the same body to get the first answer")
                    return {**json.loads(row[1]), "replayed": True}
            session_id = req.session_id or f"s-{uuid.uuid4().hex[:20]}"
            sess = conn.execute("SELECT state, version, turns, last_seen, user_id FROM sessions "
                                "WHERE session_id = ?", (session_id,)).fetchone()
            created = sess is None
            if created:
                version, count = 1, 0
                conn.execute("INSERT INTO sessions (session_id, user_id, state, version, turns, opened_at, "
                             "last_seen) VALUES (?, ?, 'open', 1, 0, ?, ?)",
                             (session_id, req.user_id, _iso(now), now))
            else:
                state, version, count, last_seen, _user = sess
                if state == "open" and now - last_seen > self.idle_gap_s:
                    self._close(conn, session_id, version, "idle", now)
                    state = "closed"
                if state == "closed":  # a turn for a closed session: its next version
                    version += 1
                    conn.execute("UPDATE sessions SET state = 'open', version = ?, opened_at = ?, "
                                 "closed_at = NULL, close_reason = NULL WHERE session_id = ?",
                                 (version, _iso(now), session_id))
            turn_ids = []
            for i, turn in enumerate(req.turns, start=count + 1):
                turn_id = f"{session_id}-{i}"
                conn.execute("INSERT INTO turns (turn_id, session_id, version, n, role, content, ts, "
                             "metadata, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (turn_id, session_id, version, i, turn.role, turn.content,
                              turn.ts or _iso(now), canonical_json(turn.metadata), _iso(now)))
                turn_ids.append(turn_id)
            conn.execute("UPDATE sessions SET turns = ?, last_seen = ?, user_id = COALESCE(user_id, ?) "
                         "WHERE session_id = ?", (count + len(req.turns), now, req.user_id, session_id))
            answer = {"session_id": session_id, "version": version, "state": "open",
                      "created": created, "turn_ids": turn_ids}
            if req.idempotency_key:
                conn.execute("INSERT INTO requests (idempotency_key, request_hash, response, created_at) "
                             "VALUES (?, ?, ?, ?)", (req.idempotency_key, digest, json.dumps(answer), _iso(now)))
        return {**answer, "replayed": False}

    def close_session(self, session_id: str, *, reason: str = "explicit", now: float | None = None) -> dict:
        """Close a session (idempotent: closing a closed session changes nothing)."""
        check_session_id(session_id)
        now = time.time() if now is None else now
        with self._write("closing a session") as conn:
            row = conn.execute("SELECT state, version FROM sessions WHERE session_id = ?",
                               (session_id,)).fetchone()
            if row is None:
                raise SessionNotFound(f"no session {session_id!r} in this memory",
                                      hint="post turns with this session_id first")
            state, version = row
            if state == "open":
                self._close(conn, session_id, version, reason, now)
        return {"session_id": session_id, "version": version, "state": "closed",
                "closed_now": state == "open"}

    def close_idle(self, *, now: float | None = None) -> list[str]:
        """Close every open session idle for longer than the gap; returns their ids."""
        now = time.time() if now is None else now
        with self._write("closing idle sessions") as conn:
            rows = conn.execute("SELECT session_id, version FROM sessions WHERE state = 'open' AND last_seen < ?",
                                (now - self.idle_gap_s,)).fetchall()
            for session_id, version in rows:
                self._close(conn, session_id, version, "idle", now)
        return [r[0] for r in rows]

    @staticmethod
    def _close(conn, session_id: str, version: int, reason: str, now: float) -> None:
        conn.execute("UPDATE sessions SET state = 'closed', closed_at = ?, close_reason = ? "
                     "WHERE session_id = ?", (_iso(now), reason, session_id))
        conn.execute("INSERT OR IGNORE INTO outbox (session_id, version, state, attempts, next_attempt_at, "
                     "closed_at) VALUES (?, ?, 'pending', 0, ?, ?)", (session_id, version, now, _iso(now)))

    # ---- the outbox --------------------------------------------------------------------

    def claim(self, *, now: float | None = None, limit: int = 200) -> tuple[str | None, list[tuple[str, int]]]:
        """Hand the due pending sessions to one build: (batch id, [(session, version)]), or
        (None, []) when nothing is due or another batch is still building (the guard)."""
        now = time.time() if now is None else now
        with self._write("claiming closed sessions") as conn:
            if conn.execute("SELECT 1 FROM outbox WHERE state = 'building' LIMIT 1").fetchone():
                return None, []
            rows = conn.execute("SELECT session_id, version FROM outbox WHERE state = 'pending' "
                                "AND next_attempt_at <= ? ORDER BY closed_at, session_id LIMIT ?",
                                (now, limit)).fetchall()
            if not rows:
                return None, []
            batch = uuid.uuid4().hex[:16]
            conn.executemany("UPDATE outbox SET state = 'building', batch = ?, claimed_at = ?, "
                             "attempts = attempts + 1 WHERE session_id = ? AND version = ?",
                             [(batch, now, s, v) for s, v in rows])
        return batch, [(s, v) for s, v in rows]

    def building(self) -> tuple[str | None, float | None, str | None]:
        """(batch id, claimed at, run id) of the batch being built, or Nones."""
        with self._read("reading the outbox") as conn:
            row = conn.execute("SELECT batch, MIN(claimed_at), MAX(run_id) FROM outbox "
                               "WHERE state = 'building' GROUP BY batch LIMIT 1").fetchone()
        return (row[0], row[1], row[2]) if row else (None, None, None)

    def set_run(self, batch: str, run_id: str) -> None:
        """Remember which Dagster run builds a batch."""
        with self._write("recording the build of a batch") as conn:
            conn.execute("UPDATE outbox SET run_id = ? WHERE batch = ? AND state = 'building'", (run_id, batch))

    def finish(self, batch: str, *, ok: bool, error: str | None = None, permanent: bool = False,
               now: float | None = None) -> dict:
        """End a batch: built, or back to pending with backoff, or dead after `max_attempts` —
        or at once when the error is `permanent` (a retry of the same turns cannot succeed).
        Only rows still building under this batch change (finishing twice changes nothing)."""
        now = time.time() if now is None else now
        out = {"built": 0, "retry": 0, "dead": 0}
        with self._write("finishing a build") as conn:
            rows = conn.execute("SELECT session_id, version, attempts FROM outbox WHERE batch = ? "
                                "AND state = 'building'", (batch,)).fetchall()
            for session_id, version, attempts in rows:
                if ok:
                    conn.execute("UPDATE outbox SET state = 'built', built_at = ?, last_error = NULL "
                                 "WHERE session_id = ? AND version = ?", (_iso(now), session_id, version))
                    out["built"] += 1
                elif permanent or attempts >= self.max_attempts:
                    why = "permanent error, not retried" if permanent else f"after {attempts} attempts"
                    conn.execute("UPDATE outbox SET state = 'dead', last_error = ? WHERE session_id = ? "
                                 "AND version = ?", (f"{error} ({why})", session_id, version))
                    out["dead"] += 1
                else:
                    delay = min(self.backoff_s * 2 ** (attempts - 1), MAX_BACKOFF_S)
                    conn.execute("UPDATE outbox SET state = 'pending', next_attempt_at = ?, last_error = ?, "
                                 "batch = NULL, run_id = NULL WHERE session_id = ? AND version = ?",
                                 (now + delay, error, session_id, version))
                    out["retry"] += 1
        return out

    def retry_dead(self, *, now: float | None = None) -> int:
        """Give dead-lettered sessions a fresh set of attempts (after fixing the cause)."""
        now = time.time() if now is None else now
        with self._write("retrying dead sessions") as conn:
            return conn.execute("UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = ?, "
                                "batch = NULL, run_id = NULL WHERE state = 'dead'", (now,)).rowcount

    # ---- reads -------------------------------------------------------------------------

    def handed(self) -> list[tuple[str, int]]:
        """Per session, the newest version the outbox handed to the build (building or built)."""
        with self._read("reading the outbox") as conn:
            rows = conn.execute("SELECT session_id, MAX(version) FROM outbox WHERE state IN (?, ?) "
                                "GROUP BY session_id ORDER BY session_id", HANDED).fetchall()
        return [(s, v) for s, v in rows]

    def session(self, session_id: str) -> dict | None:
        with self._read("reading a session") as conn:
            row = conn.execute("SELECT session_id, user_id, state, version, turns, opened_at, closed_at, "
                               "close_reason FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        if row is None:
            return None
        keys = ("session_id", "user_id", "state", "version", "turns", "opened_at", "closed_at", "close_reason")
        return dict(zip(keys, row))

    def turns(self, session_id: str, *, up_to_version: int | None = None, last: int | None = None) -> list[dict]:
        """A session's turns in order (those of versions up to `up_to_version`; the `last` few)."""
        sql = ("SELECT turn_id, version, n, role, content, ts, metadata, received_at FROM turns "
               "WHERE session_id = ? AND version <= ? ORDER BY n")
        with self._read("reading turns") as conn:
            rows = conn.execute(sql, (session_id, up_to_version if up_to_version is not None else 1 << 62)).fetchall()
        if last is not None:
            rows = rows[-last:]
        # parse_constant: a NaN/Infinity stored before the door refused them reads back as its
        # name, so the session stays readable as JSON.
        return [{"turn_id": r[0], "version": r[1], "n": r[2], "role": r[3], "content": r[4], "ts": r[5],
                 "metadata": json.loads(r[6], parse_constant=str), "received_at": r[7]} for r in rows]

    def turns_after(self, seq: int, *, limit: int = 1000) -> list[dict]:
        """Turns appended after `seq` (every session), oldest first, each with its `seq`,
        session and user: what the evidence ledger has not read yet."""
        sql = ("SELECT t.seq, t.turn_id, t.session_id, s.user_id, t.role, t.content, t.ts, t.metadata "
               "FROM turns t JOIN sessions s ON s.session_id = t.session_id WHERE t.seq > ? "
               "ORDER BY t.seq LIMIT ?")
        with self._read("reading new turns") as conn:
            rows = conn.execute(sql, (int(seq), int(limit))).fetchall()
        return [{"seq": r[0], "turn_id": r[1], "session_id": r[2], "user_id": r[3], "role": r[4],
                 "content": r[5], "ts": r[6], "metadata": json.loads(r[7], parse_constant=str)}
                for r in rows]

    def unbuilt_sessions(self, *, limit: int = 20) -> list[dict]:
        """Sessions whose newest turns are not in the built memory yet (open, or closed and
        waiting in the outbox), most recently active first."""
        with self._read("reading sessions") as conn:
            rows = conn.execute(
                "SELECT s.session_id FROM sessions s WHERE s.state = 'open' OR NOT EXISTS ("
                "SELECT 1 FROM outbox o WHERE o.session_id = s.session_id AND o.version = s.version "
                "AND o.state = 'built') ORDER BY s.last_seen DESC LIMIT ?", (limit,)).fetchall()
        return [s for s in (self.session(r[0]) for r in rows) if s]

    def user_turns(self) -> list[dict]:
        """Every session's user turns in the order they arrived (what procedural memory reads)."""
        with self._read("reading turns") as conn:
            rows = conn.execute("SELECT turn_id, session_id, ts FROM turns WHERE role = 'user' "
                                "ORDER BY seq").fetchall()
            texts = dict(conn.execute("SELECT turn_id, content FROM turns WHERE role = 'user'").fetchall())
        return [{"turn_id": t, "session_id": s, "ts": ts, "role": "user", "content": texts[t]}
                for t, s, ts in rows]

    def latest_session(self) -> str | None:
        with self._read("reading sessions") as conn:
            row = conn.execute("SELECT session_id FROM sessions ORDER BY last_seen DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def forget_sessions(self, session_ids: set[str]) -> int:
        """Remove every trace of these sessions (turns, the session, its outbox rows, rolling
        summaries, fold marks), overwriting the freed pages and emptying the WAL, so the text is
        gone from the file (forget). Returns the turns removed; repeating it removes nothing."""
        ids = [(s,) for s in sorted(session_ids)]
        conn = self._open_conn()
        conn.execute("PRAGMA secure_delete = ON")
        with self._write("forgetting sessions") as tx:
            removed = tx.execute("SELECT COUNT(*) FROM turns WHERE session_id IN (SELECT value FROM "
                                 "json_each(?))", (json.dumps([i[0] for i in ids]),)).fetchone()[0]
            for table in ("folded", "summaries", "outbox", "turns", "sessions"):
                tx.executemany(f"DELETE FROM {table} WHERE session_id = ?", ids)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return removed

    def all_turn_ids(self) -> list[str]:
        with self._read("reading turns") as conn:
            return [r[0] for r in conn.execute("SELECT turn_id FROM turns ORDER BY seq")]

    def status(self) -> dict:
        """Counts per outbox state, open/closed sessions and turns; the dead letters' reasons;
        when the next retry is due."""
        with self._read("reading the outbox") as conn:
            by_state = dict(conn.execute("SELECT state, COUNT(*) FROM outbox GROUP BY state").fetchall())
            sessions = dict(conn.execute("SELECT state, COUNT(*) FROM sessions GROUP BY state").fetchall())
            turns = conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
            dead = conn.execute("SELECT session_id, version, attempts, last_error FROM outbox "
                                "WHERE state = 'dead' ORDER BY session_id LIMIT 50").fetchall()
            waiting = conn.execute("SELECT MIN(next_attempt_at), MAX(attempts) FROM outbox "
                                   "WHERE state = 'pending'").fetchone()
            failing = conn.execute("SELECT last_error FROM outbox WHERE state = 'pending' AND "
                                   "last_error IS NOT NULL ORDER BY next_attempt_at DESC LIMIT 1").fetchone()
        return {**{s: by_state.get(s, 0) for s in STATES},
                "open_sessions": sessions.get("open", 0), "closed_sessions": sessions.get("closed", 0),
                "turns": turns,
                "next_attempt_at": _iso(waiting[0]) if waiting[0] is not None else None,
                "max_attempts_so_far": waiting[1] or 0,
                "last_error": failing[0] if failing else None,
                "dead_letters": [{"session_id": s, "version": v, "attempts": a, "reason": e}
                                 for s, v, a, e in dead]}

    def outbox_rows(self) -> list[dict]:
        with self._read("reading the outbox") as conn:
            rows = conn.execute("SELECT session_id, version, state, attempts, next_attempt_at, last_error, "
                                "batch, built_at FROM outbox ORDER BY session_id, version").fetchall()
        keys = ("session_id", "version", "state", "attempts", "next_attempt_at", "last_error", "batch", "built_at")
        return [dict(zip(keys, r)) for r in rows]

    def has_work(self, *, now: float | None = None) -> bool:
        """Cheap: is anything building, due, or an open session past its idle gap?"""
        now = time.time() if now is None else now
        with self._read("reading the outbox") as conn:
            return conn.execute(
                "SELECT EXISTS(SELECT 1 FROM outbox WHERE state = 'building' OR (state = 'pending' "
                "AND next_attempt_at <= ?)) OR EXISTS(SELECT 1 FROM sessions WHERE state = 'open' "
                "AND last_seen < ?)", (now, now - self.idle_gap_s)).fetchone()[0] == 1

