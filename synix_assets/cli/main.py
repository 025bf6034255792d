"""The `synix` command: a thin click layer over `synix_assets.app` and the engine.

Importing this module stays cheap (no Dagster, no engine): commands import what they need when
they run, so `synix --help` answers at once.
"""
from __future__ import annotations

import logging
import sys
import warnings

import click

from synix_assets.cli.common import debug_enabled
from synix_resources.errors import SynixError
from synix_resources.process import interrupts

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class SynixGroup(click.Group):
    """Turns every failure into one line on stderr and a non-zero exit (tracebacks with --debug)."""

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


def _register() -> None:
    from synix_assets.cli import build_cmds, forget_cmd, read_cmds, ui_cmd

    for cmd in (build_cmds.init, build_cmds.run, build_cmds.plan, build_cmds.sync, build_cmds.demo,
                read_cmds.status, read_cmds.stats, read_cmds.search, read_cmds.lineage, read_cmds.get,
                read_cmds.runs, ui_cmd.ui, forget_cmd.purge, forget_cmd.forget):
        main.add_command(cmd)
    from synix_assets.cli import serve_cmd

    for cmd in (serve_cmd.serve, serve_cmd.mcp, serve_cmd.ask):
        main.add_command(cmd)


_register()
from synix_assets.cli.eval_cmd import eval_group  # noqa: E402
main.add_command(eval_group)
from synix_assets.cli.branch_cmd import branch_group, gc  # noqa: E402
main.add_command(branch_group)
main.add_command(gc)
from synix_assets.cli.live_cmd import live_group, tenant_group  # noqa: E402
main.add_command(tenant_group)
main.add_command(live_group)
from synix_assets.cli.memory_cmd import memory_group  # noqa: E402
main.add_command(memory_group)
from synix_assets.cli.scale_cmd import worker  # noqa: E402
main.add_command(worker)

if __name__ == "__main__":
    main()
