"""Point a project at PostgreSQL: Synix's store (`.synix/config.toml`) and Dagster's own storage
(the project's `dagster.yaml`), as `synix init --store URL --dagster-storage URL` does.

Dagster's storage uses dagster-postgres through SQLAlchemy. The scheme is written out as
`postgresql+psycopg2`: SQLAlchemy 2.1 maps a bare `postgresql://` to psycopg 3, while
dagster-postgres depends on (and is tested with) psycopg2 — dagster-io/dagster#33958.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

import yaml

from synix_assets.project.config import CONFIG_FILE
from synix_resources.errors import SynixError
from synix_resources.private import private_dir, private_file
from synix_resources.store.dialect import is_postgres_url

DAGSTER_SCHEME = "postgresql+psycopg2"

HEADER = """# Dagster instance settings for a Synix project (DAGSTER_HOME = <project>/.synix/dagster),
# written by `synix init --dagster-storage`. Runs, the event log and schedules live in PostgreSQL
# (dagster-postgres), so the webserver, the daemon and workers on other hosts share one instance.
# scheme: SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3; dagster-postgres uses psycopg2
# (dagster-io/dagster#33958). See docs/postgres.md.
"""


def check_postgres_url(url: str, option: str) -> str:
    if not is_postgres_url(url) or not urlsplit(url).hostname and "host=" not in url:
        raise SynixError(f"{option} {url!r} is not a PostgreSQL URL",
                         hint="give postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE")
    return url


def dagster_postgres_config(url: str) -> dict:
    """dagster-postgres's `postgres_db` block for a libpq URL (query parameters kept)."""
    parts = urlsplit(url)
    db = {"scheme": DAGSTER_SCHEME,
          "username": unquote(parts.username or ""),
          "hostname": parts.hostname or "",
          "port": parts.port or 5432,
          "db_name": unquote(parts.path.lstrip("/")) or unquote(parts.username or "")}
    if parts.password:
        db["password"] = unquote(parts.password)
    params = dict(parse_qsl(parts.query))
    if params:
        db["params"] = params
    return db


def dagster_instance_yaml(url: str) -> str:
    config = {"telemetry": {"enabled": False},
              "storage": {"postgres": {"postgres_db": dagster_postgres_config(url)}}}
    return HEADER + yaml.safe_dump(config, sort_keys=False)


def write_dagster_storage(dagster_home: Path, url: str) -> Path:
    """Write the Dagster home's dagster.yaml for PostgreSQL storage (replacing the SQLite one)."""
    check_postgres_url(url, "--dagster-storage")
    # looked up, not imported: importing it loads Dagster, which nothing under
    # synix_assets.project may do (tests/test_architecture.py)
    if importlib.util.find_spec("dagster_postgres") is None:
        raise SynixError("Dagster storage on PostgreSQL needs dagster-postgres",
                         hint="pip install 'synix[postgres]'")
    private_dir(dagster_home)
    path = private_file(dagster_home / "dagster.yaml")  # 0600 first: it may hold a password
    path.write_text(dagster_instance_yaml(url), encoding="utf-8")
    return path


def write_store_url(root: Path, url: str) -> Path:
    """Record the PostgreSQL store in `.synix/config.toml` (0600: the URL may hold a password)."""
    import tomli_w

    check_postgres_url(url, "--store")
    state = Path(root) / ".synix"
    private_dir(state)
    path = private_file(state / CONFIG_FILE)
    path.write_text("# Where this project keeps its state (docs/postgres.md).\n"
                    + tomli_w.dumps({"store": url}), encoding="utf-8")
    return path
