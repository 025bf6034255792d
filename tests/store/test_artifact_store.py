"""ArtifactStore behaviour: contract tests on every backend (tests/store/conftest.py), and SQLite's
own file behaviour on real SQLite files."""
from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
import time

import pytest

from synix_resources import fingerprints
from synix_resources.errors import ArtifactNotFound, StoreError, StoreLockedError
from synix_resources.store.artifact_store import (
    Artifact, ArtifactStore, Checkpoint, CurrentRef, LineageNode,
)

FULL_AUDIT = {
    "prompt_template_hash": "tpl-hash", "rendered_prompt_hash": "rendered-hash",
    "provider": "anthropic", "model": "claude-x", "temperature": 0.3, "max_tokens": 1024,
    "raw_response": "raw text", "input_tokens": 120, "output_tokens": 40,
    "cache_read_tokens": 100, "cache_write_tokens": 20, "cost_usd": 0.0012, "latency_s": 1.5,
    "attempts": 2, "flags": ["truncated", "retried"],
}


def put(store, layer, group, key="k", content=None, **kw):
    return store.put(layer=layer, group_key=group, materialization_key=key,
                     content=content if content is not None else f"{layer}:{group}:{key}", **kw)


# --- round trips and identity ---------------------------------------------------------------


def test_put_then_get_round_trips_every_field(store):
    t = put(store, "transcripts", "c0")
    stored = store.put(layer="episodes", group_key="c0", level=1, content="An episode.\n",
                       materialization_key="mk-1", metadata={"time": {"period": "2024-03"},
                                                              "custom": {"é": [1, 2]}},
                       audit=FULL_AUDIT, parents=[t.artifact_id], run_id="run-1")
    got = store.get(stored.artifact_id)
    assert got == stored
    assert got.artifact_id == fingerprints.artifact_id("episodes", "c0", "mk-1")
    assert (got.layer, got.group_key, got.level) == ("episodes", "c0", 1)
    assert got.content == "An episode.\n"
    assert got.content_hash == fingerprints.content_hash("An episode.\n")
    assert got.materialization_key == "mk-1"
    assert got.metadata == {"time": {"period": "2024-03"}, "custom": {"é": [1, 2]}}
    assert got.audit == FULL_AUDIT
    assert got.run_id == "run-1"
    assert got.created_at and got.superseded_at is None
    assert got.parent_ids == (t.artifact_id,)
    assert store.audit(stored.artifact_id) == FULL_AUDIT


def test_audit_keeps_unknown_keys_and_fills_missing_fields_with_none(store):
    a = put(store, "episodes", "g", audit={"model": "m", "request_id": "req-9"})
    audit = store.audit(a.artifact_id)
    assert audit["model"] == "m" and audit["request_id"] == "req-9"
    assert audit["flags"] == [] and audit["cost_usd"] is None
    assert store.audit(put(store, "transcripts", "g").artifact_id) is None


def test_identical_content_in_two_groups_gives_two_artifacts(store):
    a = put(store, "episodes", "c1", content="same text")
    b = put(store, "episodes", "c2", content="same text")
    assert a.artifact_id != b.artifact_id
    assert a.content_hash == b.content_hash
    assert len(store.list_layer("episodes")) == 2


def test_reput_of_current_key_is_idempotent_and_returns_stored_artifact(store):
    first = put(store, "episodes", "c1", key="k1", metadata={"v": 1})
    time.sleep(0.001)
    again = put(store, "episodes", "c1", key="k1", content="different wording",
                metadata={"v": 2})
    assert again == first  # unchanged: created_at, content and metadata of the stored one
    assert len(store.history("episodes", "c1")) == 1


def test_put_with_new_key_supersedes_previous_and_history_keeps_it(store):
    old = put(store, "monthly", "2024-03", key="k1", content="v1")
    new = put(store, "monthly", "2024-03", key="k2", content="v2")
    assert store.current("monthly", "2024-03") == new
    history = store.history("monthly", "2024-03")
    assert [a.artifact_id for a in history] == [new.artifact_id, old.artifact_id]
    assert history[1].superseded_at is not None and history[1].content == "v1"
    assert store.get(old.artifact_id).superseded_at is not None
    assert [a.artifact_id for a in store.list_layer("monthly")] == [new.artifact_id]
    assert len(store.list_layer("monthly", include_superseded=True)) == 2


