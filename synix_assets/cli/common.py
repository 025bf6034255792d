"""Helpers shared by the command modules: the per-command -p/--project option, project lookup,
`--json` and its output, date/time options, the debug switch."""
from __future__ import annotations

import json
from typing import Any, Callable

import click

from synix_resources.errors import InvalidTime
from synix_resources.settings import settings
from synix_resources.values import instant


def _remember_project(ctx: click.Context, param, value):
    if value is not None:
        ctx.ensure_object(dict)["project"] = value
    return value


def _remember_branch(ctx: click.Context, param, value):
    if value is not None:
        ctx.ensure_object(dict)["branch"] = value
    return value


def project_dir_option(fn):
    """`-p/--project DIR` alone, for commands whose `--branch` means something else."""
    return click.option("-p", "--project", type=click.Path(file_okay=False), expose_value=False,
                        callback=_remember_project,
                        help="Project folder (default: the current folder or a parent with a pipeline.py).")(fn)


def project_option(fn):
    """`-p/--project DIR` and `--branch NAME` on a command (the group accepts them too)."""
    fn = click.option("--branch", metavar="NAME", expose_value=False, callback=_remember_branch,
                      help="Branch to use (default: the project's current branch, see "
                           "`synix branch switch`).")(fn)
    return project_dir_option(fn)


def json_option(help: str):
    """`--json` (as `as_json`) on a command; each command says what its JSON holds."""
    return click.option("--json", "as_json", is_flag=True, help=help)


class When(click.ParamType):
    """A date or date-time option (`--as-of`, `--valid-from`), checked as it is parsed: a value
    Synix cannot use (not ISO 8601, or outside years 0001-9999 once in UTC) is a usage error
    naming the option and the accepted form."""

    name = "when"

    def convert(self, value, param, ctx):
        try:
            return instant(value, "the value")
        except InvalidTime as exc:
            self.fail(exc.one_line(), param, ctx)


WHEN = When()


def echo_json(data: Any, *, ascii: bool = True, indent: int | None = 2,
              default: Callable[[Any], Any] | None = str) -> None:
    """A command's JSON on stdout. The variants keep each command's output as it always was:
    `ascii=False` for text shown to people as written (tenants, `ask`), `indent=None` for the
    one-line answers of `branch switch`/`edit`, `default=None` where the data is plain JSON."""
    click.echo(json.dumps(data, indent=indent, default=default, ensure_ascii=ascii))


def debug_enabled(ctx: click.Context) -> bool:
    """`--debug` or SYNIX_DEBUG: tracebacks and Dagster's error logs on the terminal."""
    return bool((ctx.obj or {}).get("debug")) or settings().debug


def project_paths(ctx: click.Context, *, branch: str | None = None):
    """The project and branch a command works on (`app.workspace.open_project`): -p/--project
    or SYNIX_PROJECT, and `branch` if given, else --branch or SYNIX_BRANCH."""
    from synix_assets.app.workspace import open_project

    obj = ctx.obj or {}
    config = settings()
    if branch is None:
        # `--branch ''` is a bad name, not "no branch given" (an empty SYNIX_BRANCH is unset)
        branch = obj["branch"] if "branch" in obj else config.branch
    return open_project(obj.get("project") or config.project, branch)


def _no_final_collections() -> None:
    import gc

    gc.disable()
    gc.freeze()


def quick_exit() -> None:
    """Skip the garbage collections Python runs over the whole heap when the process ends (about
    a second after a build: Dagster's definitions and run records are many objects). They only
    free memory the process gives back anyway; everything a command writes is committed and
    closed before it returns (SQLite's WAL files of connections left open are complete and read
    back by the next opener). Registered once per process; runs after the handlers registered
    later (Dagster's)."""
    import atexit

    atexit.unregister(_no_final_collections)
    atexit.register(_no_final_collections)
