"""The response cache records what each entry's input derived from, so forget can find every
answer built from a forgotten artifact — through fold states and map-reduce parts — and old
cache files upgrade in place through named, ordered migrations."""
from __future__ import annotations

import sqlite3

from synix_resources.llm.cache import ResponseCache
from synix_resources.llm.cache_schema import CACHE_MIGRATIONS, SCHEMA
from synix_resources.llm.fake import FakeClient
from synix_resources.llm.types import LLMRequest


def _fold(client, items: list[tuple[str, str]]) -> list:
    """A fold the way the engine runs one: each step's sources are the state and the item."""
    state, answers = None, []
    for art_id, text in items:
        sources = ([("state", state)] if state else []) + [(art_id, text)]
        answer = client.complete(LLMRequest(f"state: {state}\nadd: {text}", sources=sources,
                                            label=f"core/{art_id}"))
        answers.append(answer)
        state = answer.text
    return answers


def _keys(cache: ResponseCache) -> dict[str, str]:
    with cache._lock:
        return dict(cache._db.execute("SELECT label, key FROM responses").fetchall())


def test_every_fold_state_after_a_forgotten_item_is_derived_from_it(cache_location):
    cache = ResponseCache(cache_location)
    client = FakeClient(cache=cache)
    _fold(client, [(f"month-{i}", f"what happened in month {i}") for i in range(1, 7)])
    client.complete(LLMRequest("unrelated", sources=[("other", "x")], label="other"))
    keys = _keys(cache)
    derived = cache.derived_keys({"month-3"})
    assert derived == {keys[f"core/month-{i}"] for i in range(3, 7)}  # 3 itself and every later state
    assert cache.delete_keys(derived) == 4
    assert set(_keys(cache)) == {"core/month-1", "core/month-2", "other"}


def test_map_reduce_parts_and_their_final_answer_are_derived_from_the_source(cache_location):
    cache = ResponseCache(cache_location)
    client = FakeClient(cache=cache, context_tokens=1200)
    long_text = "\n\n".join(f"Paragraph {i}: " + "words " * 120 for i in range(12))

    def render(sources):
        return "Summarise:\n" + "\n".join(f"[{sid}] {text}" for sid, text in sources)

    sources = [("episode-a", long_text), ("episode-b", "short and unrelated")]
    response = client.complete(LLMRequest(render(sources), sources=sources, render=render,
                                          max_tokens=200, label="monthly/2025-01"))
    assert response.map_reduce_parts > 1
    assert cache.derived_keys({"episode-a"}) == set(_keys(cache).values())  # parts + final
    assert len(cache.derived_keys({"episode-b"})) == 1  # only the final answer read it


def test_text_hashes_find_entries_that_read_the_same_text_under_another_id(cache_location):
    from synix_resources.fingerprints import sha256_text

    cache = ResponseCache(cache_location)
    FakeClient(cache=cache).complete(LLMRequest("p", sources=[("twin-a", "identical text")]))
    assert len(cache.derived_keys({"twin-b"}, {sha256_text("identical text")})) == 1


def test_an_old_cache_file_is_migrated_in_place_and_keeps_its_entries(tmp_path):
    path = tmp_path / "llm_cache.db"
    conn = sqlite3.connect(str(path))
    conn.executescript(SCHEMA)  # a cache written before sources were recorded
    conn.execute("INSERT INTO responses VALUES ('k1','ph','sh','fake','m',0.3,10,'lbl','old prompt',"
                 "'','{\"text\": \"old answer\", \"provider\": \"fake\", \"model\": \"m\"}',0)")
    conn.commit()
    conn.close()
    cache = ResponseCache(path)
    assert cache.count() == 1 and cache.get("k1").text == "old answer"
    assert cache.keys_without_sources() == ["k1"]
    with sqlite3.connect(str(path)) as db:
        applied = [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY rowid")]
    db.close()
    assert applied == CACHE_MIGRATIONS.names == ["c001_responses_and_batches", "c002_response_sources"]
    FakeClient(cache=cache).complete(LLMRequest("new", sources=[("a", "b")]))
    assert cache.keys_without_sources() == ["k1"]  # new entries record their sources
    cache.close()
    assert ResponseCache(path).count() == 2  # reopening runs nothing twice


def test_a_source_naming_a_kept_artifact_is_judged_by_that_record_not_its_identical_text(cache_location):
    from synix_resources.fingerprints import sha256_text

    cache = ResponseCache(cache_location)
    client = FakeClient(cache=cache)
    # the month rolled up again without the forgotten conversation (its prompt never showed
    # it): byte-identical to the forgotten month, under the id of an artifact that survives
    fold = client.complete(LLMRequest("state + month", label="core/2025-02",
                                      sources=[("state", "s1"), ("monthly-aaaa", "month text")]))
    client.complete(LLMRequest("next", label="core/2025-03",
                               sources=[("state", fold.text), ("monthly-cccc", "march")]))
    # a fold state (no artifact id) with the forgotten text has no other record: still derived
    client.complete(LLMRequest("compress", label="core/compress",
                               sources=[("state", "month text")]))
    keys = _keys(cache)
    forgotten = {"monthly-bbbb"}
    hashes = {sha256_text("month text")}
    assert cache.derived_keys(forgotten, hashes) == set(keys.values())  # bytes alone: all three
    kept = cache.derived_keys(forgotten, hashes, kept=lambda ids: ids & {"monthly-aaaa", "monthly-cccc"})
    assert kept == {keys["core/compress"]}
