"""A throwaway PgBouncer (Debian's `pgbouncer`) in front of a PostgresServer, the way
docs/postgres.md sets one up for Dagster's storage: transaction pooling, every database of the
server reachable by name, loopback only, started and stopped by PID with bounded waits."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.support.postgres import (SUPERUSER, PostgresServer, _server_user, accepts_connections,
                                    free_port)

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


class PgBouncerUnavailable(RuntimeError):
    """PgBouncer cannot be started here; the message says what to install or fix."""


def config(listen_port: int, server_port: int, base: Path) -> str:
    """The pgbouncer.ini of docs/postgres.md, for a server on loopback `server_port`."""
    return "\n".join([
        "[databases]",
        # any database name is passed through to the server under the same name
        f"* = host=127.0.0.1 port={server_port}",
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        f"listen_port = {listen_port}",
        "unix_socket_dir =",
        "auth_type = trust",
        f"auth_file = {base / 'users.txt'}",
        "pool_mode = transaction",
        "max_client_conn = 200",
        "default_pool_size = 10",
        # one line per connection: dagster-postgres connects once per storage write
        "log_connections = 0",
        "log_disconnections = 0",
        "ignore_startup_parameters = extra_float_digits,options",
        f"logfile = {base / 'pgbouncer.log'}",
        "",
    ])


@dataclass
class PgBouncer:
    base: Path
    port: int
    process: subprocess.Popen

    def url(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        proc = self.process
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # PgBouncer's safe shutdown
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT_S)
        shutil.rmtree(self.base, ignore_errors=True)


def start_pgbouncer(server: PostgresServer) -> PgBouncer:
    # Debian installs it in /usr/sbin, which is not on every user's PATH
    binary = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")
    if binary is None:
        raise PgBouncerUnavailable("pgbouncer not found: install Debian's `pgbouncer` package "
                                   "(apt-get install -y pgbouncer)")
    owner = _server_user()  # PgBouncer refuses to run as root, like postgres
    base = Path(tempfile.mkdtemp(prefix="synix-pgbouncer-"))
    user_kwargs: dict = {}
    try:
        (base / "users.txt").write_text(f'"{SUPERUSER}" ""\n', encoding="utf-8")
        if owner is not None:
            for path in (base, base / "users.txt"):
                os.chown(path, *owner)
            user_kwargs = {"user": owner[0], "group": owner[1], "extra_groups": []}
        last_error = ""
        for _attempt in range(3):  # a free port can be taken between choosing and binding it
            port = free_port()
            ini = base / "pgbouncer.ini"
            ini.write_text(config(port, server.port, base), encoding="utf-8")
            proc = subprocess.Popen([binary, str(ini)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, **user_kwargs)
            bouncer = PgBouncer(base=base, port=port, process=proc)
            if accepts_connections(proc, bouncer.url("postgres"), START_TIMEOUT_S):
                return bouncer
            log = base / "pgbouncer.log"
            last_error = log.read_text(errors="replace")[-1500:] if log.exists() else ""
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT_S)
        raise PgBouncerUnavailable(f"pgbouncer did not start on a loopback port; log:\n{last_error}")
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise

