"""The live inbox on a real SQLite file: durable appends, idempotency, sessions (idle gap,
explicit close, reopen as a new version) and the outbox (claim guard, backoff, dead letters)."""
from __future__ import annotations

import json
import sqlite3

import pytest

from synix_resources.errors import IdempotencyConflict, LiveInputError, LiveInputTooLarge, SessionNotFound
from synix_resources.live.inbox import Inbox
from synix_resources.live.requests import parse_ingest


def body(*texts, session=None, key=None, **extra) -> bytes:
    data = {"turns": [{"role": "user" if i % 2 == 0 else "assistant", "content": t}
                      for i, t in enumerate(texts)], **extra}
    if session:
        data["session_id"] = session
    if key:
        data["idempotency_key"] = key
    return json.dumps(data).encode()


@pytest.fixture
def inbox(tmp_path):
    box = Inbox(tmp_path / "live" / "inbox.db", idle_gap_s=60, backoff_s=10, max_attempts=3)
    yield box
    box.close()


def test_ingest_creates_a_session_numbers_turns_and_is_durable_on_reopen(inbox, tmp_path):
    first = inbox.ingest(parse_ingest(body("hello", "hi there")), now=1000)
    assert first["created"] and first["version"] == 1
    sid = first["session_id"]
    assert first["turn_ids"] == [f"{sid}-1", f"{sid}-2"]
    second = inbox.ingest(parse_ingest(body("more", session=sid)), now=1010)
    assert second["turn_ids"] == [f"{sid}-3"] and not second["created"]
    assert inbox._open_conn().execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert inbox._open_conn().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    inbox.close()
    again = Inbox(tmp_path / "live" / "inbox.db")
    assert [t["content"] for t in again.turns(sid)] == ["hello", "hi there", "more"]
    again.close()


def test_same_idempotency_key_returns_the_first_answer_and_writes_nothing_more(inbox):
    a = inbox.ingest(parse_ingest(body("once"), idempotency_key="req-1"), now=1000)
    b = inbox.ingest(parse_ingest(body("once"), idempotency_key="req-1"), now=1001)
    assert b["replayed"] and {**b, "replayed": False} == a
    assert inbox.all_turn_ids() == a["turn_ids"]
    with pytest.raises(IdempotencyConflict, match="req-1"):
        inbox.ingest(parse_ingest(body("something else"), idempotency_key="req-1"), now=1002)
    assert inbox.all_turn_ids() == a["turn_ids"]


def test_idle_gap_closes_a_session_and_a_later_turn_reopens_it_as_the_next_version(inbox):
    sid = inbox.ingest(parse_ingest(body("first", session="chat-1")), now=1000)["session_id"]
    assert inbox.close_idle(now=1030) == []
    assert inbox.close_idle(now=1061) == ["chat-1"]
    assert inbox.session(sid)["state"] == "closed" and inbox.session(sid)["close_reason"] == "idle"
    later = inbox.ingest(parse_ingest(body("back again", session="chat-1")), now=2000)
    assert later["version"] == 2 and later["turn_ids"] == ["chat-1-2"]
    # a turn after the gap closes the old version on the way in, even without close_idle
    third = inbox.ingest(parse_ingest(body("much later", session="chat-1")), now=5000)
    assert third["version"] == 3
    assert [(r["version"], r["state"]) for r in inbox.outbox_rows()] == [(1, "pending"), (2, "pending")]
    assert [t["turn_id"] for t in inbox.turns(sid, up_to_version=2)] == ["chat-1-1", "chat-1-2"]


def test_explicit_close_is_idempotent_and_unknown_sessions_are_named(inbox):
    inbox.ingest(parse_ingest(body("x", session="s1")), now=1000)
    assert inbox.close_session("s1", now=1001)["closed_now"]
    assert not inbox.close_session("s1", now=1002)["closed_now"]
    assert len(inbox.outbox_rows()) == 1
    with pytest.raises(SessionNotFound, match="nope"):
        inbox.close_session("nope")