def test_reput_of_superseded_key_makes_it_current_again(store):
    v1 = put(store, "monthly", "m", key="k1", content="v1")
    put(store, "monthly", "m", key="k2", content="v2")
    revived = put(store, "monthly", "m", key="k1", content="v1 again")
    assert revived.artifact_id == v1.artifact_id
    assert store.current("monthly", "m").content == "v1 again"
    assert [a.content for a in store.history("monthly", "m")] == ["v1 again", "v2"]


def test_put_rejects_bad_arguments(store):
    with pytest.raises(ValueError):
        put(store, "", "g")
    with pytest.raises(TypeError):
        put(store, "episodes", "g", parents="transcripts-123")
    with pytest.raises(TypeError):
        store.put(layer="l", group_key="g", content=None, materialization_key="k")


# --- atomicity ------------------------------------------------------------------------------


def _fail_inserts_into(store, table):
    """Make the database itself fail the next insert into `table`, between the store's writes."""
    if store.dialect.name == "sqlite":
        store._conn.execute(f"CREATE TEMP TRIGGER fail_{table} BEFORE INSERT ON main.{table} "
                            "BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
        return
    store._conn.execute("CREATE FUNCTION fail_insert() RETURNS trigger LANGUAGE plpgsql AS "
                        "$$ BEGIN RAISE EXCEPTION 'injected failure'; END $$")
    store._conn.execute(f"CREATE TRIGGER fail_{table} BEFORE INSERT ON {table} "
                        "FOR EACH ROW EXECUTE FUNCTION fail_insert()")


@pytest.mark.parametrize("table", ["edges", "audit"])
def test_failure_between_writes_leaves_nothing_half_written(sql_store, table):
    store = sql_store
    parent = put(store, "transcripts", "c1")
    previous = put(store, "episodes", "c1", key="k1", parents=[parent.artifact_id],
                   audit={"model": "m"})
    _fail_inserts_into(store, table)
    with pytest.raises(StoreError, match="injected failure"):
        put(store, "episodes", "c1", key="k2", parents=[parent.artifact_id],
            audit={"model": "m"})
    new_id = fingerprints.artifact_id("episodes", "c1", "k2")
    assert store.find(new_id) is None
    assert store.current("episodes", "c1") == previous
    counts = {t: store._conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("artifacts", "edges", "audit")}
    assert counts == {"artifacts": 2, "edges": 1, "audit": 1}


class _CrashingConnection:
    """Delegates to the real connection but raises on the first statement matching `needle`."""

    def __init__(self, conn, needle):
        self._conn, self._needle = conn, needle

    def execute(self, sql, *args):
        if self._needle in sql:
            raise RuntimeError(f"simulated crash before: {sql[:40]}")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def test_crash_after_superseding_before_inserting_rolls_back(sql_store, monkeypatch):
    store = sql_store
    previous = put(store, "episodes", "c1", key="k1")
    monkeypatch.setattr(store, "_conn", _CrashingConnection(store._conn, "INSERT INTO artifacts"))
    with pytest.raises(RuntimeError, match="simulated crash"):
        put(store, "episodes", "c1", key="k2")
    monkeypatch.undo()
    assert store.current("episodes", "c1") == previous
    assert len(store.history("episodes", "c1")) == 1


def test_missing_parent_raises_not_found_and_writes_nothing(store):
    with pytest.raises(ArtifactNotFound, match="transcripts-nope"):
        put(store, "episodes", "c1", parents=["transcripts-nope"])
    assert store.layers() == {}


def test_put_many_is_all_or_nothing(store):
    items = [dict(layer="transcripts", group_key=f"c{i}", content=f"t{i}",
                  materialization_key="k") for i in range(50)]
    items.append(dict(layer="episodes", group_key="x", content="x", materialization_key="k",
                      parents=["transcripts-missing"]))
    with pytest.raises(ArtifactNotFound):
        store.put_many(items)
    assert store.list_layer("transcripts") == []


def test_a_failed_put_many_leaves_the_version_it_would_have_superseded_current(store):
    old = put(store, "episodes", "c1", key="k1")
    with pytest.raises(ArtifactNotFound):
        store.put_many([dict(layer="episodes", group_key="c1", content="new",
                             materialization_key="k2"),
                        dict(layer="episodes", group_key="c2", content="x",
                             materialization_key="k", parents=["transcripts-missing"])])
    assert store.current("episodes", "c1") == old
    assert [a.artifact_id for a in store.history("episodes", "c1")] == [old.artifact_id]
    assert store.layers()["episodes"] == {"artifacts": 1, "superseded": 0,
                                          "last_built": old.created_at}


def test_put_many_keeps_item_order_and_handles_repeats_within_a_batch(store):
    existing = put(store, "transcripts", "c1", key="k1")
    items = [dict(layer="transcripts", group_key="c0", content="a", materialization_key="k1"),
             dict(layer="transcripts", group_key="c1", content="b", materialization_key="k1"),
             dict(layer="transcripts", group_key="c0", content="a", materialization_key="k1"),
             dict(layer="transcripts", group_key="c2", content="c", materialization_key="k1"),
             dict(layer="transcripts", group_key="c2", content="d", materialization_key="k2")]
    out = store.put_many(items)
    assert [a.group_key for a in out] == ["c0", "c1", "c0", "c2", "c2"]
    assert out[1] == existing and out[0].artifact_id == out[2].artifact_id
    assert store.current("transcripts", "c2").content == "d"
    assert len(store.history("transcripts", "c2")) == 2
    assert store.put_many([]) == []


def test_put_many_10k_small_artifacts_in_one_transaction_and_indexes_them_all(store):
    # Speed figures for bulk writes live in benchmarks/bench_build.py, not in a timed test.
    items = [dict(layer="transcripts", group_key=f"conv-{i:05d}", content=f"message {i}",
                  materialization_key=f"key-{i}", metadata={"i": i}) for i in range(10_000)]
    out = store.put_many(items)
    assert len(out) == 10_000
    index = store.current_index("transcripts")
    assert len(index) == 10_000
    assert index["conv-00042"] == CurrentRef(out[42].artifact_id, "key-42", out[42].content_hash,
                                             out[42].created_at)


# --- reading --------------------------------------------------------------------------------


def test_get_accepts_unique_prefix_of_id_or_digest(store):
    a = put(store, "episodes", "c1")
    assert store.get(a.artifact_id[:10]) == a
    digest = a.artifact_id.split("-", 1)[1]
    assert store.get(digest[:8]) == a
    assert store.find(a.artifact_id[:5]) is None  # shorter than 6 chars: exact ids only


def test_get_unknown_id_raises_one_line_naming_it(store):
    with pytest.raises(ArtifactNotFound) as info:
        store.get("episodes-doesnotexist")
    line = info.value.one_line()
    assert "episodes-doesnotexist" in line and "\n" not in line
    assert store.find("episodes-doesnotexist") is None


def test_ambiguous_prefix_raises_naming_the_matches(store):
    ids = [put(store, "episodes", f"g{i}").artifact_id for i in range(40)]
    by_start: dict[str, list[str]] = {}
    for aid in ids:
        by_start.setdefault(aid[:len("episodes-") + 1], []).append(aid)
    prefix, clash = next((p, v) for p, v in by_start.items() if len(v) > 1)
    with pytest.raises(ArtifactNotFound, match="ambiguous") as info:
        store.get(prefix)
    assert clash[0] in str(info.value)


def test_get_many_keeps_order_and_names_missing_ids(store):
    a, b = put(store, "t", "a"), put(store, "t", "b")
    assert store.get_many([b.artifact_id, a.artifact_id]) == [b, a]
    with pytest.raises(ArtifactNotFound, match="t-missing"):
        store.get_many([a.artifact_id, "t-missing"])


def test_current_index_has_only_current_artifacts(store):
    put(store, "monthly", "2024-01", key="old")
    new = put(store, "monthly", "2024-01", key="new")
    other = put(store, "monthly", "2024-02")
    put(store, "episodes", "2024-01")
    index = store.current_index("monthly")
    assert set(index) == {"2024-01", "2024-02"}
    assert index["2024-01"].artifact_id == new.artifact_id
    assert index["2024-01"].materialization_key == "new"
    assert index["2024-02"].content_hash == other.content_hash
    assert store.current_index("nothing") == {}


def test_current_index_of_some_group_keys_reads_only_those_on_main_and_on_a_branch(store):
    put(store, "monthly", "2024-01", key="old")
    new = put(store, "monthly", "2024-01", key="new")
    for month in ("2024-02", "2024-03"):
        put(store, "monthly", month)
    index = store.current_index("monthly", {"2024-01", "2024-03", "2099-01"})
    assert set(index) == {"2024-01", "2024-03"}  # a key with no artifact is simply absent
    assert index["2024-01"].artifact_id == new.artifact_id
    assert store.current_index("monthly", []) == {}
    store.create_branch("b")
    branch = store.on_branch("b")
    branch.retire("monthly", ["2024-03"])
    assert set(branch.current_index("monthly", ["2024-01", "2024-03"])) == {"2024-01"}
    assert set(store.current_index("monthly", ["2024-01", "2024-03"])) == {"2024-01", "2024-03"}


def test_current_count_counts_current_artifacts_of_a_layer_on_main_and_on_a_branch(store):
    put(store, "monthly", "2024-01", key="old")
    put(store, "monthly", "2024-01", key="new")
    for month in ("2024-02", "2024-03"):
        put(store, "monthly", month)
    put(store, "episodes", "2024-01")
    assert store.current_count("monthly") == 3  # the superseded version is not counted
    assert store.current_count("episodes") == 1
    assert store.current_count("nothing") == 0
    store.create_branch("b")
    branch = store.on_branch("b")
    branch.retire("monthly", ["2024-03"])
    assert branch.current_count("monthly") == 2 == len(branch.current_index("monthly"))
    assert store.current_count("monthly") == 3 == len(store.current_index("monthly"))


def test_planning_reads_of_current_artifacts_come_from_an_index_not_the_long_rows(sqlite_store):
    # Long contents push the columns a plan reads onto overflow pages; the covering index of
    # migration m010 answers current_index and current_count without reading any row.
    for g in ("a", "b"):
        put(sqlite_store, "transcripts", g, content="word " * 5000)
    statements = []
    conn = sqlite_store._conn
    conn.set_trace_callback(statements.append)
    try:
        sqlite_store.current_index("transcripts")
        sqlite_store.current_index("transcripts", ["a"])
        sqlite_store.current_count("transcripts")
    finally:
        conn.set_trace_callback(None)
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(reads) == 3
    for sql in reads:
        plan = " ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "COVERING INDEX idx_artifacts_current_refs" in plan, (sql, plan)


def test_list_layer_is_ordered_by_group_key(store):
    for g in ["b", "c", "a"]:
        put(store, "episodes", g)
    assert [a.group_key for a in store.list_layer("episodes")] == ["a", "b", "c"]


def test_layers_summarises_current_and_superseded_counts(store):
    put(store, "episodes", "a", key="1")
    put(store, "episodes", "a", key="2")
    last = put(store, "episodes", "b")
    put(store, "core", "core")
    summary = store.layers()
    assert summary["episodes"] == {"artifacts": 2, "superseded": 1,
                                   "last_built": last.created_at}
    assert summary["core"]["artifacts"] == 1


def test_retire_supersedes_current_artifacts_of_vanished_groups(store):
    for g in ["topic-a", "topic-b", "topic-c"]:
        put(store, "topics", g)
    assert store.retire("topics", ["topic-a", "topic-c", "never-existed"]) == 2
    assert list(store.current_index("topics")) == ["topic-b"]
    assert store.history("topics", "topic-a")[0].superseded_at is not None
    assert store.retire("topics", []) == 0


# --- provenance -----------------------------------------------------------------------------


@pytest.fixture
def chain(store):
    return build_chain(store)


def build_chain(store):
    """4 transcripts → 4 episodes → 2 monthly (fan-in of 2) → 1 core (fold over months)."""
    t = [put(store, "transcripts", f"c{i}", level=0) for i in range(4)]
    e = [put(store, "episodes", f"c{i}", level=1, parents=[t[i].artifact_id]) for i in range(4)]
    m = [put(store, "monthly", "2024-01", level=2,
             parents=[e[1].artifact_id, e[0].artifact_id]),
         put(store, "monthly", "2024-02", level=2,
             parents=[e[2].artifact_id, e[3].artifact_id])]
    core = put(store, "core", "core", level=3, parents=[m[0].artifact_id, m[1].artifact_id])
    return {"t": t, "e": e, "m": m, "core": core}


def ids(artifacts):
    return [a.artifact_id for a in artifacts]


def test_parents_come_back_in_edge_order(store, chain):
    assert ids(store.parents(chain["m"][0].artifact_id)) == ids([chain["e"][1], chain["e"][0]])
    assert store.parents(chain["t"][0].artifact_id) == []


def test_lineage_walks_four_levels_with_fan_in(store, chain):
    tree = store.lineage(chain["core"].artifact_id)
    assert isinstance(tree, LineageNode) and tree.artifact == chain["core"]
    assert ids(n.artifact for n in tree.parents) == ids(chain["m"])
    jan = tree.parents[0]
    assert ids(n.artifact for n in jan.parents) == ids([chain["e"][1], chain["e"][0]])
    assert jan.parents[0].parents[0].artifact == chain["t"][1]
    assert jan.parents[0].parents[0].parents == []
    layers_by_depth = {}
    for depth, node in tree.walk():
        layers_by_depth.setdefault(depth, set()).add(node.artifact.layer)
    assert layers_by_depth == {0: {"core"}, 1: {"monthly"}, 2: {"episodes"},
                               3: {"transcripts"}}


def test_lineage_stops_at_max_depth(store, chain):
    tree = store.lineage(chain["core"].artifact_id, max_depth=1)
    assert len(tree.parents) == 2
    assert all(node.parents == [] for node in tree.parents)


def test_leaves_of_core_are_transcripts_in_breadth_first_edge_order(store, chain):
    leaves = store.leaves(chain["core"].artifact_id)
    assert ids(leaves) == ids([chain["t"][1], chain["t"][0], chain["t"][2], chain["t"][3]])


def test_leaves_respects_max_count_and_max_depth(store, chain):
    core = chain["core"].artifact_id
    assert ids(store.leaves(core, max_count=2)) == ids([chain["t"][1], chain["t"][0]])
    assert store.leaves(core, max_depth=2) == []  # episodes still have parents at depth 2
    assert len(store.leaves(core, max_depth=3)) == 4


def test_leaves_are_deduplicated_and_a_parentless_artifact_is_its_own_leaf(store):
    shared = put(store, "transcripts", "shared")
    a = put(store, "episodes", "a", parents=[shared.artifact_id])
    b = put(store, "episodes", "b", parents=[shared.artifact_id])
    top = put(store, "core", "core", parents=[a.artifact_id, b.artifact_id,
                                              shared.artifact_id])
    assert ids(store.leaves(top.artifact_id)) == [shared.artifact_id]
    assert ids(store.leaves(shared.artifact_id)) == [shared.artifact_id]


def test_descendants_are_everything_built_from_an_artifact(store, chain):
    down = store.descendants(chain["t"][0].artifact_id)
    assert ids(down) == ids([chain["e"][0], chain["m"][0], chain["core"]])
    assert store.descendants(chain["core"].artifact_id) == []


def test_descendants_include_superseded_versions(store, chain):
    old_core = chain["core"]
    new_core = put(store, "core", "core", key="k2", parents=[chain["m"][1].artifact_id])
    down = ids(store.descendants(chain["t"][3].artifact_id))
    assert old_core.artifact_id in down and new_core.artifact_id in down


def test_provenance_of_unknown_id_raises_not_found(store):
    for call in (store.parents, store.lineage, store.leaves, store.descendants):
        with pytest.raises(ArtifactNotFound):
            call("nothing-0000000000")


# --- deletion / forgetting ------------------------------------------------------------------


def _file_bytes(path):
    data = b""
    for suffix in ("", "-wal"):
        if os.path.exists(f"{path}{suffix}"):
            with open(f"{path}{suffix}", "rb") as fh:
                data += fh.read()
    return data


def test_delete_removes_artifacts_edges_and_audit(sql_store):
    store, chain = sql_store, build_chain(sql_store)
    forget = [chain["t"][0].artifact_id] + ids(store.descendants(chain["t"][0].artifact_id))
    assert store.delete(forget) == 4
    assert store.find(chain["core"].artifact_id) is None
    edges = store._conn.execute("SELECT count(*) FROM edges WHERE child_id IN (?, ?) "
                                "OR parent_id IN (?, ?)", (*forget[:2], *forget[:2])).fetchone()
    assert edges == (0,)
    assert ids(store.parents(chain["m"][1].artifact_id)) == ids(chain["e"][2:])
    assert store.delete([]) == 0


def test_delete_leaves_no_survivor_naming_a_deleted_parent_on_any_branch(store, chain):
    store.create_branch("b")
    gone = [chain["e"][0].artifact_id, chain["e"][1].artifact_id]
    assert store.delete(gone + ["episodes-never-stored"]) == 2
    jan = chain["m"][0].artifact_id
    assert store.get(jan).parent_ids == () and store.parents(jan) == []
    assert store.lineage(jan).parents == []
    assert ids(store.leaves(jan)) == [jan]  # no parents left: its own leaf
    assert store.descendants(chain["t"][0].artifact_id) == []
    assert set(store.on_branch("b").current_index("episodes")) == {"c2", "c3"}
    assert set(store.current_index("episodes")) == {"c2", "c3"}
    assert store.purge_free_pages() is True


def test_deleted_content_is_gone_from_the_database_file_after_purge(sqlite_store):
    store = sqlite_store
    marker = "ZQX-secret-marker-7c1f0e"
    keep = put(store, "transcripts", "keep", content="nothing secret here")
    secret = put(store, "transcripts", "secret", content=f"my {marker} is here",
                 audit={"raw_response": f"echo {marker}"})
    store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert marker.encode() in _file_bytes(store.path)
    assert store.delete([secret.artifact_id]) == 1
    assert store.purge_free_pages() is True
    assert marker.encode() not in _file_bytes(store.path)
    assert store.get(keep.artifact_id) == keep
    assert store._conn.execute("PRAGMA secure_delete").fetchone() == (1,)


# --- concurrency ----------------------------------------------------------------------------


def _writer_process(path, worker, shared_groups, own_groups):
    with ArtifactStore(path, busy_timeout_ms=20000) as s:
        for i in range(shared_groups):
            # Every process writes the same shared groups with the same keys: must dedupe.
            s.put(layer="episodes", group_key=f"shared-{i}", content=f"episode {i}",
                  materialization_key=f"k{i}")
            s.put_many([dict(layer="transcripts", group_key=f"w{worker}-{i}-{j}",
                             content="x", materialization_key="k")
                        for j in range(own_groups)])


def test_two_processes_writing_concurrently_do_not_crash_or_duplicate(store_location):
    path = store_location
    ArtifactStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer_process, args=(str(path), w, 60, 5)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    with ArtifactStore(path) as s:
        assert len(s.current_index("episodes")) == 60
        assert s.layers()["episodes"] == {"artifacts": 60, "superseded": 0,
                                          "last_built": s.layers()["episodes"]["last_built"]}
        assert len(s.current_index("transcripts")) == 3 * 60 * 5


def test_threads_sharing_one_store_can_write_concurrently(store):
    errors = []

    def work(n):
        try:
            for i in range(50):
                put(store, "transcripts", f"t{n}-{i}")
                store.current_index("transcripts")
        except StoreError as err:  # collected so the assertion below shows it
            errors.append(err)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.current_index("transcripts")) == 300


