"""MemoryArtifactStore: the artifact store's contract (`protocol.ArtifactStoreProtocol`) in dicts
under one lock, for fast tests. Open one with `MemoryArtifactStore()` or `ArtifactStore("memory:")`:
every open is a new, empty, private store that lives as long as the object.

Same semantics as the SQLite store: ids from (layer, group_key, materialization key), superseded
versions kept and revived, branch views over shared artifacts, promote with `main@previous`,
runs, checkpoints, meta, failures, audit and lineage, and all-or-nothing writes. The SQL-only
parts stay out: there is no `db`, no `dialect` and nothing to purge.
"""
from __future__ import annotations

import copy
from contextlib import contextmanager
from typing import Iterator, Self

from synix_resources.errors import StoreError
from synix_resources.names import MAIN, check_branch
from synix_resources.store.memory_book import MemoryRunBook
from synix_resources.store.memory_branches import MemoryBranches
from synix_resources.store.memory_reads import MemoryReads
from synix_resources.store.memory_state import Shared, State, Transaction
from synix_resources.store.memory_writes import MemoryWrites
from synix_resources.store.partition_names import MemoryPartitionNames

MEMORY_LOCATION = "memory:"


def is_memory_location(target: object) -> bool:
    """True when a store location names the in-memory store (`memory:`, optionally `memory:NAME`)."""
    return isinstance(target, str) and target.startswith(MEMORY_LOCATION)


class MemoryArtifactStore(MemoryWrites, MemoryReads, MemoryBranches, MemoryRunBook,
                          MemoryPartitionNames):
    """An artifact store held in this process's memory (see the module docstring)."""

    def __init__(self, path: str = MEMORY_LOCATION, *, branch: str = MAIN,
                 busy_timeout_ms: int = 30000, read_only: bool = False):
        """A new empty store; `read_only=True` is refused as the SQL stores refuse it for a
        location where no store exists yet."""
        if not is_memory_location(path):
            raise StoreError(f"{path!r} is not an in-memory store location",
                             hint=f"use {MEMORY_LOCATION!r}")
        self.branch = check_branch(branch)
        self.path = path
        self.busy_timeout_ms = int(busy_timeout_ms)
        if read_only:
            raise StoreError(f"There is no artifact store at {self.path}",
                             hint="run `synix run` first to build the memory")
        self._shared = Shared()

    # --- lifecycle ----------------------------------------------------------------------

    def _open_state(self) -> State:
        state = self._shared.state
        if state is None:
            raise StoreError(f"The artifact store {self.path} is closed",
                             hint="open a new ArtifactStore")
        return state

    @contextmanager
    def _read(self, action: str) -> Iterator[State]:
        with self._shared.lock:
            yield self._open_state()

    @contextmanager
    def _write(self, action: str) -> Iterator[Transaction]:
        """One all-or-nothing write: any error undoes every change made inside."""
        with self._shared.lock:
            tx = Transaction(self._open_state())
            try:
                yield tx
            except BaseException:
                tx.rollback()
                raise
            tx.s.version += 1

    @contextmanager
    def snapshot(self) -> Iterator[Self]:
        """Every read inside sees the same state: writers from other threads wait."""
        with self._shared.lock:
            self._open_state()
            yield self

    def data_version(self) -> int:
        """A number that changes with every committed write: readers key their caches by it."""
        with self._read("reading the data version") as s:
            return s.version

    def close(self) -> None:
        """Drop the data; later calls raise `StoreError`, closing twice is harmless."""
        with self._shared.lock:
            self._shared.state = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"

    def on_branch(self, name: str) -> Self:
        """A view of this store that reads and moves `name`'s pointers (same data: close the
        store you opened, not the view)."""
        check_branch(name)
        view = copy.copy(self)
        view.branch = name
        return view