def test_claim_hands_a_session_to_one_build_at_a_time(inbox):
    for sid in ("a", "b"):
        inbox.ingest(parse_ingest(body("t", session=sid)), now=1000)
        inbox.close_session(sid, now=1001)
    batch, rows = inbox.claim(now=1002)
    assert batch and rows == [("a", 1), ("b", 1)]
    inbox.ingest(parse_ingest(body("t", session="c")), now=1003)
    inbox.close_session("c", now=1004)
    assert inbox.claim(now=1005) == (None, [])  # the guard: one batch building at a time
    assert inbox.handed() == [("a", 1), ("b", 1)]
    assert inbox.finish(batch, ok=True, now=1006) == {"built": 2, "retry": 0, "dead": 0}
    assert inbox.finish(batch, ok=True, now=1007) == {"built": 0, "retry": 0, "dead": 0}
    batch2, rows2 = inbox.claim(now=1008)
    assert rows2 == [("c", 1)] and batch2 != batch


def test_failures_back_off_exponentially_then_dead_letter_with_the_reason(inbox):
    inbox.ingest(parse_ingest(body("t", session="s")), now=0)
    inbox.close_session("s", now=0)
    batch, _ = inbox.claim(now=0)
    inbox.finish(batch, ok=False, error="LLMError: model down", now=100)
    assert inbox.claim(now=109) == (None, [])  # backoff 10 s
    batch, _ = inbox.claim(now=110)
    inbox.finish(batch, ok=False, error="LLMError: model down", now=110)
    assert inbox.claim(now=129) == (None, [])  # 20 s
    batch, _ = inbox.claim(now=130)
    inbox.finish(batch, ok=False, error="LLMError: model down", now=130)
    status = inbox.status()
    assert status["dead"] == 1 and status["pending"] == 0
    assert status["dead_letters"][0]["reason"] == "LLMError: model down (after 3 attempts)"
    assert inbox.claim(now=10_000) == (None, [])
    assert inbox.retry_dead(now=10_000) == 1
    assert inbox.claim(now=10_000)[1] == [("s", 1)]


@pytest.mark.parametrize("raw, error, match", [
    (b"{not json", LiveInputError, "not JSON"),
    (b"[1, 2]", LiveInputError, "not an object"),
    (b'{"turns": []}', LiveInputError, "no turns"),
    (b'{"turns": [{"content": "x"}]}', LiveInputError, "role"),
    (b'{"turns": [{"role": "user"}]}', LiveInputError, "content is missing"),
    (b'{"turns": [{"role": "user", "content": "x", "ts": "yesterday"}]}', LiveInputError, "not a time"),
    (b'{"turns": [{"role": "user", "content": "\\udcff"}]}', LiveInputError, "not valid Unicode"),
    (b'{"turns": [{"role": "user", "content": "caf\xe9"}]}', LiveInputError, "not UTF-8"),
    (b'{"session_id": "../etc", "turns": [{"role": "user", "content": "x"}]}', LiveInputError, "session_id"),
    (json.dumps({"turns": [{"role": "user", "content": "x" * 300_000}]}).encode(), LiveInputTooLarge, "over the"),
    (b"x" * (3 * 1024 * 1024), LiveInputTooLarge, "body"),
])
def test_bad_requests_are_refused_with_one_line_before_anything_is_written(inbox, raw, error, match):
    with pytest.raises(error, match=match) as caught:
        inbox.ingest(parse_ingest(raw), now=1)
    assert "\n" not in caught.value.one_line()
    assert inbox.all_turn_ids() == [] and inbox.status()["open_sessions"] == 0


def test_a_failed_transaction_leaves_no_half_written_turns(inbox):
    inbox.ingest(parse_ingest(body("x", session="s")), now=1)
    conn = inbox._open_conn()
    conn.execute("CREATE TRIGGER boom BEFORE INSERT ON turns WHEN NEW.n = 3 BEGIN "
                 "SELECT RAISE(ABORT, 'disk trouble'); END")
    with pytest.raises(Exception, match="disk trouble"):
        inbox.ingest(parse_ingest(body("two", "three", session="s")), now=2)
    assert inbox.all_turn_ids() == ["s-1"] and inbox.session("s")["turns"] == 1
    assert isinstance(conn, sqlite3.Connection)