def test_postgres_write_lock_held_too_long_raises_store_locked_naming_the_url(postgres_url):
    import psycopg

    from synix_resources.store.postgres import ADVISORY_KEY, STORE_WRITE_LOCK, pg_sql

    with ArtifactStore(postgres_url, busy_timeout_ms=100) as s:
        other = psycopg.connect(postgres_url)  # not autocommit: holds its transaction open
        other.execute(pg_sql(f"SELECT pg_advisory_xact_lock({ADVISORY_KEY})"), (STORE_WRITE_LOCK,))
        try:
            with pytest.raises(StoreLockedError) as info:
                put(s, "episodes", "g")
            assert postgres_url in info.value.one_line()
            assert s.layers() == {}  # reads still work while another process writes
        finally:
            other.rollback()
            other.close()
        assert put(s, "episodes", "g").group_key == "g"


def test_write_lock_held_too_long_raises_store_locked_naming_the_path(tmp_path):
    path = tmp_path / "synix.db"
    with ArtifactStore(path, busy_timeout_ms=100) as s:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreLockedError) as info:
                put(s, "episodes", "g")
            assert str(path) in info.value.one_line()
            assert s.layers() == {}  # reads still work while another process writes
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert put(s, "episodes", "g").group_key == "g"


# --- failure modes --------------------------------------------------------------------------


