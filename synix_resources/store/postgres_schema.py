"""The PostgreSQL store's schema: named migrations, append-only like migrations.py (the SQLite
store's). Run by `postgres.PostgresConnection` through `migrations.apply_pending`."""
from __future__ import annotations

from typing import TYPE_CHECKING

from synix_resources.store.migrations import MigrationRegistry

if TYPE_CHECKING:
    from synix_resources.store.postgres import PgConnection


def run_ddl(conn: PgConnection, script: str) -> None:
    """Each `;`-separated statement of a schema script (no `;` inside a statement)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.raw.execute(statement)


PG_MIGRATIONS = MigrationRegistry()
T = 'TEXT COLLATE "C"'  # byte order, as SQLite compares: same listing order, same prefix ranges


@PG_MIGRATIONS
def p001_store_schema(conn: PgConnection) -> None:
    """The SQLite store's schema as of its m009 migration, in one step."""
    run_ddl(conn, f"""
    CREATE TABLE artifacts (
        artifact_id {T} PRIMARY KEY,
        layer {T} NOT NULL,
        group_key {T} NOT NULL,
        level BIGINT NOT NULL DEFAULT 0,
        content TEXT NOT NULL,
        content_hash {T} NOT NULL,
        materialization_key {T} NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{{}}',
        run_id {T},
        created_at {T} NOT NULL,
        superseded_at {T},
        seq BIGINT GENERATED ALWAYS AS IDENTITY
    );
    CREATE UNIQUE INDEX idx_artifacts_current ON artifacts (layer, group_key)
        WHERE superseded_at IS NULL;
    CREATE INDEX idx_artifacts_history ON artifacts (layer, group_key, created_at);
    CREATE INDEX idx_artifacts_run ON artifacts (run_id);
    CREATE TABLE edges (
        child_id {T} NOT NULL REFERENCES artifacts (artifact_id),
        parent_id {T} NOT NULL REFERENCES artifacts (artifact_id),
        position BIGINT NOT NULL,
        PRIMARY KEY (child_id, position)
    );
    CREATE INDEX idx_edges_parent ON edges (parent_id, child_id);
    CREATE TABLE audit (
        artifact_id {T} PRIMARY KEY REFERENCES artifacts (artifact_id),
        prompt_template_hash {T}, rendered_prompt_hash {T}, provider {T}, model {T},
        temperature DOUBLE PRECISION, max_tokens BIGINT, raw_response TEXT,
        input_tokens BIGINT, output_tokens BIGINT, cache_read_tokens BIGINT,
        cache_write_tokens BIGINT, cost_usd DOUBLE PRECISION, latency_s DOUBLE PRECISION,
        attempts BIGINT, flags TEXT, extra TEXT
    );
    CREATE TABLE runs (
        run_id {T} PRIMARY KEY,
        pipeline {T} NOT NULL,
        steps TEXT NOT NULL,
        status {T} NOT NULL,
        dagster_run_id {T},
        started_at {T} NOT NULL,
        finished_at {T},
        stats TEXT NOT NULL,
        branch {T} NOT NULL DEFAULT 'main',
        seq BIGINT GENERATED ALWAYS AS IDENTITY
    );
    CREATE INDEX idx_runs_started ON runs (started_at);
    CREATE INDEX idx_runs_branch ON runs (branch, started_at);
    CREATE TABLE checkpoints (
        step {T} NOT NULL,
        version {T} NOT NULL,
        position BIGINT NOT NULL,
        prefix_fingerprint {T} NOT NULL,
        state TEXT NOT NULL,
        created_at {T} NOT NULL,
        PRIMARY KEY (step, version, position)
    );
    CREATE TABLE meta (
        key {T} PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at {T} NOT NULL
    );
    CREATE TABLE failures (
        branch {T} NOT NULL DEFAULT 'main',
        layer {T} NOT NULL,
        group_key {T} NOT NULL,
        run_id {T},
        error TEXT NOT NULL,
        recorded_at {T} NOT NULL,
        PRIMARY KEY (branch, layer, group_key)
    );
    CREATE INDEX idx_failures_run ON failures (run_id);
    CREATE TABLE refs (
        branch {T} NOT NULL,
        layer {T} NOT NULL,
        group_key {T} NOT NULL,
        artifact_id {T} NOT NULL REFERENCES artifacts (artifact_id) ON DELETE CASCADE,
        PRIMARY KEY (branch, layer, group_key)
    );
    CREATE INDEX idx_refs_artifact ON refs (artifact_id);
    CREATE TABLE branches (
        name {T} PRIMARY KEY,
        parent {T},
        created_at {T} NOT NULL,
        info TEXT NOT NULL DEFAULT '{{}}'
    )
    """)


@PG_MIGRATIONS
def p002_partition_names(conn: PgConnection) -> None:
    """The SQLite store's m011: readable partition names (partition_names.py)."""
    run_ddl(conn, f"""
    CREATE TABLE partition_names (
        group_key {T} PRIMARY KEY,
        name {T} NOT NULL UNIQUE,
        assigned_at {T} NOT NULL
    )
    """)
