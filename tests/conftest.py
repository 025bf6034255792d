"""Shared fixtures: real projects in tmp_path, real SQLite files, real Dagster instances."""
from __future__ import annotations

import json
from pathlib import Path

import os

import pytest

from tests.support import corpus

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "synix_assets" / "demo"


def pytest_addoption(parser):
    # Here, not in tests/dagster/conftest.py: pytest reads options only from the conftest files
    # it loads at start, and a run of `pytest tests` would not know the option otherwise.
    parser.addoption("--update-asset-snapshots", action="store_true", default=False,
                     help="rewrite tests/dagster/snapshots/*.json from the compiled Dagster "
                          "definitions instead of comparing with them (review the diff)")
    parser.addoption("--update-public-surface", action="store_true", default=False,
                     help="rewrite tests/python_api/public_surface.txt from the `synix` package "
                          "instead of comparing with it (review the diff)")
    parser.addoption("--require-corpus", action="store_true", default=False,
                     help="fail, never skip, a test marked `corpus` (the real-data corpus "
                          "../shared); also on when CI=true")


_CORPUS_REQUIRED = pytest.StashKey[bool]()


def pytest_configure(config):
    config.stash[_CORPUS_REQUIRED] = corpus.required(dict(os.environ), config.getoption("--require-corpus"))


def pytest_collection_modifyitems(config, items):
    """A test asking for `shared_data` is a corpus test; without the corpus each is skipped with
    one line (first, so it is the reason shown even where a parameter list read from the corpus
    came out empty)."""
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("corpus"):
            item.add_marker(pytest.mark.corpus)
        if item.get_closest_marker("corpus") and not corpus.present():
            item.add_marker(pytest.mark.skip(reason=corpus.SKIP_REASON), append=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Where the corpus is required, a corpus test that did not run is a failure, whatever
    skipped it: CI must not pass on a run that left the real data out."""
    report = (yield).get_result()
    if (report.skipped and not hasattr(report, "wasxfail") and item.get_closest_marker("corpus")
            and item.config.stash[_CORPUS_REQUIRED]):
        why = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        why = why.removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = (f"a corpus test was skipped where the corpus is required "
                           f"(CI=true or --require-corpus): {why}")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path_factory):
    """No test may see a real key, the developer's DAGSTER_HOME or a project named by env."""
    for var in ("ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY", "OPENAI_API_KEY", "SYNIX_PROJECT",
                "SYNIX_STORE_PATH", "SYNIX_LLM_MODEL", "SYNIX_LLM_BASE_URL",
                "SYNIX_FAKE_LATENCY_S", "SYNIX_FAKE_FAILURE_RATE", "SYNIX_LLM_CONTEXT_TOKENS",
                "SYNIX_LLM_SHARED_LIMIT_URL", "SYNIX_LLM_MAX_REQUESTS_PER_S", "SYNIX_WORKER_ID",
                "SYNIX_LLM_CONCURRENCY", "SYNIX_SOURCE_DIR", "SYNIX_BACKGROUND_INDEX_MIN",
                "SYNIX_BACKGROUND_FEED_MIN_BYTES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SYNIX_LLM_PROVIDER", "fake")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path_factory.mktemp("dagster_home_unused")))