def test_read_only_database_raises_store_error_naming_the_path(sql_store):
    store = sql_store
    before = put(store, "episodes", "g")
    # The database's own read-only mode.
    store._conn.execute("PRAGMA query_only = ON" if store.dialect.name == "sqlite" else
                        "SET default_transaction_read_only = on")
    with pytest.raises(StoreError, match="read-only") as info:
        put(store, "episodes", "g2")
    assert str(store.path) in info.value.one_line()
    assert store.get(before.artifact_id) == before


def _make_read_only(path):
    """Really read-only, also for root (who ignores file modes): the immutable attribute."""
    import shutil
    import subprocess

    if os.geteuid() != 0:
        os.chmod(path, 0o444)
        os.chmod(path.parent, 0o555)
        return lambda: (os.chmod(path.parent, 0o755), os.chmod(path, 0o644))
    chattr = shutil.which("chattr")
    assert chattr, "chattr (e2fsprogs) is needed to make a file read-only for root"
    for target in (path, path.parent):
        subprocess.run([chattr, "+i", str(target)], check=True)
    return lambda: [subprocess.run([chattr, "-i", str(t)], check=True) for t in (path.parent, path)]


def test_read_only_file_raises_store_error(tmp_path):
    path = tmp_path / "ro" / "synix.db"
    with ArtifactStore(path) as s:
        put(s, "episodes", "g")
    for extra in path.parent.glob("synix.db-*"):  # no WAL/SHM left: the file alone holds the data
        extra.unlink()
    undo = _make_read_only(path)
    try:
        with pytest.raises(StoreError) as info:
            with ArtifactStore(path) as s:
                put(s, "episodes", "g2")
        assert str(path) in info.value.one_line()
    finally:
        undo()
    with ArtifactStore(path) as s:  # nothing was corrupted
        assert [a.group_key for a in s.list_layer("episodes")] == ["g"]


