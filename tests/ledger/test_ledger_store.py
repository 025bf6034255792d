"""The evidence ledger's store contract (design 003 L1) on a real SQLite file: append-only
(SQLite itself refuses an UPDATE or DELETE), idempotent by content-addressed id, FTS5 search,
forget as the one way out, named migrations like every other Synix SQLite file."""
from __future__ import annotations

import sqlite3

import pytest

from synix_resources.errors import EvidenceRefused, InvalidTime
from synix_resources.ledger.events import new_event
from synix_resources.ledger.migrations import LEDGER_MIGRATIONS
from synix_resources.ledger.store import EvidenceLedger


@pytest.fixture
def ledger(tmp_path):
    box = EvidenceLedger(tmp_path / "ledger.db")
    yield box
    box.close()


def commit(content: str, *, conv: str | None = None, when: str = "2025-03-01T09:00:00+01:00", **extra):
    return new_event({"source": "github", "event_type": "commit", "content": content,
                      "timestamp": when, "user_id": "sam", "conversation_id": conv, **extra})


def test_the_same_event_appended_twice_is_one_event_with_one_stable_id(ledger):
    first = ledger.append([commit("Move auth to tokens")])
    again = ledger.append([commit("Move auth to tokens")])
    assert first.appended == again.existing and len(first.appended) == 1 and not again.appended
    assert ledger.count() == 1
    assert first.appended[0].startswith("ev-") and len(first.appended[0]) == 27
    # metadata is not part of what happened: the same commit with other metadata is the same event
    assert commit("Move auth to tokens", metadata={"sha": "abc"}).id == first.appended[0]


def test_sqlite_itself_refuses_to_update_or_delete_an_event(ledger):
    ledger.append([commit("Ship the parser", conv="c1")])
    conn = sqlite3.connect(ledger.path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE events SET content = 'rewritten history'")
    with pytest.raises(sqlite3.IntegrityError, match="only forget removes them"):
        conn.execute("DELETE FROM events")
    conn.close()
    assert [e.content for e in ledger.timeline()] == ["Ship the parser"]


def test_forget_removes_a_conversations_events_and_they_never_come_back(ledger):
    ledger.append([commit("kayak trip with Ana", conv="c1"), commit("tax return filed", conv="c2")])
    assert ledger.forget(["c1"]) == 1
    assert [e.conversation_id for e in ledger.timeline()] == ["c2"]
    assert ledger.search("kayak") == []
    again = ledger.append([commit("kayak trip with Ana", conv="c1")])
    assert again.forgotten and not again.appended and ledger.count() == 1


def test_search_ranks_by_bm25_and_filters_by_source_and_time(ledger):
    ledger.append([commit("fixed the flaky login test", when="2025-01-05"),
                   commit("login page redesign, login flow, login copy", when="2025-02-05"),
                   new_event({"source": "chatgpt", "event_type": "message", "content": "login help",
                              "timestamp": "2025-02-06"})])
    hits = [e.content for e, _ in ledger.search("login")]
    assert hits[0] == "login page redesign, login flow, login copy" and len(hits) == 3
    assert [e.source for e, _ in ledger.search("login", source="chatgpt")] == ["chatgpt"]
    assert len(ledger.search("login", since="2025-02-01", before="2025-02-06")) == 1
    # user text never reaches MATCH raw: FTS5 syntax is plain text
    assert len(ledger.search('login" OR NEAR(')) == 3


def test_resolve_answers_found_in_order_and_missing(ledger):
    ids = ledger.append([commit("a one"), commit("b two")]).appended
    got = ledger.resolve([ids[1], "ev-000000000000000000000000", ids[0], "not-an-id"])
    assert [e.id for e in got.found] == [ids[1], ids[0]]
    assert got.missing == ["ev-000000000000000000000000", "not-an-id"]


def test_timestamps_are_normalised_to_utc_and_bad_events_are_refused_naming_the_field(ledger):
    assert commit("x").timestamp == "2025-03-01T08:00:00Z"
    with pytest.raises(EvidenceRefused, match="'content' is missing"):
        new_event({"source": "github", "event_type": "commit", "content": "  "})
    with pytest.raises(EvidenceRefused, match="unknown event field 'colour'"):
        new_event({"source": "s", "event_type": "t", "content": "c", "colour": "red"})
    with pytest.raises(EvidenceRefused, match="'metadata' must be a JSON object"):
        new_event({"source": "s", "event_type": "t", "content": "c", "metadata": [1]})
    with pytest.raises(InvalidTime, match="event timestamp 'yesterday'"):
        new_event({"source": "s", "event_type": "t", "content": "c", "timestamp": "yesterday"})


def test_the_ledger_is_migrated_by_named_ordered_migrations(ledger):
    conn = sqlite3.connect(ledger.path)
    assert LEDGER_MIGRATIONS.applied(conn) == LEDGER_MIGRATIONS.names == ["ledger001_events"]
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_the_high_water_mark_only_grows(ledger):
    ledger.append([commit("one", conv="c1")])
    mark = ledger.high_water()
    ledger.forget(["c1"])
    ledger.append([commit("two")])
    assert ledger.high_water() > mark and ledger.count(since_seq=mark) == 1