def test_turns_stored_with_nan_before_the_door_refused_it_read_back_as_json(inbox):
    inbox.ingest(parse_ingest(body("hello", session="old")), now=1)
    # What an older version stored for `"metadata": {"a": NaN}` (it accepted NaN).
    inbox._open_conn().execute("UPDATE turns SET metadata = ? WHERE session_id = 'old'",
                               ['{"a":NaN,"b":[Infinity,1]}'])
    turns = inbox.turns("old")
    assert turns[0]["metadata"] == {"a": "NaN", "b": ["Infinity", 1]}
    json.dumps(turns, allow_nan=False)  # what the HTTP answer does: no ValueError


@pytest.mark.parametrize("fields, field", [
    ('"ts": 1e20', "turns[0].ts"),
    ('"ts": -1', "turns[0].ts"),
    ('"ts": "1969-12-31T23:59:59Z"', "turns[0].ts"),
    ('"ts": "0001-01-01T00:00:00+14:00"', "turns[0].ts"),
    ('"ts": "9999-12-31T23:59:59-14:00"', "turns[0].ts"),
    ('"metadata": {"n": ' + "1" * 41 + "}", "turns[0].metadata.n"),
    ('"metadata": {"odd key": {"x": NaN}}', "turns[0].metadata['odd key'].x"),
])
def test_unstorable_times_and_numbers_are_refused_naming_the_field(inbox, fields, field):
    raw = ('{"turns": [{"role": "user", "content": "x", ' + fields + "}]}").encode()
    with pytest.raises(LiveInputError) as caught:
        parse_ingest(raw)
    assert caught.value.one_line().startswith(field + " ") and "\n" not in caught.value.one_line()


def test_times_and_numbers_at_the_limits_are_kept():
    raw = ('{"turns": [{"role": "user", "content": "x", "ts": "9999-12-31T23:59:59Z", '
           '"metadata": {"n": -' + "9" * 40 + ', "f": 1.5e300}}, '
           '{"role": "user", "content": "y", "ts": 0}]}').encode()
    first, second = parse_ingest(raw).turns
    assert first.ts == "9999-12-31T23:59:59Z" and first.metadata == {"n": -int("9" * 40), "f": 1.5e300}
    assert second.ts == "1970-01-01T00:00:00Z"


def test_an_epoch_ts_in_milliseconds_is_read_as_javascript_sends_it():
    raw = b'{"turns": [{"role": "user", "content": "x", "ts": 1714585031148}]}'
    assert parse_ingest(raw).turns[0].ts == "2024-05-01T17:37:11Z"


def test_session_id_in_the_request_metadata_names_the_session(inbox):
    raw = json.dumps({"metadata": {"session_id": "chat-7", "channel": "sms"},
                      "turns": [{"role": "user", "content": "hello", "metadata": {"channel": "web"}},
                                {"role": "assistant", "content": "hi"}]}).encode()
    answer = inbox.ingest(parse_ingest(raw), now=1)
    assert answer["session_id"] == "chat-7" and answer["created"] is True
    turns = inbox.turns("chat-7")
    # the request's metadata holds for every turn; a turn's own key wins; the id is not repeated
    assert [t["metadata"] for t in turns] == [{"channel": "web"}, {"channel": "sms"}]


def test_session_id_given_twice_differently_is_refused_naming_both():
    raw = b'{"session_id": "a", "metadata": {"session_id": "b"}, "turns": [{"role": "user", "content": "x"}]}'
    with pytest.raises(LiveInputError, match="session_id 'a' and metadata.session_id 'b' differ"):
        parse_ingest(raw)
    with pytest.raises(LiveInputError, match="metadata is a list"):
        parse_ingest(b'{"metadata": [1], "turns": [{"role": "user", "content": "x"}]}')
