"""A search index's generation names one committed state: every change a writer commits comes
with a new generation, so a reader's per-generation caches never mix two states."""
from __future__ import annotations

import dataclasses
import sqlite3

from test_index import corpus

from synix_resources.search.index import SearchIndex


def _state(path) -> tuple[str, frozenset, frozenset]:
    """(generation, units as (id, doc id), doc ids) as another connection sees them now."""
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("BEGIN")
        generation = conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0]
        units = frozenset(conn.execute("SELECT id, doc_id FROM units").fetchall())
        docs = frozenset(r[0] for r in conn.execute("SELECT id FROM docs"))
        conn.execute("COMMIT")
        return generation, units, docs
    finally:
        conn.close()


def test_every_state_a_writer_commits_has_its_own_generation(tmp_path):
    path = tmp_path / "search.db"
    docs = list(corpus().values())
    index = SearchIndex(path, embeddings=False)
    index.sync("memory", docs)
    states: list[tuple] = []
    # Look at the file before every statement the writer runs: each committed state shows up.
    index.db.conn.set_trace_callback(lambda _sql: states.append(_state(path)))
    try:
        for round_ in range(3):
            changed = [dataclasses.replace(d, content=f"{d.content} round {round_}",
                                           content_hash=f"{d.content_hash}-{round_}") for d in docs]
            index.sync("memory", changed if round_ % 2 == 0 else changed[::2], batch=2)
            index.remove([changed[0].artifact_id])
    finally:
        index.db.conn.set_trace_callback(None)
    states.append(_state(path))
    index.close()
    assert len({s[0] for s in states}) > 6  # several commits were watched
    seen: dict[str, tuple] = {}
    for generation, units, doc_ids in states:
        assert {doc for _, doc in units} <= doc_ids, f"generation {generation}: units without their document"
        assert seen.setdefault(generation, (units, doc_ids)) == (units, doc_ids), \
            f"generation {generation} names two different committed states"
