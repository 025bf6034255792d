"""The memory-ops log replays incrementally (issue 32: the syke build was quadratic, every write
replayed the whole log): an open log applies only the rows appended since it last looked, by
itself or another writer, gives exactly the state a whole replay gives, and replays whole when
rows were removed (forget) or the file was replaced; a sync limited to what the new ops named
writes the same records as a whole sync."""
from __future__ import annotations

import sqlite3

import pytest

from synix_resources.agent_memory import replay as replay_module
from synix_resources.agent_memory.log import MemoryLog
from synix_resources.agent_memory.replay import MemoryState, replay
from synix_resources.errors import MemoryOpRefused


def _create(i: int, day: int = 1) -> dict:
    return {"op": "create", "memory_id": f"mem-{i:04d}", "content": f"fact number {i}",
            "evidence": [], "valid_from": f"2025-01-{day:02d}T00:00:00Z"}


def _summary(state: MemoryState) -> tuple:
    mems = {m.memory_id: (m.state, m.superseded_by, m.supersedes, m.links, m.lifecycle,
                          [(v.n, v.content, v.valid_from, v.valid_until) for v in m.versions])
            for m in state.memories.values()}
    links = {k.link_id: (k.source_id, k.target_id, k.reason) for k in state.links.values()}
    return list(state.memories), mems, links


@pytest.fixture
def count_applies(monkeypatch):
    calls = {"n": 0}
    original = replay_module.MemoryState.apply

    def counting(self, op):
        calls["n"] += 1
        return original(self, op)

    monkeypatch.setattr(replay_module.MemoryState, "apply", counting)
    return calls


def test_n_appends_through_one_open_log_apply_each_op_once_not_the_whole_log_each_time(tmp_path, count_applies):
    log = MemoryLog(tmp_path / "ops.db")
    try:
        for i in range(200):
            log.append(_create(i))
        assert count_applies["n"] == 200  # a whole replay per append made it 200 * 201 / 2
        assert len(log.state().memories) == 200 and count_applies["n"] == 200
    finally:
        log.close()


def test_an_open_log_sees_ops_another_writer_appended_and_matches_a_whole_replay(tmp_path):
    path = tmp_path / "ops.db"
    mine, other = MemoryLog(path), MemoryLog(path)
    try:
        mine.append(_create(1))
        other.append(_create(2))
        other.append({"op": "supersede", "memory_id": "mem-0001", "new_id": "mem-0003",
                      "content": "fact one, changed", "reason": "it changed", "evidence": [],
                      "valid_from": "2025-01-05T00:00:00Z"})
        # the other writer retired mem-0001: this log must know it before it appends
        with pytest.raises(MemoryOpRefused, match="superseded by mem-0003"):
            mine.append({"op": "update", "memory_id": "mem-0001", "content": "x", "evidence": []})
        mine.append({"op": "link", "link_id": "link-1", "source_id": "mem-0002",
                     "target_id": "mem-0003", "reason": "same trip"})
        mine.append({"op": "update", "memory_id": "mem-0002", "content": "fact two, edited",
                     "evidence": [], "valid_from": "2025-01-06T00:00:00Z"})
        assert _summary(mine.state()) == _summary(replay(other.ops())) == _summary(other.state())
        assert len(mine.ops()) == 5  # the refused update was not appended
    finally:
        mine.close()
        other.close()


def test_a_forget_by_another_writer_makes_an_open_log_replay_whole(tmp_path):
    path = tmp_path / "ops.db"
    mine, forgetter = MemoryLog(path), MemoryLog(path)
    try:
        for i in range(3):
            mine.append(_create(i))
        assert forgetter.drop({"mem-0001"}) == 1
        # appended after the drop, at a later seq: only the drop count tells the cache is stale
        forgetter.append(_create(7))
        assert sorted(mine.state().memories) == ["mem-0000", "mem-0002", "mem-0007"]
        mine.append(_create(1))  # the forgotten id is free again in the replayed state
        assert _summary(mine.state()) == _summary(replay(mine.ops()))
    finally:
        mine.close()
        forgetter.close()