def test_full_disk_raises_store_error_and_keeps_previous_data(sqlite_store):
    store = sqlite_store
    before = put(store, "episodes", "g")
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count = {pages}")  # simulate a full disk
    with pytest.raises(StoreError, match="disk is full"):
        put(store, "episodes", "big", content="x" * 200_000)
    assert store.find(fingerprints.artifact_id("episodes", "big", "k")) is None
    assert store.get(before.artifact_id) == before
    assert store._conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_unopenable_path_raises_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="file"):
        ArtifactStore(blocker / "synix.db")


def test_file_that_is_not_a_database_raises_store_error(tmp_path):
    path = tmp_path / "synix.db"
    path.write_bytes(b"definitely not sqlite" * 100)
    with pytest.raises(StoreError, match="not a valid SQLite database"):
        ArtifactStore(path)


def test_closed_store_raises_store_error(store_location):
    s = ArtifactStore(store_location)
    s.close()
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.layers()


def test_a_closed_store_and_its_branch_views_refuse_every_call_naming_it(store):
    view = store.on_branch("b")
    store.close()
    store.close()
    for call in (store.layers, view.layers, lambda: put(store, "t", "g"), store.data_version):
        with pytest.raises(StoreError, match="closed") as info:
            call()
        assert str(store.path) in info.value.one_line()


