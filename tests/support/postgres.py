"""A throwaway real PostgreSQL server for tests: its own data dir, a free loopback port, its unix
socket inside the data dir, started and stopped by PID with bounded waits.

Used through the conftest fixtures `postgres_server` (one per test session) and `postgres_url`
(a fresh empty database on it per test). Missing binaries fail the test with the fix, never skip:
the Postgres backend is part of the product and CI installs Debian's `postgresql` (see .ci/run).
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
SUPERUSER = "synix"


class PostgresUnavailable(RuntimeError):
    """PostgreSQL cannot be started here; the message says what to install or fix."""


def find_bin_dir() -> Path:
    """The directory holding initdb and postgres: $SYNIX_PG_BIN, then PATH, then Debian's layout."""
    explicit = os.environ.get("SYNIX_PG_BIN")
    candidates = [Path(explicit)] if explicit else []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    # Debian puts the server binaries in a versioned dir that is not on PATH; newest first.
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                    key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
                    reverse=True)
    candidates += [Path(p) for p in debian]
    for d in candidates:
        if (d / "initdb").is_file() and (d / "postgres").is_file():
            return d
    raise PostgresUnavailable(
        "PostgreSQL server binaries (initdb, postgres) not found: install Debian's `postgresql` "
        "package (apt-get install -y postgresql) or set SYNIX_PG_BIN to their directory")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_user() -> tuple[int, int] | None:
    """initdb and postgres refuse to run as root: as root, run them as the `postgres` user that
    Debian's package creates (else `nobody`); as anyone else, run them as ourselves."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    raise PostgresUnavailable("running as root and no `postgres` or `nobody` user exists to own "
                              "the test PostgreSQL server: create one (useradd postgres)")


@dataclass
class PostgresServer:
    """One running postgres process. `url(db)` is a libpq URL over loopback TCP."""
    base: Path
    port: int
    process: subprocess.Popen
    log_path: Path
    _databases: list[str] = field(default_factory=list)

    @property
    def socket_dir(self) -> Path:
        return self.base / "socket"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "t") -> str:
        """A new empty database; returns its URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self._databases.append(name)
        return self.url(name)

    def create_schema(self, prefix: str = "t") -> str:
        """A new empty schema in the `postgres` database; returns a URL whose search_path is
        that schema (much cheaper than a database per test: ~5 ms against ~0.5 s)."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        return f"{self.url()}?options=-csearch_path%3D{name}"

    def drop_schema(self, url: str) -> None:
        import psycopg

        name = url.rsplit("%3D", 1)[1]
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')

    def drop_database(self, url: str) -> None:
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            # A test may leave a pooled connection open (a Dagster instance, a store not closed):
            # FORCE ends them so the drop cannot hang.
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        """Fast shutdown by PID (SIGINT), bounded; SIGKILL if it does not exit; remove the files."""
        proc = self.process
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT_S)
        shutil.rmtree(self.base, ignore_errors=True)


def start_postgres(durable: bool = False) -> PostgresServer:
    """A test server (durability off, for speed), or with `durable` PostgreSQL's own defaults
    (the benchmarks' server: what a user would run)."""
    bin_dir = find_bin_dir()
    owner = _server_user()
    # Not under pytest's tmp dir: that is 0700 root and the server user could not reach it.
    base = Path(tempfile.mkdtemp(prefix="synix-pg-"))
    data, sock = base / "data", base / "socket"
    sock.mkdir()
    user_kwargs: dict = {}
    if owner is not None:
        for path in (base, sock):
            os.chown(path, *owner)
        user_kwargs = {"user": owner[0], "group": owner[1], "extra_groups": []}
    log_path = base / "postgres.log"
    try:
        init = subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust",
             "--encoding=UTF8", "--locale=C", "--no-sync"],
            capture_output=True, text=True, timeout=120, **user_kwargs)
        if init.returncode != 0:
            raise PostgresUnavailable(f"initdb failed ({init.returncode}): {init.stderr.strip()[-800:]}")
        last_error = ""
        for _attempt in range(3):  # a free port can be taken between choosing and binding it
            port = free_port()
            log = open(log_path, "ab")
            proc = subprocess.Popen(
                [str(bin_dir / "postgres"), "-D", str(data), "-p", str(port),
                 "-h", "127.0.0.1", "-k", str(sock),
                 *([] if durable else
                   # A test server: durability off, for speed; small and quiet.
                   ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                    "-c", "shared_buffers=32MB"]),
                 "-c", "max_connections=200"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **user_kwargs)
            log.close()
            server = PostgresServer(base=base, port=port, process=proc, log_path=log_path)
            if accepts_connections(proc, server.url()):
                return server
            last_error = log_path.read_text(errors="replace")[-1500:]
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT_S)
        raise PostgresUnavailable(f"postgres did not start on a loopback port; log:\n{last_error}")
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise


def accepts_connections(process: subprocess.Popen, url: str, timeout_s: float = START_TIMEOUT_S) -> bool:
    """True once `url` answers a query (bounded wait); False if `process` exits or time runs out.
    Also what tests/support/pgbouncer.py waits with."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with psycopg.connect(url, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
                return True
        except psycopg.OperationalError:
            time.sleep(0.1)
    return False
