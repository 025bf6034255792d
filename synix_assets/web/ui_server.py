"""`synix ui`: `dagster dev` on an internal loopback port, served through the guarded proxy.

The Dagster webserver, daemon and code servers run in one process group of their own; when
`synix ui` stops for any reason (Ctrl-C, SIGTERM, the proxy failing, Dagster exiting) the whole
group is stopped and every PID checked gone.

Ctrl-C and SIGTERM only ask the proxy to stop (as uvicorn's own handlers do) instead of raising
wherever the main thread is: raised inside `Popen` the child's PID is lost and its group lives
on; raised in an asyncio callback before uvicorn installs its handlers, asyncio logs it and keeps
serving; raised during the group's stop, the stop is cut short. Either way the first signal
would not stop everything.
"""
from __future__ import annotations

import signal
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

from synix_assets.web.guard import GuardPolicy
from synix_assets.web.process_tree import start_group, stop_group
from synix_assets.web.serving import make_server
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
    with _signals_stop(server) as signalled:
        proc = start_group(cmd, cwd=str(cwd), env=env)
        try:
            # Dagster exiting on its own stops the proxy too.
            threading.Thread(target=_stop_when_exits, args=(proc, server), daemon=True).start()
            if on_started is not None:
                on_started(proc)
            if not signalled:  # a signal during start-up: do not start serving at all
                server.run()
            code = None if signalled else proc.poll()
        finally:
            stop_group(proc)
    return 0 if code is None else code


@contextmanager
def _signals_stop(server):
    """While inside, SIGINT and SIGTERM set `server.should_exit` (uvicorn checks it before it
    serves and on every tick) and are recorded in the yielded list; uvicorn's own handlers take
    over while it serves and re-raise the signal here when it has stopped."""
    signalled: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield signalled
        return

    def stop(signum, frame) -> None:
        signalled.append(signum)
        server.should_exit = True
    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield signalled
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _stop_when_exits(proc: subprocess.Popen, server) -> None:
    proc.wait()
    server.should_exit = True