# --- runs, checkpoints, meta, failures ------------------------------------------------------


def test_runs_round_trip_with_layer_stats_merged(store):
    run_id = store.start_run("personal-memory", ["transcripts", "episodes"],
                             dagster_run_id="dg-1")
    assert len(run_id) == 32
    run = store.get_run(run_id)
    assert (run.pipeline, run.steps, run.status, run.dagster_run_id) == (
        "personal-memory", ["transcripts", "episodes"], "running", "dg-1")
    store.record_layer_stats(run_id, "episodes", {"built": 3})
    store.record_layer_stats(run_id, "episodes", {"skipped": 2})
    store.finish_run(run_id, "completed", {"cost_usd": 0.5})
    run = store.get_run(run_id)
    assert run.status == "completed" and run.finished_at
    assert run.stats == {"layers": {"episodes": {"built": 3, "skipped": 2}}, "cost_usd": 0.5}
    second = store.start_run("personal-memory", ["core"], run_id="explicit-id")
    assert second == "explicit-id"
    assert [r.run_id for r in store.list_runs()] == ["explicit-id", run_id]
    assert len(store.list_runs(limit=1)) == 1
    assert [r.run_id for r in store.list_runs(limit=-1)] == ["explicit-id", run_id]  # all, on every backend
    assert store.get_run("nope") is None
    with pytest.raises(StoreError, match="nope"):
        store.finish_run("nope", "failed", {})
    with pytest.raises(ValueError):
        store.finish_run(run_id, "exploded", {})