@pytest.fixture(autouse=True)
def _synix_loggers_as_the_library_leaves_them():
    """The CLI run in-process takes over the `synix` loggers (its own handler, no propagation,
    quieter parsers), also from a module-scoped fixture that runs before this one: every test
    starts and ends with them as the library leaves them (no handler, propagating, no level),
    so caplog sees their lines whatever ran before."""
    import logging

    def reset():
        for name in ("synix", "synix.ingest", "synix.parsers"):
            log = logging.getLogger(name)
            log.handlers[:] = []
            log.propagate = True
            log.setLevel(logging.NOTSET)

    reset()
    yield
    reset()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data; asking for it marks the test `corpus` (skipped on a clone alone, a failure
    under CI), so a new test reading the real data gets that by using this fixture."""
    return corpus.DATA


def _make_claude_export(path: Path, conversations: list[dict]) -> Path:
    """Write a minimal Claude export: [{uuid, name, created_at, messages: [(sender, text, ts)]}]."""
    out = []
    for conv in conversations:
        msgs = []
        for i, (sender, text, ts) in enumerate(conv["messages"]):
            msgs.append({"uuid": f"{conv['uuid']}-m{i}", "text": text, "sender": sender,
                         "created_at": ts, "updated_at": ts, "attachments": [], "files": [],
                         "content": [{"type": "text", "text": text}]})
        out.append({"uuid": conv["uuid"], "name": conv["name"], "created_at": conv["created_at"],
                    "updated_at": conv["messages"][-1][2] if conv["messages"] else conv["created_at"],
                    "chat_messages": msgs})
    path.write_text(json.dumps(out), encoding="utf-8")
    return path


def _conversation(uuid: str, name: str, day: str, topic_words: str, n: int = 4) -> dict:
    """A small distinctive conversation on `day` (YYYY-MM-DD)."""
    msgs = []
    for i in range(n):
        sender = "human" if i % 2 == 0 else "assistant"
        text = (f"Message {i} about {topic_words}. The {name} discussion covers {topic_words} in detail, "
                f"with decision number {i} recorded for {uuid}.")
        msgs.append((sender, text, f"{day}T10:{i:02d}:00Z"))
    return {"uuid": uuid, "name": name, "created_at": f"{day}T10:00:00Z", "messages": msgs}


@pytest.fixture
def demo_project(tmp_path):
    """A fresh project made by `synix init` with the bundled demo exports."""
    from synix_assets.project import ProjectPaths
    from synix_assets.app.init import demo_exports, init_project

    return ProjectPaths(init_project(tmp_path / "mem", exports=demo_exports()))


@pytest.fixture
def claude_export():
    """make(path, [conversation(...), ...]) writes a minimal Claude export."""
    return _make_claude_export


@pytest.fixture
def conversation():
    return _conversation


@pytest.fixture
def counts():
    """(built, cached) per layer of a BuildReport."""
    return lambda report: {k: (v.get("built", 0), v.get("cached", 0)) for k, v in report.layers.items()}


@pytest.fixture(scope="session")
def postgres_server():
    """A real throwaway PostgreSQL for the whole session (tests/support/postgres.py); fails, never
    skips, when the server binaries or psycopg are missing."""
    from tests.support.postgres import PostgresUnavailable, start_postgres

    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.fail("psycopg is not installed: pip install -e '.[postgres]'")
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pgbouncer(postgres_server):
    """A real PgBouncer in transaction mode in front of the session's PostgreSQL
    (tests/support/pgbouncer.py), as docs/postgres.md sets one up for Dagster's storage."""
    from tests.support.pgbouncer import PgBouncerUnavailable, start_pgbouncer

    try:
        bouncer = start_pgbouncer(postgres_server)
    except PgBouncerUnavailable as exc:
        pytest.fail(str(exc))
    try:
        yield bouncer
    finally:
        bouncer.stop()


@pytest.fixture
def postgres_url(postgres_server):
    """A fresh empty schema on the session's PostgreSQL (the URL sets its search_path), dropped
    after the test. A test that needs a whole database (Dagster's storage) uses
    `postgres_server.create_database()`."""
    url = postgres_server.create_schema()
    yield url
    postgres_server.drop_schema(url)


@pytest.fixture(scope="session")
def redis_server():
    """A real throwaway Redis (tests/support/redis_server.py): the Celery broker and the shared
    LLM rate limit; fails, never skips, when redis-server is missing."""
    from tests.support.redis_server import RedisUnavailable, start_redis

    try:
        server = start_redis()
    except RedisUnavailable as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()
