"""`synix ui`: the Dagster UI for this project (dagster dev on 127.0.0.1), until Ctrl-C."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import click

from synix_assets.cli.common import project_option, project_paths

HOST = "127.0.0.1"


def ui_command(paths, port: int) -> tuple[list[str], dict]:
    """The `dagster dev` command line and environment for a project."""
    # `dagster dev` itself warns (FutureWarning) that `dg dev` supersedes it: noise for our users
    env = {"PYTHONWARNINGS": "ignore::FutureWarning", **os.environ,
           "DAGSTER_HOME": str(paths.dagster_home), "SYNIX_PROJECT": str(paths.root)}
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
@project_option
@click.pass_context
def ui(ctx, port, no_open) -> None:
    """Open the Dagster UI for this project: asset graph, runs, staleness checks.

    \b
    Example:
      synix ui --port 3001 --no-open
    """
    from synix_assets import scaffold
    from synix_assets.cli.render import console

    paths = project_paths(ctx)
    scaffold.write_dagster_files(paths.root)  # a moved project gets its .env fixed
    cmd, env = ui_command(paths, port)
    url = f"http://{HOST}:{port}"
    console().print(f"Dagster UI for {paths.root} at [bold]{url}[/] (Ctrl-C to stop)")
    proc = subprocess.Popen(cmd, cwd=str(paths.root), env=env)
    if not no_open:
        threading.Thread(target=_open_when_up, args=(url, port, proc), daemon=True).start()
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        # The child got the same SIGINT; give it time to shut its own processes down.
        try:
            code = proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.terminate()
            code = proc.wait()
        code = 0
    ctx.exit(code)
