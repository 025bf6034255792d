"""The `synix` command: a thin click layer over `synix_assets.app` and the engine.

Importing this module stays cheap (no Dagster, no engine): commands import what they need when
they run, so `synix --help` answers at once.
"""
from __future__ import annotations

import importlib
import logging
import sys
import warnings

import click

from synix_assets.cli.common import debug_enabled
from synix_resources.errors import SynixError
from synix_resources.process import interrupts

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# Each command's module is imported when that command runs (or for `synix --help`): `synix run`
# does not load the server, eval, branch or live commands and what they import.
COMMANDS = {
    "init": "build_cmds:init", "run": "build_cmds:run", "plan": "build_cmds:plan",
    "sync": "build_cmds:sync", "demo": "build_cmds:demo", "pull": "build_cmds:pull",
    "status": "read_cmds:status", "stats": "read_cmds:stats", "search": "read_cmds:search",
    "lineage": "read_cmds:lineage", "get": "read_cmds:get", "runs": "read_cmds:runs",
    "ui": "ui_cmd:ui", "purge": "forget_cmd:purge", "forget": "forget_cmd:forget",
    "serve": "serve_cmd:serve", "mcp": "serve_cmd:mcp", "ask": "serve_cmd:ask",
    "eval": "eval_cmd:eval_group", "branch": "branch_cmd:branch_group", "gc": "branch_cmd:gc",
    "tenant": "live_cmd:tenant_group", "live": "live_cmd:live_group",
    "memory": "memory_cmd:memory_group", "evidence": "evidence_cmd:evidence_group",
    "pack": "portable_cmd:pack", "unpack": "portable_cmd:unpack", "worker": "scale_cmd:worker",
}


class SynixGroup(click.Group):
    """Turns every failure into one line on stderr and a non-zero exit (tracebacks with --debug);
    loads each command from `COMMANDS` when it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            module, attr = COMMANDS[name].split(":")
            command = getattr(importlib.import_module(f"synix_assets.cli.{module}"), attr)
            self.add_command(command, name)
        return super().get_command(ctx, name)

    def main(self, args=None, *rest, **extra):
        # Run as the program (arguments from sys.argv), a command that settled its outcome
        # (interrupts.settle: `synix run`) leaves SIGINT/SIGTERM ignored until the process is
        # gone; run in-process (a test, CliRunner), the caller gets its signal handlers back.
        if args is None:
            return super().main(args, *rest, **extra)
        try:
            return super().main(args, *rest, **extra)
        finally:
            interrupts.release()

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except SynixError as exc:
            if debug_enabled(ctx):
                raise
            _error(exc.one_line())
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            raise click.exceptions.Abort() from None
        except Exception as exc:  # the one place an unexpected failure is reported, not hidden
            if debug_enabled(ctx):
                raise
            full = _disk_full(ctx, exc)
            if full is not None:
                _error(full.one_line())
                ctx.exit(full.exit_code)
            _error(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")
            ctx.exit(70)


def _disk_full(ctx: click.Context, exc: Exception):
    """The storage error for a full disk that surfaced outside Synix's own writers (Dagster's run
    and event storage during `synix run`), else None."""
    from synix_assets.cli.common import project_paths
    from synix_resources.disk import disk_full_from

    try:
        state = project_paths(ctx).state_dir
    except SynixError:  # no project here: the disk can still be full
        state = None
    return disk_full_from(exc, state)


def _error(text: str) -> None:
    from synix_assets.cli.render import console, error_line

    error_line(console(stderr=True), text)


class _SafeFormatter(logging.Formatter):
    """Log lines carry data (file names, conversation ids): made safe for the terminal too."""

    def format(self, record: logging.LogRecord) -> str:
        from synix_assets.cli.render import plain

        return plain(super().format(record), one_line=True)


def _once():
    seen: set[str] = set()

    def first_time(record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if text in seen:
            return False
        seen.add(text)
        return True
    return first_time


def _quiet_libraries() -> None:
    # Dagster's beta/preview warnings and the engine's per-file log lines would drown the output;
    # the CLI reports the same facts itself.
    warnings.filterwarnings("ignore", module="dagster")
    warnings.filterwarnings("ignore", message=".*is currently in (beta|preview)")
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_once())  # each Dagster run rebuilds the LLM client and repeats its notice
    handler.setFormatter(_SafeFormatter("warning: %(message)s"))
    synix_log = logging.getLogger("synix")
    synix_log.handlers[:] = [handler]
    synix_log.propagate = False
    synix_log.setLevel(logging.WARNING)
    # bad files and skipped conversations are reported by `run` and `plan`, once each
    logging.getLogger("synix.ingest").setLevel(logging.ERROR)
    logging.getLogger("synix.parsers").setLevel(logging.ERROR)


@click.group(cls=SynixGroup, context_settings=CONTEXT)
@click.option("-p", "--project", type=click.Path(file_okay=False), default=None,
              help="Project folder (default: the current folder or a parent with a pipeline.py).")
@click.option("--debug", is_flag=True, help="Show full tracebacks on errors.")
@click.version_option(package_name="synix", prog_name="synix")
@click.pass_context
def main(ctx: click.Context, project: str | None, debug: bool) -> None:
    """Synix: a build system for agent memory, built on Dagster.

    Turns ChatGPT/Claude exports into episode summaries, rollups, a core memory, a search index
    and a context document — incrementally, with provenance.

    \b
    Hello world:
      synix init mem --from conversations.json
      cd mem && synix run
      synix search "that rust conversation"

    Or try everything offline on bundled data: synix demo
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    if project is not None:
        ctx.obj["project"] = project
    _quiet_libraries()


if __name__ == "__main__":
    main()
