"""ArtifactStore: every artifact Synix builds, its ordered parents, audit, runs and bookkeeping.

Identity: `artifact_id = fingerprints.artifact_id(layer, group_key, materialization_key)`, so
the same inputs + step version always name the same artifact, and identical content in two
groups stays two artifacts. Each (layer, group_key) has at most one *current* artifact; older
versions stay readable as history with `superseded_at` set; putting a superseded version's
key again makes that version current again (same id, refreshed content and parents).

The class is composed of its parts: writes (`artifact_writes`), reads (`artifact_reads`),
branches, provenance and run bookkeeping, over a SQLite (`connection`) or PostgreSQL
(`postgres`) connection. `protocol.ArtifactStoreProtocol` states what callers may use;
`memory.MemoryArtifactStore` is the same contract in memory (`ArtifactStore("memory:")`).

Plain Python, usable outside Dagster; `resource.ArtifactStoreResource` wraps it.
"""
from __future__ import annotations

from synix_resources.names import check_branch
from synix_resources.field_crypto import FieldCipher
from synix_resources.store.artifact_reads import ArtifactReads
from synix_resources.store.artifact_writes import ArtifactWrites
from synix_resources.store.branches import MAIN, BranchesMixin
from synix_resources.store.connection import StoreConnection
from synix_resources.store.dialect import is_postgres_url
from synix_resources.store.memory import MemoryArtifactStore, is_memory_location
from synix_resources.store.postgres import PostgresConnection
from synix_resources.store.partition_names import PartitionNamesMixin
from synix_resources.store.provenance import ProvenanceMixin
from synix_resources.store.records import (
    Artifact, Checkpoint, CurrentRef, Failure, LineageNode, Run,
)
from synix_resources.store.runs import RunsMixin

__all__ = ["Artifact", "ArtifactStore", "Checkpoint", "CurrentRef", "Failure", "LineageNode",
           "MemoryArtifactStore", "PostgresArtifactStore", "Run"]


class ArtifactStore(ArtifactWrites, ArtifactReads, BranchesMixin, ProvenanceMixin, RunsMixin,
                    PartitionNamesMixin, StoreConnection):
    """SQLite-backed store of artifacts, provenance edges, audit, runs and build bookkeeping.

    A store object reads and moves the current pointers of one branch (`branch`, default
    main); `on_branch(name)` gives a view of another branch over the same connection. Artifacts
    themselves are shared: a branch that computes a key some branch already built reuses it.
    """

    def __new__(cls, path=None, *args, **kwargs):
        # A `postgresql://` URL where a file path would go opens the PostgreSQL store: every
        # caller (CLI, resources, engine) picks the backend by the location it was given.
        if cls is ArtifactStore and is_postgres_url(path):
            cls = PostgresArtifactStore
        elif cls is ArtifactStore and is_memory_location(path):
            # Not an ArtifactStore subclass, so Python skips __init__: built complete here.
            return MemoryArtifactStore(path, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, path, *, branch: str = MAIN, field_key: str | None = None, **kwargs):
        """`field_key`: SYNIX_FIELD_KEY's value given explicitly (the Dagster resource's
        `dg.EnvVar`); by default the settings' (docs/encryption.md)."""
        self.branch = check_branch(branch)
        self._fields = FieldCipher.from_settings(field_key)  # a bad key fails before the file opens
        super().__init__(path, **kwargs)


class PostgresArtifactStore(PostgresConnection, ArtifactStore):
    """The same store on PostgreSQL (`ArtifactStore("postgresql://…")` makes one): several
    hosts' workers share it; writes are serialised by an advisory lock (see postgres.py)."""

    def __init__(self, url: str, *, branch: str = MAIN, field_key: str | None = None, **kwargs):
        self.branch = check_branch(branch)
        self._fields = FieldCipher.from_settings(field_key)
        PostgresConnection.__init__(self, url, **kwargs)
