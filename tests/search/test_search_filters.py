"""The design's index filters (000 §6.1) on search: period, conversation and date ranges, in
SQL for every mode (fts, semantic, hybrid, exact, passages), scoped and unscoped; bad values
are one line; a version-2 index gains them in place."""
from __future__ import annotations

import sqlite3

import pytest

from synix_resources.errors import SearchError
from synix_resources.fingerprints import content_hash
from synix_resources.search import schema
from synix_resources.search.documents import IndexDoc
from synix_resources.search.index import SearchIndex
from synix_resources.search.rows import CANDIDATE_UNITS
from tests.support.embedders import LetterEmbedder

MODES = ("fts", "semantic", "hybrid")




def _transcript(cid: str, date: str, lines: list[tuple[str, str]]) -> IndexDoc:
    content = "\n".join(f"{who}: {text}" for who, text in lines)
    return IndexDoc(
        artifact_id=f"t-{cid}", layer="transcripts", level=0, content=content,
        content_hash=content_hash(content), title=cid, date=date,
        metadata={"meta.time.period": date[:7], "meta.chat.conversation_id": cid},
        sources=({"conversation_id": cid, "title": cid, "date": date[:10],
                  "message_range": [0, len(lines) - 1]},),
        messages=tuple({"index": i, "id": f"{cid}-{i}", "speaker": who, "text": text}
                       for i, (who, text) in enumerate(lines)))


def _summary(aid: str, layer: str, level: int, text: str, parents: list[IndexDoc],
             date: str, period: str | None = None, conversation: str | None = None) -> IndexDoc:
    ancestry = {p.artifact_id for p in parents} | {a for p in parents for a in p.ancestry}
    leaves = {a for p in parents for a in (p.leaf_ids or (p.artifact_id,))}
    metadata = {k: v for k, v in (("meta.time.period", period),
                                  ("meta.chat.conversation_id", conversation)) if v}
    return IndexDoc(artifact_id=aid, layer=layer, level=level, content=text,
                    content_hash=content_hash(text), title=aid, date=date, metadata=metadata,
                    parent_ids=tuple(p.artifact_id for p in parents), leaf_ids=tuple(sorted(leaves)),
                    ancestry=tuple(sorted(ancestry)),
                    sources=tuple(s for p in parents for s in p.sources))


def corpus() -> list[IndexDoc]:
    """Three conversations (two in March 2024, one in April), their episodes, a monthly rollup
    per month and a core over both months: every document mentions rust."""
    t1 = _transcript("c1", "2024-03-02T10:00:00Z", [
        ("user", "How do I fight the rust borrow checker?"),
        ("assistant", "Rust ownership means each value has one owner.")])
    t2 = _transcript("c2", "2024-03-20T09:00:00Z", [
        ("user", "My sourdough starter smells; also rust on my oven tray."),
        ("assistant", "Scrub the rust off with baking soda.")])
    t3 = _transcript("c3", "2024-04-11T18:00:00Z", [
        ("user", "Rust on my hiking crampons before the Dolomites trip."),
        ("assistant", "Dry the crampons and oil them against rust.")])
    e1 = _summary("e-c1", "episodes", 1, "Rust borrow checker help.", [t1], t1.date, "2024-03", "c1")
    e2 = _summary("e-c2", "episodes", 1, "Sourdough and rust on an oven tray.", [t2], t2.date,
                  "2024-03", "c2")
    e3 = _summary("e-c3", "episodes", 1, "Rust on crampons for the Dolomites.", [t3], t3.date,
                  "2024-04", "c3")
    m3 = _summary("m-2024-03", "monthly", 2, "March: rust ownership and rust on a tray.", [e1, e2],
                  t1.date, "2024-03")
    m4 = _summary("m-2024-04", "monthly", 2, "April: rust on crampons.", [e3], t3.date, "2024-04")
    core = _summary("core", "core", 3, "Writes Rust, bakes, hikes; fights rust everywhere.",
                    [m3, m4], t1.date)
    return [t1, t2, t3, e1, e2, e3, m3, m4, core]


@pytest.fixture
def index(tmp_path):
    idx = SearchIndex(tmp_path / "f.sqlite", embedder=LetterEmbedder())
    idx.sync("memory", corpus())
    yield idx
    idx.close()


def ids(hits) -> set[str]:
    return {h.artifact_id for h in hits}


