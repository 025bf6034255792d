"""Dagster resource wrapping `ArtifactStore`.

Each run (and each step process under the multiprocess executor) opens its own connection
(SQLite file or PostgreSQL URL) in `setup_for_execution` and closes it in
`teardown_after_execution`; SQLite's file lock, or PostgreSQL's advisory lock, coordinates the
processes. Outside a run (tests, sensors, the CLI) the store opens
lazily on first use.
"""
from __future__ import annotations

import functools
from typing import Callable

import dagster as dg
from pydantic import Field, PrivateAttr

from synix_resources.store.artifact_store import ArtifactStore

DEFAULT_STORE_PATH = ".synix/synix.db"


def _delegate(name: str) -> Callable:
    """A resource method that forwards to the same-named `ArtifactStore` method."""
    method = getattr(ArtifactStore, name)

    @functools.wraps(method)
    def forward(self: "ArtifactStoreResource", *args, **kwargs):
        return getattr(self.get_store(), name)(*args, **kwargs)

    return forward


class ArtifactStoreResource(dg.ConfigurableResource):
    """The Synix artifact store (one SQLite file, or a PostgreSQL database) as a Dagster resource."""

    path: str = Field(
        default=DEFAULT_STORE_PATH,
        description="SQLite file of the artifact store, or a postgresql:// URL for the "
                    "PostgreSQL store, e.g. dg.EnvVar('SYNIX_STORE_PATH'); relative paths are "
                    "resolved against the working directory.",
    )
    branch: str = Field(
        default="main",
        description="The branch whose current artifacts this resource reads and moves.",
    )
    busy_timeout_ms: int = Field(
        default=30000,
        description="How long a write waits for another process's lock before failing.",
    )

    field_key: str = Field(
        default="",
        description="Key of field-level encryption, e.g. dg.EnvVar('SYNIX_FIELD_KEY') (never the "
                    "key itself: Dagster shows resource config); empty: the process's settings.",
    )

    _store: ArtifactStore | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """Open (and migrate) the store once for this run/process."""
        self._store = ArtifactStore(self.path, branch=self.branch, field_key=self.field_key or None,
                                    busy_timeout_ms=self.busy_timeout_ms)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        """Close the connection opened for this run/process."""
        self.close()

    def get_store(self) -> ArtifactStore:
        """The open `ArtifactStore` of this resource instance, opening it on first use."""
        if self._store is None:
            self._store = ArtifactStore(self.path, branch=self.branch, field_key=self.field_key or None,
                                        busy_timeout_ms=self.busy_timeout_ms)
        return self._store

    @property
    def store(self) -> ArtifactStore:
        """Same as `get_store()`."""
        return self.get_store()

    def close(self) -> None:
        """Close the cached store, if open; the next call opens a fresh one."""
        if self._store is not None:
            self._store.close()
            self._store = None

    # Delegates for the methods build steps use; anything else: `resource.store.<method>`.
    put = _delegate("put")
    put_many = _delegate("put_many")
    get = _delegate("get")
    find = _delegate("find")
    get_many = _delegate("get_many")
    current = _delegate("current")
    current_index = _delegate("current_index")
    list_layer = _delegate("list_layer")
    history = _delegate("history")
    layers = _delegate("layers")
    retire = _delegate("retire")
    parents = _delegate("parents")
    lineage = _delegate("lineage")
    leaves = _delegate("leaves")
    descendants = _delegate("descendants")
    audit = _delegate("audit")
    start_run = _delegate("start_run")
    finish_run = _delegate("finish_run")
    record_layer_stats = _delegate("record_layer_stats")
    get_run = _delegate("get_run")
    list_runs = _delegate("list_runs")
    put_checkpoint = _delegate("put_checkpoint")
    checkpoints = _delegate("checkpoints")
    clear_checkpoints = _delegate("clear_checkpoints")
    get_meta = _delegate("get_meta")
    set_meta = _delegate("set_meta")
    record_failure = _delegate("record_failure")
    failures = _delegate("failures")
    clear_failure = _delegate("clear_failure")