def test_a_replaced_log_file_is_replayed_whole(tmp_path):
    path, other_path = tmp_path / "ops.db", tmp_path / "other.db"
    mine = MemoryLog(path)
    other = MemoryLog(other_path)
    try:
        mine.append(_create(1))
        other.append(_create(5))
        other.append(_create(6))
        # the same connection now reads a different history (a branch's log copied again)
        other.copy_to(path)
        assert sorted(mine.state().memories) == ["mem-0005", "mem-0006"]
    finally:
        mine.close()
        other.close()


def test_a_log_from_before_the_drop_count_is_migrated_and_replayed(tmp_path):
    path = tmp_path / "ops.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);
        CREATE TABLE ops (seq INTEGER PRIMARY KEY AUTOINCREMENT, op_id TEXT NOT NULL UNIQUE,
            op TEXT NOT NULL, recorded_at TEXT NOT NULL, body TEXT NOT NULL);
        INSERT INTO ops (op_id, op, recorded_at, body) VALUES ('op-1', 'create',
            '2025-01-01T00:00:00Z', '{"content":"old fact","evidence":[],"memory_id":"mem-old"}');
    """)
    db.execute("INSERT INTO _migrations VALUES ('ops001_log', '2025-01-01T00:00:00Z')")
    db.commit()
    db.close()
    reader = MemoryLog(path, read_only=True)  # no migration when read-only: no cache, still right
    try:
        assert list(reader.state().memories) == ["mem-old"]
    finally:
        reader.close()
    log = MemoryLog(path)
    try:
        log.append(_create(1))
        assert sorted(log.state().memories) == ["mem-0001", "mem-old"]
    finally:
        log.close()


def test_syncing_only_what_new_ops_named_leaves_the_records_a_whole_sync_would_write(tmp_path):
    from synix_assets.app.init import init_project
    from synix_assets.engine.agent_memory import LINK_LAYER, MEMORY_LAYER, MemoryWriter
    from synix_assets.engine.agent_memory.records import sync
    from synix_assets.project import ProjectPaths

    paths = ProjectPaths(init_project(tmp_path / "mem"))
    store = paths.open_store()
    writer = MemoryWriter(paths, tags={"by": "agent:test"}, apply=False, store=store)
    try:
        a = writer.create_memory("Ana lives in Lisbon", valid_from="2025-01-01")["memory_id"]
        b = writer.create_memory("Ana works at a bakery", valid_from="2025-01-02")["memory_id"]
        first = writer.sync_records(store)
        assert first["written"] == 2
        c = writer.supersede_memory(a, "Ana moved to Porto", "she moved", valid_from="2025-03-01")["new_id"]
        writer.create_link(b, c, "the bakery is in Porto")
        writer.update_memory(b, "Ana runs a bakery", valid_from="2025-03-02")
        second = writer.sync_records(store)
        assert second["written"] == 4  # a (retired), b (updated), c (new) and the link; nothing else
        d = writer.create_memory("Ana has a kitten", valid_from="2025-04-01")["memory_id"]
        writer.deactivate_memory(d, "the kitten was a neighbour's", valid_from="2025-04-02")
        assert writer.sync_records(store)["written"] == 1
        with MemoryLog(paths.memory_log) as log:
            whole = sync(store, log.state())
        assert whole["written"] == 0 and whole["retired"] == 0 and whole["unchanged"] == 5
        memories = {x.group_key: x for x in store.list_layer(MEMORY_LAYER)}
        assert memories[a].metadata["superseded_by"] == c and memories[d].metadata["state"] == "deactivated"
        assert [x.content for x in store.list_layer(LINK_LAYER)] == ["the bakery is in Porto"]
    finally:
        writer.close()
        store.close()


def test_a_refused_op_keeps_the_replayed_state_and_appends_nothing(tmp_path, count_applies):
    log = MemoryLog(tmp_path / "ops.db")
    try:
        for i in range(3):
            log.append(_create(i))
        with pytest.raises(MemoryOpRefused, match="exists already"):
            log.append(_create(1))
        log.append(_create(3))
        assert count_applies["n"] == 5  # 4 accepted + 1 refused, nothing replayed again
        assert _summary(log.state()) == _summary(replay(log.ops()))
        assert len(log.ops()) == 4
    finally:
        log.close()
