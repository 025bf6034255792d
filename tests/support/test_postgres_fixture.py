"""The test PostgreSQL fixture itself: a real server, separate databases per test, stopped by PID."""
from __future__ import annotations

import os

import psycopg
import pytest


def test_postgres_url_is_a_fresh_writable_schema(postgres_url):
    with psycopg.connect(postgres_url) as conn:
        conn.execute("CREATE TABLE t (x int)")
        conn.execute("INSERT INTO t VALUES (1)")
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 1
        schema = conn.execute("SELECT current_schema()").fetchone()[0]
    assert postgres_url.endswith(schema)


def test_each_test_gets_its_own_schema(postgres_url):
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute("SELECT count(*) FROM information_schema.tables "
                              "WHERE table_schema = current_schema()").fetchone()[0]
    assert tables == 0


def test_create_database_gives_a_separate_empty_database(postgres_server):
    url = postgres_server.create_database()
    try:
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT current_database()").fetchone()[0] == url.rsplit("/", 1)[1]
    finally:
        postgres_server.drop_database(url)


def test_server_listens_on_loopback_and_socket_lives_in_its_tmp_dir(postgres_server):
    with psycopg.connect(postgres_server.url()) as conn:
        listen = conn.execute("SHOW listen_addresses").fetchone()[0]
        sockdir = conn.execute("SHOW unix_socket_directories").fetchone()[0]
    assert listen == "127.0.0.1"
    assert sockdir == str(postgres_server.socket_dir)
    assert postgres_server.process.poll() is None


def test_stop_ends_the_server_process_and_removes_its_files():
    from tests.support.postgres import start_postgres

    server = start_postgres()
    pid = server.process.pid
    server.stop()
    assert server.process.poll() is not None
    assert not server.base.exists()
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive


def test_missing_binaries_name_the_package_to_install(monkeypatch, tmp_path):
    from tests.support import postgres

    monkeypatch.setenv("SYNIX_PG_BIN", str(tmp_path))
    monkeypatch.setattr(postgres.shutil, "which", lambda name: None)
    monkeypatch.setattr(postgres.glob, "glob", lambda pattern: [])
    with pytest.raises(postgres.PostgresUnavailable, match="apt-get install -y postgresql"):
        postgres.find_bin_dir()
