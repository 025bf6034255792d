"""Start one Celery worker for a project's distributed builds (docs/scale.md):

    synix worker -p PROJECT_DIR --name w1      (or python -m synix_assets.scale.worker PROJECT_DIR --name w1)

It is dagster-celery's own worker (`celery -A dagster_celery.app worker`, as `dagster-celery
worker start` runs it) configured from the project's scale.toml, replacing this process so its PID
is the worker's. One solo-pool process per worker: a step is one task, and killing the worker
(even with SIGKILL) leaves its task unacknowledged, so another worker takes it over.
SYNIX_WORKER_ID is set to the worker's name, recorded in the audit of what it builds.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from synix_assets.dagster_defs.executor import celery_settings
from synix_assets.project import ProjectPaths
from synix_assets.project.scale_config import load_scale_config
from synix_resources.errors import ScaleDeploymentError
from synix_resources.settings import Settings

CONFIG_MODULE = "dagster_celery_config"  # what dagster_celery.app imports when it is importable


def write_celery_config(paths: ProjectPaths) -> Path:
    """The worker-side twin of the executor config, as the module dagster-celery reads; returns
    its folder (for PYTHONPATH)."""
    config = load_scale_config(paths.root)
    if config is None:
        raise ScaleDeploymentError(f"{paths.root} has no scale.toml",
                                   hint="write one (docs/scale.md) before starting workers")
    settings = celery_settings(config)
    folder = paths.state_dir / "celery"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"broker_url = {settings['broker']!r}", f"result_backend = {settings['backend']!r}",
             *(f"{k} = {v!r}" for k, v in settings["config_source"].items())]
    (folder / f"{CONFIG_MODULE}.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def worker_argv(name: str, loglevel: str = "WARNING") -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "dagster_celery.app", "worker", "-P", "solo",
            "--prefetch-multiplier=1", "-Q", "dagster", "-n", f"{name}@%h", "-l", loglevel,
            "--without-gossip", "--without-mingle"]


def worker_env(paths: ProjectPaths, name: str, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    folder = write_celery_config(paths)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), env.get("PYTHONPATH", "")) if p)
    env[Settings.worker_id.name] = name
    env[Settings.dagster_home.name] = str(paths.dagster_home)
    return env


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m synix_assets.scale.worker",
                                     description="Start a Celery worker for a Synix project.")
    parser.add_argument("project", type=Path)
    parser.add_argument("--name", required=True, help="worker id (recorded in the audit)")
    parser.add_argument("--loglevel", default="WARNING")
    args = parser.parse_args(argv)
    paths = ProjectPaths(args.project.resolve())
    try:
        env = worker_env(paths, args.name)
    except ScaleDeploymentError as exc:
        sys.exit(f"error: {exc.one_line()}")
    os.chdir(paths.root)
    os.execve(sys.executable, worker_argv(args.name, args.loglevel), env)


if __name__ == "__main__":
    main()