@pytest.mark.parametrize("mode", MODES)
def test_period_keeps_the_documents_of_that_period_at_each_layer(index, mode):
    for layers, period, expected in (
            (["transcripts"], "2024-03", {"t-c1", "t-c2"}), (["episodes"], "2024-04", {"e-c3"}),
            (["monthly"], "2024-03", {"m-2024-03"}), (["core"], "2024-03", set()),
            (["episodes", "monthly"], "2024-04", {"e-c3", "m-2024-04"})):
        hits = index.search("rust", layers=layers, mode=mode, period=period, limit=20)
        assert ids(hits) == expected, (layers, period, mode)


@pytest.mark.parametrize("mode", MODES)
def test_conversation_keeps_every_document_built_from_it(index, mode):
    for layers, expected in ((["transcripts"], {"t-c2"}), (["episodes"], {"e-c2"}),
                             (["monthly"], {"m-2024-03"}), (["core"], {"core"})):
        hits = index.search("rust", layers=layers, mode=mode, conversation="c2", limit=20)
        assert ids(hits) == expected, (layers, mode)
    assert ids(index.search("rust", layers=["monthly"], mode=mode, conversation="c9")) == set()


@pytest.mark.parametrize("mode", MODES)
def test_unscoped_search_honours_every_filter(index, mode):
    by_id = {d.artifact_id: d for d in corpus()}
    hits = index.search("rust", mode=mode, conversation="c3", limit=20)
    assert hits and all("c3" in {s["conversation_id"] for s in h.sources} for h in hits)
    hits = index.search("rust", mode=mode, period="2024-04", limit=20)
    assert hits and ids(hits) <= {"t-c3", "e-c3", "m-2024-04"}
    hits = index.search("rust", mode=mode, since="2024-03-15", limit=20)
    assert hits and all(by_id[h.artifact_id].date >= "2024-03-15" for h in hits)


@pytest.mark.parametrize("mode", MODES)
def test_passage_search_and_leaves_honour_the_filters(index, mode):
    passages = index.search("rust", mode=mode, per="passage", leaves=True, conversation="c1",
                            limit=20)
    assert passages and {h.artifact_id for h in passages} == {"t-c1"} and len(passages) == 2
    passages = index.search("rust", mode=mode, per="passage", layers=["transcripts"],
                            period="2024-04", limit=20)
    assert {h.artifact_id for h in passages} == {"t-c3"} and all(h.message_range for h in passages)


def test_exact_search_honours_the_filters(index):
    assert ids(index.search("rust", exact=True, limit=20)) == {"t-c1", "t-c2", "t-c3"}
    assert ids(index.search("rust", exact=True, period="2024-03", limit=20)) == {"t-c1", "t-c2"}
    assert ids(index.search("rust", exact=True, conversation="c3")) == {"t-c3"}
    assert ids(index.search("rust", exact=True, layers=["episodes"], conversation="c1")) == {"e-c1"}
    assert ids(index.search("rust", exact=True, until="2024-03-02T10:00:00Z")) == {"t-c1"}


def test_since_and_until_take_iso_date_times_to_the_second_and_utc_offsets(index):
    scoped = {"layers": ["transcripts"], "limit": 20}
    assert ids(index.search("rust", since="2024-03-20T09:00:00Z", **scoped)) == {"t-c2", "t-c3"}
    assert ids(index.search("rust", since="2024-03-20T09:00:01Z", **scoped)) == {"t-c3"}
    assert ids(index.search("rust", until="2024-03-20T08:59:59", **scoped)) == {"t-c1"}
    assert ids(index.search("rust", until="2024-03-20 09:00", **scoped)) == {"t-c1", "t-c2"}
    # 10:00 at +01:00 is 09:00 UTC; a Python datetime's isoformat() is accepted as written
    assert ids(index.search("rust", since="2024-03-20T10:00:00+01:00", **scoped)) == {"t-c2", "t-c3"}
    assert ids(index.search("rust", until="2024-03-20T09:59:59.5+01:00", **scoped)) == {"t-c1"}
    assert ids(index.search("rust", since="2024-03-20", until="2024-04-11", **scoped)) == {"t-c2", "t-c3"}


