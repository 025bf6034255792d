"""LLM answers received before a crash are never paid for again: a rerun serves every request
that was already answered from the response cache, even when the answer never reached the store."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from synix_assets.app.run import run_build
from synix_assets.project import ProjectPaths
from synix_assets.app.init import init_project
from synix_resources.llm.cache import cache_key
from synix_resources.llm.fake import FakeClient
from synix_resources.store.artifact_store import ArtifactStore

N = 24  # more conversations than the default concurrency (16): answers arrive in two waves

# `synix run` in a subprocess whose store writes of episodes are slow (a slow or nearly full
# disk): answers reach the response cache well before their artifacts reach the store.
SLOW_STORE_RUN = textwrap.dedent("""
    import sys, time
    from synix_resources.store.artifact_store import ArtifactStore
    put = ArtifactStore.put
    def slow_put(self, **kw):
        if kw.get("layer") == "episodes":
            time.sleep(0.6)
        return put(self, **kw)
    ArtifactStore.put = slow_put
    from synix_assets.cli.main import main
    main(["-p", sys.argv[1], "run"])
""")


def _count(db_path, sql: str) -> int:
    if not db_path.exists():
        return 0
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(sql).fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0
    finally:
        conn.close()


def _answered(paths) -> int:
    return _count(paths.llm_cache, "SELECT COUNT(*) FROM responses WHERE label LIKE 'episodes/%'")


def _stored(paths) -> int:
    return _count(paths.store, "SELECT COUNT(*) FROM artifacts WHERE layer = 'episodes' "
                               "AND superseded_at IS NULL")


def _cached_keys(paths) -> set[str]:
    conn = sqlite3.connect(str(paths.llm_cache))
    try:
        return {r[0] for r in conn.execute("SELECT key FROM responses")}
    finally:
        conn.close()


@pytest.fixture
def count_provider_calls(monkeypatch):
    """Every request that reaches the fake provider: (label, cache key)."""
    seen: list[tuple[str, str]] = []
    real = FakeClient.call_once

    def counting(self, request, model, attempt):
        seen.append((request.label, cache_key(request, self.provider, model)))
        return real(self, request, model, attempt)

    monkeypatch.setattr(FakeClient, "call_once", counting)
    return seen


def _project(tmp_path, claude_export, make_conversations, name="mem") -> ProjectPaths:
    paths = ProjectPaths(init_project(tmp_path / name))
    claude_export(paths.root / "exports" / "talks.json", make_conversations(N))
    return paths


def test_crash_mid_build_does_not_repay_finished_answers(tmp_path, claude_export,
                                                         make_conversations,
                                                         count_provider_calls):
    paths = _project(tmp_path, claude_export, make_conversations)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNIX_FAKE")}
    env.update(SYNIX_LLM_PROVIDER="fake", SYNIX_FAKE_LATENCY_S="1.0")  # waves 1 s apart
    proc = subprocess.Popen([sys.executable, "-c", SLOW_STORE_RUN, str(paths.root)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        # kill -9 once answers are cached that the store does not have yet
        while not (_answered(paths) >= 4 and _answered(paths) - _stored(paths) >= 2):
            assert proc.poll() is None, "the build ended before it could be killed"
            assert time.monotonic() < deadline, "the episodes layer never started"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    answered, stored = _answered(paths), _stored(paths)
    assert answered < N and answered > stored  # some answers were cached but never stored
    cached_before = _cached_keys(paths)

    report = run_build(paths)

    episode_calls = [label for label, _ in count_provider_calls if label.startswith("episodes/")]
    # exactly the requests nobody had answered yet reach the provider, each once
    assert len(episode_calls) == N - answered == len(set(episode_calls))
    assert not [label for label, key in count_provider_calls if key in cached_before]
    assert report.layers["episodes"]["llm_calls"] == N - answered
    assert report.layers["episodes"]["built"] == N - stored
    store = ArtifactStore(paths.store)
    try:
        assert len(store.current_index("episodes")) == N
        served = [a for a in store.list_layer("episodes") if a.run_id == report.run_id
                  and a.audit["attempts"] == 0]
        # the answers served from the cache still say which provider and model wrote them
        assert len(served) == answered - stored
        assert {(a.audit["provider"], a.audit["model"]) for a in served} == {("fake", "fake-v1")}
    finally:
        store.close()


def test_store_without_the_answers_rebuilds_from_the_cache_with_zero_calls(
        tmp_path, claude_export, make_conversations, count_provider_calls):
    """The full-disk case: every answer is in the response cache, none of them in the store."""
    first = _project(tmp_path, claude_export, make_conversations, "first")
    run_build(first)
    paid = len(count_provider_calls)
    assert paid > N
    second = _project(tmp_path, claude_export, make_conversations, "second")
    second.state_dir.mkdir(parents=True, exist_ok=True)
    src, dst = sqlite3.connect(str(first.llm_cache)), sqlite3.connect(str(second.llm_cache))
    try:
        src.backup(dst)  # a consistent copy, WAL included
    finally:
        src.close()
        dst.close()
    report = run_build(second)
    assert len(count_provider_calls) == paid  # not one call more
    assert sum(v.get("llm_calls", 0) for v in report.layers.values()) == 0
    assert report.layers["episodes"]["built"] == N
    with ArtifactStore(first.store) as a, ArtifactStore(second.store) as b:
        assert json.dumps(sorted(x.content for x in a.list_layer("core"))) == \
            json.dumps(sorted(x.content for x in b.list_layer("core")))