def test_checkpoints_round_trip_ordered_by_position(store):
    store.put_checkpoint("world-model", "v1", 12, "fp12", {"state": "after 12"})
    store.put_checkpoint("world-model", "v1", 6, "fp6", "after 6")
    store.put_checkpoint("world-model", "v1", 6, "fp6b", "after 6, redone")
    store.put_checkpoint("world-model", "v2", 6, "other", None)
    assert store.checkpoints("world-model", "v1") == [
        Checkpoint(6, "fp6b", "after 6, redone"), Checkpoint(12, "fp12", {"state": "after 12"})]
    assert store.clear_checkpoints("world-model") == 3
    assert store.checkpoints("world-model", "v2") == []


def test_meta_round_trips_json_values(store):
    assert store.get_meta("cursor") is None
    assert store.get_meta("cursor", default={}) == {}
    store.set_meta("cursor", {"files": {"a.json": "hash"}, "n": 3})
    store.set_meta("cursor", {"files": {"a.json": "hash2"}, "n": 4})
    assert store.get_meta("cursor") == {"files": {"a.json": "hash2"}, "n": 4}


def test_failures_round_trip_filter_and_clear(store):
    store.record_failure("r1", "episodes", "c1", "LLM timed out")
    store.record_failure("r1", "monthly", "2024-01", ValueError("bad"))
    store.record_failure("r2", "episodes", "c1", "refused")
    assert [(f.layer, f.group_key, f.run_id, f.error) for f in store.failures()] == [
        ("episodes", "c1", "r2", "refused"), ("monthly", "2024-01", "r1", "bad")]
    assert [f.group_key for f in store.failures(layer="monthly")] == ["2024-01"]
    assert [f.layer for f in store.failures(run_id="r2")] == ["episodes"]
    assert store.clear_failure("episodes", "c1") is True
    assert store.clear_failure("episodes", "c1") is False
    assert len(store.failures()) == 1