@pytest.mark.parametrize("options, says", [
    ({"period": "2024-13"}, "--period '2024-13' is not a period (there is no month 13)"),
    ({"period": "March"}, "--period 'March' is not a period"),
    ({"period": "2024-W54"}, "there is no week 54"),
    ({"period": "2024-Q5"}, "there is no quarter 5"),
    ({"conversation": "   "}, "--conversation id '' is not a conversation id"),
    ({"conversation": "c\udcff"}, "not valid Unicode"),
    ({"since": "2024-03T10:00"}, "--since '2024-03T10:00' has a time but no day"),
    ({"until": "2024-03-01T10:00+25:00"}, "there is no UTC offset +25:00"),
    ({"until": "2024-03-01T10:61"}, "there is no minute 61"),
])
def test_bad_filter_values_are_one_line_naming_the_format(index, options, says):
    for exact in (False, True):
        with pytest.raises(SearchError) as info:
            index.search("rust", exact=exact, **options)
        line = info.value.one_line()
        assert says in line and "\n" not in line, line
    if "period" in options:
        assert "YYYY-MM (a month)" in line


def test_a_selective_filter_still_fills_the_limit_in_semantic_search(tmp_path):
    """The conversation's units are far below the best cosine slice of the whole index: the
    filter must rank them all, not filter a top-k that holds none of them."""
    crowd = [_transcript(f"z{i}", "2024-05-01T00:00:00Z", [("user", f"zzz zig zag {i}")])
             for i in range(CANDIDATE_UNITS * 4 + 50)]
    # close to the query by meaning (a cosine ≥ MATCH_COSINE), but less close than the crowd
    target = [_transcript("mine", "2024-06-01T00:00:00Z", [("user", f"zebra zoo fizz {i}")
                                                           for i in range(12)])]
    idx = SearchIndex(tmp_path / "crowd.sqlite", embedder=LetterEmbedder())
    idx.sync("memory", crowd + target)
    for mode in ("semantic", "hybrid"):
        assert "t-mine" not in ids(idx.search("zzz", mode=mode, limit=10))
        hits = idx.search("zzz", mode=mode, conversation="mine", per="passage", limit=10)
        assert len(hits) == 10 and ids(hits) == {"t-mine"}, mode
        assert ids(idx.search("zzz", mode=mode, period="2024-06")) == {"t-mine"}
    idx.close()


def test_a_rewritten_or_forgotten_document_leaves_no_stale_filter_rows(index):
    docs = corpus()
    moved = _transcript("c1", "2024-05-05T10:00:00Z", [("user", "rust again in May")])
    index.sync("memory", [moved, *docs[1:]])
    assert ids(index.search("rust", layers=["transcripts"], period="2024-03")) == {"t-c2"}
    assert ids(index.search("rust", layers=["transcripts"], period="2024-05")) == {"t-c1"}
    index.remove(["t-c2"])
    assert ids(index.search("rust", layers=["transcripts"], conversation="c2")) == set()
    count = index.db.execute("SELECT COUNT(*) FROM doc_conversations WHERE doc_id NOT IN "
                             "(SELECT id FROM docs)").fetchone()[0]
    assert count == 0


def _downgrade_to_version_2(path) -> None:
    """Rewrite a current file into the version-2 layout: no period column, no conversations."""
    with sqlite3.connect(path) as conn:
        conn.execute("DROP INDEX docs_period")
        conn.execute("ALTER TABLE docs DROP COLUMN period")
        conn.execute("DROP TABLE doc_conversations")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")


def test_a_version_2_index_gains_the_filters_in_place_when_opened(tmp_path):
    path = tmp_path / "v2.sqlite"
    idx = SearchIndex(path, embedder=LetterEmbedder())
    idx.sync("memory", corpus())
    expected = [h.to_dict() for h in idx.search("rust", mode="hybrid", conversation="c2")]
    idx.close()
    _downgrade_to_version_2(path)

    idx = SearchIndex(path, embedder=LetterEmbedder())
    assert idx.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == \
        schema.SCHEMA_VERSION
    assert [h.to_dict() for h in idx.search("rust", mode="hybrid", conversation="c2")] == expected
    assert ids(idx.search("rust", layers=["episodes"], period="2024-03")) == {"e-c1", "e-c2"}
    assert idx.sync("memory", corpus()).unchanged == len(corpus())  # nothing re-indexed
    idx.close()


def test_an_index_from_a_newer_synix_is_refused_not_relabelled(tmp_path):
    path = tmp_path / "new.sqlite"
    SearchIndex(path, embeddings=False).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    with pytest.raises(SearchError, match="schema 99, newer than this synix reads"):
        SearchIndex(path, embeddings=False)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == "99"
