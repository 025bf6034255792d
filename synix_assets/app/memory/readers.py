"""Pooled read-only readers of one branch: a store connection and a search index connection
each, used by one request at a time inside one read transaction on both files, so a build
committing meanwhile never shows half its results."""
from __future__ import annotations

import queue
import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from synix_assets.project import ProjectPaths

READER_CACHE = 64  # cached results per pooled reader


@dataclass
class Reader:
    """One store connection and one search index connection, used by one request at a time,
    with a cache of what it computed from the store, valid while the store is unchanged."""

    store: Any
    index: Any | None
    version: int | None = None
    cache: OrderedDict = field(default_factory=OrderedDict)

    def cached(self, key: tuple, compute):
        """`compute()` once per store version (SQLite's data_version changes when another
        connection commits): layer counts and orderings of 10k records are not recomputed
        for every page."""
        if key in self.cache:
            self.cache.move_to_end(key)
            return self.cache[key]
        value = self.cache[key] = compute()
        while len(self.cache) > READER_CACHE:
            self.cache.popitem(last=False)
        return value

    def page(self, layers: list[str], *, offset: int = 0, limit: int = 50, **order) -> tuple[int, list]:
        """(total, one page of artifacts) of `layers`, ordered by date (see `ordered_ids`)."""
        meta = order.pop("meta", None) or {}
        key = ("ids", tuple(layers), tuple(sorted(meta.items())), tuple(sorted(order.items())))
        ids = self.cached(key, lambda: self.store.ordered_ids(layers, meta=meta, **order))
        return len(ids), self.store.get_many(ids[offset:offset + limit])

    def layers(self) -> dict:
        return self.cached(("layers",), self.store.layers)


class ReaderPool:
    """At most `size` readers of `paths`' branch in use at once; idle ones are reused."""

    def __init__(self, paths: ProjectPaths, size: int = 4):
        self.paths = paths
        self._pool: queue.LifoQueue[Reader] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(size)
        self._all: list[Reader] = []
        self._lock = threading.Lock()

    def _open_reader(self) -> Reader:
        from synix_resources.search.index import SearchIndex
        from synix_resources.store.artifact_store import ArtifactStore

        store = ArtifactStore(self.paths.store, read_only=True, branch=self.paths.branch)
        index = None
        if self.paths.search.exists():
            index = SearchIndex(self.paths.search, embeddings="auto")
            index.db.execute("PRAGMA query_only = ON")
        reader = Reader(store, index)
        with self._lock:
            self._all.append(reader)
        return reader

    @contextmanager
    def reader(self) -> Iterator[Reader]:
        """A pooled reader inside one read transaction on the store and on the index."""
        self._slots.acquire()
        try:
            try:
                reader = self._pool.get_nowait()
            except queue.Empty:
                reader = self._open_reader()
            try:
                with reader.store.snapshot():
                    version = reader.store.data_version()
                    if version != reader.version:
                        reader.cache.clear()
                        reader.version = version
                    if reader.index is not None:
                        reader.index.db.conn.execute("BEGIN")
                    try:
                        yield reader
                    finally:
                        if reader.index is not None and reader.index.db.conn.in_transaction:
                            reader.index.db.conn.execute("COMMIT")
            finally:
                self._pool.put(reader)
        finally:
            self._slots.release()

    def texts(self, ids: list[str]) -> dict[str, str]:
        """Artifact id → content, for any ids in the shared store (whichever branch uses them)."""
        with self.reader() as r:
            return {a.artifact_id: a.content for a in r.store.get_many(list(dict.fromkeys(ids)))}

    def close(self) -> None:
        with self._lock:
            for reader in self._all:
                reader.store.close()
                if reader.index is not None:
                    reader.index.close()
            self._all.clear()
