"""The search projection's key is exact without reading any content, and its sync writes only the
documents that changed, reading their contents a batch at a time, to the same index a full
rebuild gives. Real SQLite store and index files; artifacts are stored directly (no LLM)."""
from __future__ import annotations

import sqlite3

import pytest

from synix_assets.engine import projections
from synix_assets.engine.context import BuildContext
from synix_assets.engine.projections import _search_source, sync_search_index
from synix_assets.project import ProjectPaths
from synix_assets.app.init import init_project
from synix_resources.search.documents import IndexDoc
from synix_resources.search.index import SearchIndex
from synix_resources.store.artifact_store import ArtifactStore

INDEX = "memory-index"


def _transcript(title: str, lines: list[str]) -> str:
    body = "\n\n".join(f"[#{i} 2025-01-10 10:0{i} UTC] {'User' if i % 2 else 'Assistant'}:\n{text}"
                       for i, text in enumerate(lines, 1))
    return f"# {title}\nConversation: {title}\nDate: 2025-01-10 10:00 UTC\nSource: claude\n\n{body}\n"


class Memory:
    """A tiny memory stored by hand: transcripts → episodes → one monthly rollup → core."""

    def __init__(self, root):
        self.paths = ProjectPaths(init_project(root))
        self.store = ArtifactStore(self.paths.store)
        self.ctx = BuildContext(self.paths.load_pipeline(), self.store, None, self.paths)
        self.n = 0

    def put(self, layer, group_key, content, parents=(), level=0, **metadata):
        self.n += 1
        meta = {"meta.time.created_at": "2025-01-10T10:00:00Z", **metadata}
        return self.store.put(layer=layer, group_key=group_key, content=content,
                              materialization_key=f"k{self.n}", level=level, metadata=meta,
                              parents=parents).artifact_id

    def conversation(self, key, title, lines):
        t = self.put("transcripts", key, _transcript(title, lines), **{
            "meta.chat.conversation_id": key, "meta.chat.title": title,
            "meta.chat.message_count": len(lines), "meta.source.type": "claude-export"})
        return self.put("episodes", key, f"Episode of {title}: {' '.join(lines)}", [t], level=1)

    def rollups(self, episodes):
        monthly = self.put("monthly", "2025-01", "The month: " + " ".join(episodes), episodes,
                           level=2, **{"meta.time.period": "2025-01"})
        return self.put("core", "core", "Core memory of the month.", [monthly], level=3)

    def key(self):
        return _search_source(self.ctx, INDEX)[0]

    def sync(self):
        return sync_search_index(self.ctx, INDEX)

    def close(self):
        self.store.close()


@pytest.fixture
def memory(tmp_path):
    mem = Memory(tmp_path / "mem")
    episodes = [mem.conversation(f"c{i}", f"Talk {i}", [f"hello {i}", f"reply about topic{i}"])
                for i in range(3)]
    mem.rollups(episodes)
    yield mem
    mem.close()


def _dump(path) -> dict:
    """Everything a search reads from an index file, without row ids."""
    conn = sqlite3.connect(str(path))
    try:
        docs = {r[0]: r[1:] for r in conn.execute(
            "SELECT artifact_id, collection, layer, level, title, date, source, content, "
            "content_hash, metadata, parent_ids, leaf_ids, ancestry, sources, searchable FROM docs")}
        units = sorted(conn.execute(
            "SELECT d.artifact_id, u.ord, u.first_msg, u.last_msg, u.msg_ids, u.body, u.context, "
            "u.title, u.level, u.layer, u.searchable, u.date, u.source FROM units u "
            "JOIN docs d ON d.id = u.doc_id"))
        fts = conn.execute("SELECT COUNT(*) FROM units_fts").fetchone()[0]
        hidden = conn.execute("SELECT COUNT(*) FROM hidden_fts").fetchone()[0]
        return {"docs": docs, "units": units, "fts": fts, "hidden": hidden}
    finally:
        conn.close()


def _full_rebuild_dump(mem, tmp_path) -> dict:
    """The index a from-scratch sync writes for the same store."""
    fresh = tmp_path / "fresh-search.db"
    fresh.unlink(missing_ok=True)
    source = _search_source(mem.ctx, INDEX)[1]
    index = SearchIndex(fresh, embeddings=False)
    try:
        index.sync(INDEX, source.documents(list(source.expected)))
    finally:
        index.close()
    return _dump(fresh)


def _no_content_reads(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the search key read artifact contents")
    monkeypatch.setattr(ArtifactStore, "list_layer", refuse)
    monkeypatch.setattr(ArtifactStore, "get_many", refuse)


def test_search_key_reads_no_content_and_changes_with_every_input(memory, monkeypatch):
    mem = memory
    seen = {mem.key()}
    with monkeypatch.context() as m:
        _no_content_reads(m)
        assert mem.key() in seen  # same store, same key, computed from outlines alone

    def changed():
        with monkeypatch.context() as m:
            _no_content_reads(m)
            key = mem.key()
        assert key not in seen
        seen.add(key)

    # a transcript's text (a leaf: its messages change), same metadata
    mem.put("transcripts", "c0", _transcript("Talk 0", ["hello 0", "a different reply"]), **{
        "meta.chat.conversation_id": "c0", "meta.chat.title": "Talk 0",
        "meta.chat.message_count": 2, "meta.source.type": "claude-export"})
    changed()
    # a leaf's title only: the sources of every summary above it change, no content does
    current = mem.store.current("transcripts", "c1")
    mem.put("transcripts", "c1", current.content, **{**current.metadata, "meta.chat.title": "Renamed"})
    changed()
    # an episode's metadata only (its date)
    ep = mem.store.current("episodes", "c2")
    mem.put("episodes", "c2", ep.content, ep.parent_ids, level=1, **{"meta.time.created_at": "2025-01-11T09:00:00Z"})
    changed()
    # ancestry: the monthly rollup drops an episode (same text)
    monthly = mem.store.current("monthly", "2025-01")
    mem.put("monthly", "2025-01", monthly.content, monthly.parent_ids[:2], level=2,
            **{"meta.time.period": "2025-01"})
    changed()
    # a layer's artifact retired: its leaf is no longer under anything searchable
    mem.store.retire("episodes", ["c2"])
    changed()
    # the projection's config: embeddings, then the layers it reads
    proj = mem.ctx.pipeline.projections[INDEX]
    monkeypatch.setattr(proj, "embeddings", True)
    changed()
    monkeypatch.setattr(proj, "from_", ("episodes", "core"))
    changed()
    # what a document is derived from: the format of the derivation itself
    monkeypatch.setattr(projections, "DOC_FORMAT", "index-doc-test")
    changed()


def test_incremental_sync_writes_only_changed_documents_and_matches_a_full_rebuild(memory, tmp_path,
                                                                                  monkeypatch):
    mem = memory
    first = mem.sync()
    assert first.changed and first.detail["added"] == 8  # 3 transcripts, 3 episodes, monthly, core
    assert _dump(mem.paths.search) == _full_rebuild_dump(mem, tmp_path)
    assert not mem.sync().changed

    reads: list[list[str]] = []
    real_get_many = ArtifactStore.get_many
    monkeypatch.setattr(ArtifactStore, "get_many",
                        lambda self, ids: reads.append(list(ids)) or real_get_many(self, ids))

    # a new conversation and its episode; the rollups rebuilt over four episodes
    monthly = mem.store.current("monthly", "2025-01")
    new_episode = mem.conversation("c3", "Talk 3", ["hello 3", "a new topic: kayaks"])
    monthly_id = mem.put("monthly", "2025-01", monthly.content + " And kayaks.",
                         (*monthly.parent_ids, new_episode), level=2, **{"meta.time.period": "2025-01"})
    core_id = mem.put("core", "core", "Core memory, now with kayaks.", [monthly_id], level=3)
    result = mem.sync()
    assert result.detail["added"] == 4 and result.detail["removed"] == 2  # old monthly and core
    assert result.detail["unchanged"] == 6
    read = sorted(aid for batch in reads for aid in batch)
    new_transcript = mem.store.current("transcripts", "c3").artifact_id
    assert read == sorted([new_transcript, new_episode, monthly_id, core_id])  # contents of these only
    assert _dump(mem.paths.search) == _full_rebuild_dump(mem, tmp_path)

    # metadata only (a leaf renamed): re-written without any text changing
    reads.clear()
    current = mem.store.current("transcripts", "c1")
    renamed = mem.put("transcripts", "c1", current.content, **{**current.metadata, "meta.chat.title": "Renamed"})
    ep = mem.store.current("episodes", "c1")
    mem.put("episodes", "c1", ep.content, [renamed], level=1)
    assert mem.sync().changed
    assert _dump(mem.paths.search) == _full_rebuild_dump(mem, tmp_path)
    index = SearchIndex(mem.paths.search, embeddings=False)
    try:
        hits = index.search("topic1")
        assert hits and all(s["title"] == "Renamed" for h in hits for s in h.sources
                            if s["conversation_id"] == "c1")
    finally:
        index.close()

    # a conversation gone: its transcript and episode leave the index
    mem.store.retire("transcripts", ["c0"])
    mem.store.retire("episodes", ["c0"])
    result = mem.sync()
    assert result.detail["removed"] == 2
    assert _dump(mem.paths.search) == _full_rebuild_dump(mem, tmp_path)
    assert not mem.sync().changed


def test_an_index_written_by_the_old_key_format_is_rewritten_once(memory, tmp_path):
    """Documents synced without a meta key (older Synix) differ from the new pairs: the first
    sync rewrites each of them, after which nothing changes."""
    mem = memory
    source = _search_source(mem.ctx, INDEX)[1]
    index = SearchIndex(mem.paths.search, embeddings=False)
    try:
        from dataclasses import replace
        index.sync(INDEX, [replace(d, meta_key="") for d in source.documents(list(source.expected))])
    finally:
        index.close()
    result = mem.sync()
    assert result.detail["updated"] == 8 and result.detail["added"] == 0
    assert _dump(mem.paths.search) == _full_rebuild_dump(mem, tmp_path)


def test_sync_reads_contents_a_bounded_batch_at_a_time(memory, monkeypatch):
    mem = memory
    monkeypatch.setattr(projections, "CONTENT_BATCH", 3)
    sizes: list[int] = []
    real_get_many = ArtifactStore.get_many
    monkeypatch.setattr(ArtifactStore, "get_many",
                        lambda self, ids: sizes.append(len(list(ids))) or real_get_many(self, ids))
    assert mem.sync().detail["added"] == 8
    assert sizes == [3, 3, 2]


def test_index_update_consumes_documents_lazily_in_bounded_batches(tmp_path):
    """A batch is written before the next one is read: the documents never all sit in memory."""
    path = tmp_path / "search.db"
    index = SearchIndex(path, embeddings=False)
    watcher = sqlite3.connect(str(path))
    pulled_when_written: list[tuple[int, int]] = []

    def docs():
        for i in range(10):
            written = watcher.execute("SELECT COUNT(*) FROM docs").fetchone()[0]
            pulled_when_written.append((i, written))
            yield IndexDoc(artifact_id=f"d{i}", layer="episodes", level=1,
                           content=f"document number {i} about lakes", content_hash=f"h{i}")

    try:
        stats = index.update("m", docs(), batch=4)
        assert stats.added == 10
        # before pulling doc i, every full batch of 4 before it is already in the index
        assert all(written == (i // 4) * 4 for i, written in pulled_when_written)
        stats = index.update("m", iter([]), remove=["d0", "d9", "not-indexed"])
        assert stats.removed == 2
        assert sorted(index.doc_hashes("m")) == [f"d{i}" for i in range(1, 9)]
    finally:
        watcher.close()
        index.close()
