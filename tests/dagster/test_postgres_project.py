"""A whole project on PostgreSQL — Synix's store, LLM cache and build lock, and Dagster's own run
and event storage (dagster-postgres, the dagster.yaml `synix init --dagster-storage` writes) — on
a real server from tests/support/postgres.py: it builds the same artifacts as the SQLite default
and a second `synix run` is a no-op."""
from __future__ import annotations

import json
import os

import dagster as dg
import psycopg
import yaml
from click.testing import CliRunner

from synix_assets.app.run import run_build
from synix_assets.cli.main import main
from synix_assets.project import ProjectPaths
from synix_assets.app.init import demo_exports, init_project
from synix_resources.store.artifact_store import ArtifactStore, PostgresArtifactStore

LAYERS = ("transcripts", "episodes", "monthly", "core")


def _synix(*args: str):
    result = CliRunner().invoke(main, list(args), catch_exceptions=True)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _hashes(location) -> dict:
    """(layer, group) → (artifact id, content hash) of every current artifact."""
    with ArtifactStore(location) as store:
        return {(layer, a.group_key): (a.artifact_id, a.content_hash)
                for layer in LAYERS for a in store.list_layer(layer)}


def test_init_writes_the_postgres_dagster_yaml_and_store_setting(tmp_path, postgres_server):
    url = postgres_server.url("dagster")
    out = _synix("init", str(tmp_path / "mem"), "--store", f"{url}?application_name=synix",
                 "--dagster-storage", url, "--json")
    paths = ProjectPaths(tmp_path / "mem")
    assert out["dagster_storage"] == "postgresql" and paths.on_postgres
    config = yaml.safe_load((paths.dagster_home / "dagster.yaml").read_text())
    assert config["storage"]["postgres"]["postgres_db"] == {
        "scheme": "postgresql+psycopg2", "username": "synix", "hostname": "127.0.0.1",
        "port": postgres_server.port, "db_name": "dagster"}
    assert paths.store == f"{url}?application_name=synix"
    assert paths.llm_cache == paths.lock == paths.store
    assert oct((paths.state_dir / "config.toml").stat().st_mode & 0o777) == "0o600"


def test_project_on_postgres_builds_what_sqlite_builds_and_rebuilds_nothing(
        tmp_path, postgres_server, postgres_url):
    reference = ProjectPaths(init_project(tmp_path / "sqlite", exports=demo_exports()))
    run_build(reference)

    dagster_db = postgres_server.create_database("dagster")
    try:
        out = _synix("init", str(tmp_path / "pg"), "--demo", "--store", postgres_url,
                     "--dagster-storage", dagster_db, "--json")
        paths = ProjectPaths(tmp_path / "pg")
        first = _synix("run", "-p", out["project"], "--json")
        assert first["llm_calls"] == 24 + 6 + 6
        assert _hashes(postgres_url) == _hashes(reference.store)
        assert not (paths.state_dir / "synix.db").exists()
        assert not (paths.state_dir / "llm_cache.db").exists()
        assert not (paths.state_dir / "build.lock").exists()

        again = _synix("run", "-p", out["project"], "--json")
        assert again["llm_calls"] == 0
        assert all(layer.get("built", 0) == 0 for layer in again["layers"].values()), again

        # Dagster really kept its runs and events in PostgreSQL.
        os.environ["DAGSTER_HOME"] = str(paths.dagster_home)  # the autouse fixture restores it
        with dg.DagsterInstance.get() as instance:
            assert type(instance.run_storage).__name__ == "PostgresRunStorage"
            assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
            assert instance.get_runs_count() >= 4
        with psycopg.connect(dagster_db) as conn:
            assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] >= 4
        with ArtifactStore(postgres_url) as store:
            assert isinstance(store, PostgresArtifactStore)
            assert store.list_runs()[0].status == "completed"
    finally:
        postgres_server.drop_database(dagster_db)


def test_init_refuses_a_url_that_is_not_postgresql_before_creating_anything(tmp_path):
    for option in ("--store", "--dagster-storage"):
        result = CliRunner().invoke(main, ["init", str(tmp_path / "mem"), option, "mysql://x/db"])
        assert result.exit_code == 1 and "Traceback" not in result.output
        assert f"{option} 'mysql://x/db' is not a PostgreSQL URL" in result.stderr
        assert not (tmp_path / "mem").exists()


def test_dagster_storage_behind_pgbouncer_in_transaction_mode_records_every_partition_and_rebuilds_nothing(
        tmp_path, postgres_server, pgbouncer):
    """docs/postgres.md's faster setup: Dagster's storage through PgBouncer (transaction pooling),
    Synix's store on its SQLite default."""
    dagster_db = postgres_server.create_database("dagster")
    try:
        through = pgbouncer.url(dagster_db.rsplit("/", 1)[1])
        out = _synix("init", str(tmp_path / "pg"), "--demo", "--dagster-storage", through, "--json")
        paths = ProjectPaths(tmp_path / "pg")
        first = _synix("run", "-p", out["project"], "--json")
        assert first["llm_calls"] == 24 + 6 + 6
        again = _synix("run", "-p", out["project"], "--json")
        assert again["llm_calls"] == 0
        assert all(layer.get("built", 0) == 0 for layer in again["layers"].values()), again

        os.environ["DAGSTER_HOME"] = str(paths.dagster_home)  # the autouse fixture restores it
        with dg.DagsterInstance.get() as instance, ArtifactStore(paths.store) as store:
            assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
            names = store.partition_names()  # a conversation's partition is its readable key
            for layer in ("transcripts", "episodes", "monthly"):
                assert set(instance.get_materialized_partitions(dg.AssetKey(layer))) == \
                    {names.get(k, k) for k in store.current_index(layer)}, layer
        with psycopg.connect(dagster_db) as conn:  # straight to the server: it really holds them
            assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] >= 4
    finally:
        postgres_server.drop_database(dagster_db)
