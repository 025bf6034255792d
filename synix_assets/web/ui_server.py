"""`synix ui`: `dagster dev` on an internal loopback port, served through the guarded proxy.

The Dagster webserver, daemon and code servers run in one process group of their own; when
`synix ui` stops for any reason (Ctrl-C, SIGTERM, the proxy failing, Dagster exiting) the whole
group is stopped and every PID checked gone.
"""
from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from synix_assets.web.guard import GuardPolicy
from synix_assets.web.process_tree import start_group, stop_group
from synix_assets.web.serving import Terminated, make_server, sigterm_raises
from synix_assets.web.ui_proxy import ReverseProxy

UPSTREAM_HOST = "127.0.0.1"


def run_guarded_ui(cmd: list[str], env: dict, cwd: Path, *, host: str, port: int,
                   upstream_port: int, allowed_hosts: tuple[str, ...] = (),
                   on_started=None) -> int:
    """Start `cmd` (a `dagster dev` listening on `upstream_port`), serve it guarded on
    host:port until a signal or until Dagster exits; returns Dagster's exit code (0 when
    stopped by a signal). `on_started(proc)` runs once the child is started."""
    policy = GuardPolicy(port=port, bind_host=host, allowed_hosts=allowed_hosts)
    server = make_server(ReverseProxy(UPSTREAM_HOST, upstream_port), policy, host=host, port=port)
    with sigterm_raises():
        proc = start_group(cmd, cwd=str(cwd), env=env)
        try:
            # Dagster exiting on its own stops the proxy too.
            threading.Thread(target=_stop_when_exits, args=(proc, server), daemon=True).start()
            if on_started is not None:
                on_started(proc)
            server.run()
            code = proc.poll()
        except (KeyboardInterrupt, Terminated):
            code = None
        finally:
            stop_group(proc)
    return 0 if code is None else code


def _stop_when_exits(proc: subprocess.Popen, server) -> None:
    proc.wait()
    server.should_exit = True
