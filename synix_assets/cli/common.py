"""Helpers shared by the command modules: the per-command -p/--project option, project lookup."""
from __future__ import annotations

import os

import click


def _remember_project(ctx: click.Context, param, value):
    if value is not None:
        ctx.ensure_object(dict)["project"] = value
    return value


def project_option(fn):
    """`-p/--project DIR` on a command (the group accepts it too, before the command name)."""
    return click.option("-p", "--project", type=click.Path(file_okay=False), expose_value=False,
                        callback=_remember_project,
                        help="Project folder (default: the current folder or a parent with a pipeline.py).")(fn)


def project_paths(ctx: click.Context):
    from synix_assets.project import find_project

    return find_project((ctx.obj or {}).get("project") or os.environ.get("SYNIX_PROJECT") or None)
