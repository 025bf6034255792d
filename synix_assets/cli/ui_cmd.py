"""`synix ui`: the Dagster UI for this project (dagster dev behind a guarded loopback proxy), until Ctrl-C/SIGTERM."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import click

from synix_assets.cli.common import project_option, project_paths
from synix_resources.settings import Settings

HOST = "127.0.0.1"


def ui_command(paths, port: int) -> tuple[list[str], dict]:
    """The `dagster dev` command line and environment for a project."""
    # `dagster dev` itself warns (FutureWarning) that `dg dev` supersedes it: noise for our users
    env = {"PYTHONWARNINGS": "ignore::FutureWarning", **os.environ,
           Settings.dagster_home.name: str(paths.dagster_home), Settings.project.name: str(paths.root)}
    cmd = [sys.executable, "-m", "dagster", "dev", "-w", str(paths.root / "workspace.yaml"),
           "-h", HOST, "-p", str(port)]
    return cmd, env


def _open_when_up(url: str, port: int, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    import webbrowser

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex((HOST, port)) == 0:
                webbrowser.open(url)
                return
        time.sleep(0.5)


@click.command()
@click.option("--port", type=click.IntRange(1, 65535), default=3000, show_default=True, help="Web server port.")
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also accept this Host (a reverse proxy's public name; see docs/serve.md).")
@project_option
@click.pass_context
def ui(ctx, port, no_open, allow_hosts) -> None:
    """Open the Dagster UI for this project: asset graph, runs, staleness checks.

    Served on 127.0.0.1 behind a guard that refuses other Host names (DNS rebinding) and
    cross-origin requests; for remote access use an SSH tunnel (docs/serve.md).

    \b
    Example:
      synix ui --port 3001 --no-open
    """
    from synix_assets.app.init import write_dagster_files
    from synix_assets.cli.render import console
    from synix_assets.web.serving import check_port_free, free_port
    from synix_assets.dagster_defs.vocabulary import LOCATION
    from synix_assets.web.reloader import Reloader, definition_files
    from synix_assets.web.ui_server import run_guarded_ui

    paths = project_paths(ctx)
    write_dagster_files(paths.root)  # a moved project gets its .env fixed
    check_port_free(HOST, port)
    # Dagster listens on an internal loopback port; only the guarded proxy is exposed.
    upstream = free_port(HOST)
    cmd, env = ui_command(paths, upstream)
    url = f"http://{HOST}:{port}"
    console().print(f"Dagster UI for {paths.root} at [bold]{url}[/] (Ctrl-C to stop)")

    reloader = Reloader(f"http://{HOST}:{upstream}", LOCATION, lambda: definition_files(paths.root))

    def started(proc) -> None:
        reloader.start()  # a pipeline edit reloads the definitions, no "Reload" button needed
        if not no_open:
            threading.Thread(target=_open_when_up, args=(url, upstream, proc), daemon=True).start()

    try:
        code = run_guarded_ui(cmd, env, paths.root, host=HOST, port=port, upstream_port=upstream,
                              allowed_hosts=tuple(allow_hosts), on_started=started)
    finally:
        reloader.stop()
    ctx.exit(code)
