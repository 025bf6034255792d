"""Every store backend class satisfies `ArtifactStoreProtocol`: each method of the protocol, with
the same parameters, defaults and annotations (compared with `inspect.signature`; mypy is not a
dependency), and a store opened on each backend is an instance of it."""
from __future__ import annotations

import inspect

import pytest

from synix_resources.store.artifact_store import (
    ArtifactStore, MemoryArtifactStore, PostgresArtifactStore,
)
from synix_resources.store.protocol import PARTS, ArtifactStoreProtocol

BACKEND_CLASSES = [ArtifactStore, PostgresArtifactStore, MemoryArtifactStore]
CONTEXT_METHODS = {"__enter__", "__exit__"}
# SQL details, deliberately outside the protocol (see protocol.py).
SQL_ONLY = {"db"}


def protocol_methods() -> dict[str, inspect.Signature]:
    out = {}
    for part in PARTS:
        for name, value in vars(part).items():
            if inspect.isfunction(value) and (not name.startswith("_") or name in CONTEXT_METHODS):
                out[name] = inspect.signature(value)
    return out


def test_the_protocol_names_every_method_of_its_parts():
    names = set(protocol_methods())
    assert {"put", "get", "on_branch", "promote", "lineage", "start_run", "snapshot",
            "close"} <= names
    assert len(names) == 60  # 56 + the readable partition names (issue 31)


@pytest.mark.parametrize("cls", BACKEND_CLASSES, ids=lambda c: c.__name__)
def test_every_backend_class_has_every_protocol_method_with_the_same_signature(cls):
    missing, different = [], []
    for name, expected in protocol_methods().items():
        method = getattr(cls, name, None)
        if not callable(method):
            missing.append(name)
        elif inspect.signature(method) != expected:
            different.append(f"{name}{inspect.signature(method)} != {name}{expected}")
    assert missing == [] and different == []


def test_every_public_method_of_the_sql_store_is_in_the_protocol():
    public = {name for name, value in inspect.getmembers(ArtifactStore)
              if not name.startswith("_") and inspect.isfunction(value)}
    assert public - set(protocol_methods()) == set()
    assert SQL_ONLY.isdisjoint(protocol_methods())


def test_a_store_on_every_backend_and_its_branch_views_are_protocol_instances(store):
    assert isinstance(store, ArtifactStoreProtocol)
    view = store.on_branch("other")
    assert isinstance(view, ArtifactStoreProtocol) and view.branch == "other"
    assert store.branch == "main" and str(store.path)
