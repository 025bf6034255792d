"""Helpers for the agent-memory tests: a built project (fake model) and the transcripts to cite."""
from __future__ import annotations

import os
from contextlib import contextmanager


@contextmanager
def fake_model_env(base):
    saved = {k: os.environ.get(k) for k in ("SYNIX_LLM_PROVIDER", "DAGSTER_HOME", "ANTHROPIC_API_KEY")}
    os.environ.update(SYNIX_LLM_PROVIDER="fake", DAGSTER_HOME=str(base / "dagster_home_unused"))
    os.environ.pop("ANTHROPIC_API_KEY", None)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def built_project(base, exports=None):
    from synix_assets.app.init import demo_exports, init_project
    from synix_assets.app.run import run_build
    from synix_assets.project import ProjectPaths

    with fake_model_env(base):
        paths = ProjectPaths(init_project(base / "mem", exports=exports or demo_exports()[:1]))
        run_build(paths)
    return paths


def transcripts(paths) -> list:
    """The current transcripts, each with its conversation id, in a stable order."""
    store = paths.open_store(read_only=True)
    try:
        return sorted(store.list_layer("transcripts"), key=lambda a: a.group_key)
    finally:
        store.close()


def agent_records(paths) -> dict:
    """(layer, group) → (artifact id, content, metadata) of the current agent records."""
    store = paths.open_store(read_only=True)
    try:
        return {(a.layer, a.group_key): (a.artifact_id, a.content, a.metadata, a.parent_ids)
                for layer in ("agent_memories", "agent_links") for a in store.list_layer(layer)}
    finally:
        store.close()
