"""A query naming a calendar period prefers the documents dated inside it; the words-only
ranking (the raw-RAG baseline, `dates=False`) and queries naming no period are unchanged."""
from __future__ import annotations

from synix_resources.fingerprints import content_hash
from synix_resources.search.documents import IndexDoc
from synix_resources.search.index import SearchIndex
from synix_resources.search.when import named_periods, within


def _session(aid: str, day: str, lines: list[str]) -> IndexDoc:
    messages = tuple({"index": i, "id": str(i + 1), "speaker": "Ann", "text": t} for i, t in enumerate(lines))
    content = "\n".join(f"Ann: {t}" for t in lines)
    return IndexDoc(artifact_id=aid, layer="transcripts", level=0, content=content,
                    content_hash=content_hash(content), date=day, messages=messages,
                    sources=({"conversation_id": aid, "date": day, "message_range": [0, len(lines) - 1]},))


def _index(tmp_path) -> SearchIndex:
    index = SearchIndex(tmp_path / "s.sqlite", embeddings=False)
    index.sync("memory", [
        # the words match this one best: the concert twice, in the same turn
        _session("march", "2023-03-04T10:00:00Z", ["the concert, the concert was loud and long",
                                                   "weather talk"]),
        _session("may", "2023-05-09T10:00:00Z", ["we went to a concert", "then dinner"]),
        _session("july", "2023-07-01T10:00:00Z", ["a concert again", "nothing else"]),
    ])
    return index


def test_calendar_periods_are_read_from_the_query_and_vague_ones_are_not():
    assert named_periods("what did Ann do on 7 May 2023?") == [("2023-05-07", "2023-05-07")]
    assert named_periods("May 8th, 2023 and June 2022") == [("2023-05-08", "2023-05-08"),
                                                           ("2022-06-01", "2022-06-30")]
    assert named_periods("notes from 2024-02") == [("2024-02-01", "2024-02-29")]
    # a bare month, a bare year, "may" the verb, an impossible day: no period
    assert named_periods("may I ask what happened in May or in 2023?") == []
    assert named_periods("on 31 June 2023") == []
    assert within("2023-05-09T10:00:00Z", [("2023-05-01", "2023-05-31")])
    assert not within(None, [("2023-05-01", "2023-05-31")])


def test_a_session_dated_in_the_named_month_outranks_one_whose_words_match_better(tmp_path):
    index = _index(tmp_path)
    try:
        plain = [h.artifact_id for h in index.search("concert", leaves=True, limit=3)]
        assert plain[0] == "march"
        dated = [h.artifact_id for h in index.search("the concert in May 2023", leaves=True, limit=3)]
        assert dated[0] == "may" and set(dated) == {"march", "may", "july"}
        def place(query: str, **kw) -> int:
            turns = index.search(query, leaves=True, limit=6, per="passage", **kw)
            return [(h.artifact_id, h.message_ids) for h in turns].index(("may", ("1",)))

        # a dated turn is lifted a few places, not above every better-matching turn
        assert place("the concert in May 2023") < place("the concert in May 2023", dates=False)
        # a named day finds the session told a few days later (padded), not a month away
        assert index.search("the concert on 7 May 2023", leaves=True, limit=3)[0].artifact_id == "may"
        far = "the concert on 1 May 2023"  # eight days before it: no session is preferred
        assert [h.artifact_id for h in index.search(far, leaves=True, limit=3)] == \
            [h.artifact_id for h in index.search(far, leaves=True, limit=3, dates=False)]
    finally:
        index.close()


def test_words_only_ranking_and_explicit_date_filters_ignore_the_named_period(tmp_path):
    index = _index(tmp_path)
    try:
        words = [h.artifact_id for h in index.search("the concert in May 2023", leaves=True, limit=3,
                                                      dates=False)]
        assert words[0] == "march"
        # the user's own filter wins: nothing is added from outside it
        filtered = index.search("the concert in May 2023", leaves=True, since="2023-07-01")
        assert [h.artifact_id for h in filtered] == ["july"]
        # a period no document falls in changes nothing
        assert [h.artifact_id for h in index.search("the concert in May 2021", leaves=True, limit=3)] == \
            [h.artifact_id for h in index.search("the concert in May 2021", leaves=True, limit=3, dates=False)]
    finally:
        index.close()