def test_store_creates_parent_folder_and_uses_wal(tmp_path):
    path = tmp_path / "a" / "b" / "synix.db"
    with ArtifactStore(path, busy_timeout_ms=1234) as s:
        assert path.exists()
        assert s._conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert s._conn.execute("PRAGMA busy_timeout").fetchone() == (1234,)
        assert isinstance(put(s, "t", "g"), Artifact)



def test_outlines_list_current_artifacts_without_content_or_audit_on_main_and_on_a_branch(store):
    put(store, "episodes", "b", key="old")
    new_b = put(store, "episodes", "b", key="new", audit={"provider": "fake", "model": "m"})
    a = put(store, "episodes", "a", metadata={"meta.time.created_at": "2024-01-02T10:00:00"})
    roll = put(store, "monthly", "2024-01", parents=[new_b.artifact_id, a.artifact_id])
    outlines = store.outlines("episodes")
    assert [(o.group_key, o.artifact_id, o.content_hash) for o in outlines] == \
        [("a", a.artifact_id, a.content_hash), ("b", new_b.artifact_id, new_b.content_hash)]
    assert outlines[0].metadata == {"meta.time.created_at": "2024-01-02T10:00:00"}
    assert all(o.content == "" and o.audit is None for o in outlines)
    assert store.outlines("monthly")[0].parent_ids == (new_b.artifact_id, a.artifact_id)
    assert roll.content and store.get(roll.artifact_id).content == roll.content
    store.create_branch("x")
    branch = store.on_branch("x")
    branch.retire("episodes", ["a"])
    assert [o.group_key for o in branch.outlines("episodes")] == ["b"]
    assert [o.group_key for o in store.outlines("episodes")] == ["a", "b"]
    assert store.outlines("nothing") == []
