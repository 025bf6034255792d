"""`synix worker`: one Celery worker of a project's distributed deployment (docs/scale.md)."""
from __future__ import annotations

import click

from synix_assets.cli.common import project_dir_option, project_paths


@click.command()
@click.option("--name", required=True, metavar="ID",
              help="Worker id, recorded in the audit of every artifact it builds.")
@click.option("--loglevel", default="WARNING", show_default=True, help="Celery log level.")
@project_dir_option
@click.pass_context
def worker(ctx, name: str, loglevel: str) -> None:
    """Run a Celery worker that builds this project's partitions (needs scale.toml).

    \b
    Example:
      synix worker -p mem --name w1
    It replaces this process (same PID) and runs until stopped (SIGTERM finishes the current step;
    a worker killed mid-step has its step taken over by another worker).
    """
    import os
    import sys

    from synix_assets.scale.worker import worker_argv, worker_env

    paths = project_paths(ctx)
    env = worker_env(paths, name)
    os.chdir(paths.root)
    os.execve(sys.executable, worker_argv(name, loglevel), env)
