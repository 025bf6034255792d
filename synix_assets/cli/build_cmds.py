"""Commands that create or build a project: init, run, plan, sync, demo."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import click

from synix_assets.app.init import EXPORT_FORMATS, TEMPLATES
from synix_assets.project import find_project
from synix_resources.names import LAYER
from synix_assets.cli.common import debug_enabled, echo_json, json_option, project_option, project_paths


@click.command()
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--from", "exports", multiple=True, type=click.Path(),
              help="An export to copy into the project (conversations.json, export .zip, .jsonl, an Open "
                   "WebUI or Copilot Chat export), or a folder: one holding only coding-agent sessions "
                   "(~/.codex/sessions, ~/.gemini/tmp, ~/.claude/projects) is read where it is, as those "
                   "keep growing; any other (an Obsidian vault or notes folder, .specstory/history, "
                   "exports) is copied. Every file's format is checked first; repeatable.")
@click.option("--template", type=click.Choice(TEMPLATES), default="monthly", show_default=True,
              help="Level-2 rollups by calendar month or by topic; live: a memory fed by posted turns "
                   "(docs/live.md); synapse: live turns with a working window, rolling summary, open "
                   "loops and identity facts; syke: agent-written memories with supersession, links "
                   "and a map (docs/templates.md).")
@click.option("--demo", is_flag=True, help="Copy the bundled demo exports (24 synthetic conversations).")
@click.option("--force", is_flag=True, help="Overwrite an existing pipeline.py (state and exports are kept).")
@click.option("--store", "store_url", metavar="URL",
              help="Keep the artifact store, LLM cache and build lock in PostgreSQL "
                   "(postgresql://USER@HOST:PORT/DB) instead of .synix/*.db; see docs/postgres.md.")
@click.option("--dagster-storage", "dagster_storage", metavar="URL",
              help="Keep Dagster's runs and events in PostgreSQL (writes .synix/dagster/dagster.yaml).")
@click.option("--format", "export_format", type=click.Choice(EXPORT_FORMATS), default=None,
              help="The format of every --from export: each is checked to be in it (an empty one is "
                   "taken to be), and pipeline.py names it (default: detected per file).")
@json_option("Print one JSON object describing the new project.")
def init(directory: str, exports: tuple[str, ...], template: str, demo: bool, force: bool,
         store_url: str | None, dagster_storage: str | None, export_format: str | None,
         as_json: bool) -> None:
    """Create a project folder with a pipeline.py and your exports.

    DIRECTORY must be new or empty (an existing project: --force). Nothing is left behind when
    init fails; a link in a --from folder that leads outside it is skipped with a warning.

    \b
    Example:
      synix init mem --from ~/Downloads/conversations.json
      synix init mem --from ~/.codex/sessions --from ~/notes-vault
      cd mem && synix run
      synix init mem --demo --store postgresql://synix@127.0.0.1/synix \\
                     --dagster-storage postgresql://synix@127.0.0.1/dagster
    """
    from synix_assets.app.init import create_project, describe_project
    from synix_assets.cli import render
    from synix_assets.cli.render import console

    root, sources = create_project(directory, exports=exports, template=template, demo=demo,
                                   force=force, store=store_url, dagster_storage=dagster_storage,
                                   format=export_format)
    if as_json:
        echo_json(describe_project(root, template=template, formats=sources,
                                   dagster_storage=dagster_storage))
        return
    out = console()
    out.print(f"Created [bold]{render.safe(root)}[/] ({template} pipeline, {len(sources)} export file(s)).")
    for src, fmt in sources.items():
        how = "--format" if export_format else "detected"
        out.print(f"  {render.safe(src)}: {render.safe(fmt)} ({how})")
    if not sources:
        out.print(f"Copy your exports into {render.safe(root / 'exports')} (ChatGPT conversations.json, "
                  "Claude export).")
    out.print("Next:")
    out.print(f"  cd {render.safe(directory)}")
    out.print("  synix plan                  # what a build would do, and cost")
    out.print("  synix run                   # build the memory")
    out.print('  synix search "some topic"   # search it, with provenance')


@click.command()
@click.argument("step", required=False)
@click.option("--select", "select", metavar="STEP", help="The older spelling of STEP.")
@click.option("--from", "from_layer", metavar="STEP", help="Build this step and everything downstream.")
@click.option("--full", is_flag=True, help="Ignore cached results and rebuild the selected steps.")
@click.option("--batch", is_flag=True, help="Use the provider's batch API (half price, slower).")
@click.option("--replay", is_flag=True, help="Answer LLM calls from the response cache only (offline).")
@click.option("--source-dir", "source_dirs", multiple=True, metavar="[NAME=]DIR",
              help="Read the exports of this folder instead of the folder pipeline.py names, for this "
                   "run (NAME=DIR for one of several export sources; repeatable). The build then "
                   "reflects DIR: a conversation missing from it is retired, as when its export is removed.")
@json_option("Print one JSON object with the result at the end.")
@project_option
@click.pass_context
def run(ctx, step, select, from_layer, full, batch, replay, source_dirs, as_json) -> None:
    """Build the memory: only what changed since the last build.

    STEP builds that step and what it needs (pipeline.run("episodes")); --select STEP is its
    older spelling. A path to the project's pipeline file in its place (`synix run
    pipeline.py`) builds that project, like -p with the file's folder.

    \b
    Examples:
      synix run
      synix run episodes
      synix run --from monthly --full
      synix run --branch topical --json
      synix run mem/pipeline.py --source-dir ~/Downloads/exports
    """
    from synix_assets.cli.common import quick_exit
    from synix_resources.process import interrupts

    if step is not None and not LAYER.fullmatch(step):  # a layer name never holds "." or "/"
        _project_of_file(ctx, step)
        step = None
    if step is not None and select is not None and step != select:
        raise click.UsageError(f"STEP {step!r} and --select {select!r} name different steps; give one")
    select = step if step is not None else select
    quick_exit()
    # Watched from the first line: Ctrl-C or SIGTERM anywhere in `synix run` ends with the resume
    # message and 128+signal, never with a traceback or a status that looks like success.
    with interrupts.watching(), _source_dirs(source_dirs):
        _run_command(ctx, select, from_layer, full, batch, replay, as_json)


def _project_of_file(ctx, file: str) -> None:
    """`synix run path/pipeline.py`: the project is the file's folder (main's pipeline file)."""
    from synix_assets.app.workspace import open_pipeline_file
    from synix_resources.names import MAIN

    obj = ctx.ensure_object(dict)
    if obj.get("branch", MAIN) != MAIN:
        raise click.UsageError(f"{file} is main's pipeline file; a branch builds its own: "
                               f"synix run --branch {obj['branch']}")
    paths = open_pipeline_file(file, MAIN)
    if obj.get("project") and find_project(obj["project"]).root != paths.root:
        raise click.UsageError(f"{file} is not the pipeline of the project -p names; give one of them")
    obj["project"], obj["branch"] = str(paths.root), MAIN


@contextlib.contextmanager
def _source_dirs(given: tuple[str, ...]):
    """SYNIX_SOURCE_DIR for this build (read wherever the pipeline is loaded, Dagster's runs and
    workers included), each folder resolved against the folder the command was typed in."""
    if not given:
        yield
        return
    entries = []
    for value in given:
        name, eq, folder = value.partition("=")
        named = bool(eq) and LAYER.fullmatch(name)
        entries.append(f"{name}={_folder(folder)}" if named else str(_folder(value)))
    before = os.environ.get("SYNIX_SOURCE_DIR")
    os.environ["SYNIX_SOURCE_DIR"] = os.pathsep.join(entries)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SYNIX_SOURCE_DIR", None)
        else:
            os.environ["SYNIX_SOURCE_DIR"] = before


def _folder(text: str) -> Path:
    where = Path(text).expanduser().resolve()
    if not where.is_dir():
        raise click.BadParameter(f"{text} is not a folder", param_hint="--source-dir")
    return where


def _run_command(ctx, select, from_layer, full, batch, replay, as_json) -> None:
    from synix_assets.app.run import INTERRUPTED, RESUME_HINT, run_build
    from synix_assets.cli import render
    from synix_assets.app.plan import require_exports
    from synix_resources.process import interrupts
    from synix_resources.errors import BuildFailed, BuildInterrupted

    out = render.console()
    err = render.console(stderr=True)
    debug = debug_enabled(ctx)
    try:
        paths = project_paths(ctx)
        pipeline = paths.load_pipeline()
        require_exports(pipeline)
        show_bars = not as_json and out.is_terminal and not out.no_color
        progress = render.BarProgress(out) if show_bars else (None if as_json else render.PlainProgress(out))
        options = dict(select=select, from_layer=from_layer, full=full, batch=batch, replay=replay,
                       progress=progress, dagster_logs=debug)
        try:
            if show_bars:
                with progress:
                    report = run_build(paths, **options)
            else:
                report = run_build(paths, **options)
        finally:
            # However the build ended, that is the outcome: a signal from here on (a second
            # Ctrl-C, one the build saw but Python had not run the handler for yet) is ignored
            # instead of turning the one line and 130 into "Aborted!" or death by SIGINT.
            interrupts.settle()
        stopped = None
    except KeyboardInterrupt:  # before the build started, or landing as it ended
        interrupts.settle()
        stopped = BuildInterrupted(INTERRUPTED, signal_number=interrupts.signal_number(), hint=RESUME_HINT)
    except BuildInterrupted as exc:
        stopped = exc
    except BuildFailed as exc:
        if exc.report is None:
            raise
        stopped = exc
    report = stopped.report if stopped is not None else report
    if report is not None:
        if as_json:
            echo_json(report.to_json())
        else:
            render.run_summary(out, report, pipeline)
        render.skipped_inputs(err, report.skipped_inputs)
    if isinstance(stopped, BuildInterrupted):
        for layer, v in (report.layers if report is not None else {}).items():
            if v.get("unfinished"):
                err.print(f"{render.safe(layer)}: {v['unfinished']} partition(s) left to build", highlight=False)
        err.print(render.plain(stopped.one_line(), one_line=True), markup=False, highlight=False)
        ctx.exit(stopped.exit_code)
    if stopped is not None:
        render.failures(err, [f for f in report.failures if f["group_key"] != "*"])
        render.error_line(err, stopped.one_line())
        ctx.exit(1)
    bad_files = [s for s in report.skipped_inputs if "error" in s]
    if bad_files:
        render.error_line(err, f"{len(bad_files)} export file(s) could not be read; everything else "
                               "was built — fix or remove them and run again")
        ctx.exit(1)


@click.command()
@click.argument("pipeline_file", required=False, metavar="[PIPELINE_FILE]")
@click.option("--batch", is_flag=True, help="Price the calls at the batch API's rate.")
@click.option("--full", is_flag=True, help="Price rebuilding everything (what `synix run --full` would do).")
@click.option("--source-dir", "source_dirs", multiple=True, metavar="[NAME=]DIR",
              help="Plan for the exports of this folder instead of the folder pipeline.py names "
                   "(what `synix run --source-dir DIR` would do; NAME=DIR for one of several sources).")
@json_option("Print the plan as JSON.")
@project_option
@click.pass_context
def plan(ctx, pipeline_file, batch, full, source_dirs, as_json) -> None:
    """Show what `synix run` would rebuild, why, and what it would cost.

    PIPELINE_FILE: a path to the project's pipeline file plans that project, like -p with the
    file's folder (as `synix run pipeline.py` builds it).

    \b
    Example:
      synix plan
      synix plan --full --branch topical
      synix plan --json | jq .cost_usd
      synix plan mem/pipeline.py --source-dir ~/Downloads/exports
    """
    from synix_assets.cli import render
    from synix_assets.app.plan import make_plan

    if pipeline_file is not None:
        _project_of_file(ctx, pipeline_file)
    with _source_dirs(source_dirs):
        report = make_plan(project_paths(ctx), batch=batch, full=full).to_json()
    if as_json:
        echo_json(report)
    else:
        render.plan_table(render.console(), report)


@click.command()
@json_option("Print the changes as JSON (what pipeline.sync().to_json() returns).")
@project_option
@click.pass_context
def sync(ctx, as_json) -> None:
    """Compare pipeline.py with the definition last synced or built: what changed, what it
    will reprocess and cost. Records the new definition (the next sync compares with it).

    \b
    Example:
      synix sync
      synix sync --json
    """
    from synix_assets.app.sync import sync as sync_definition
    from synix_assets.cli import render
    from synix_assets.python_api.results import SyncReport

    report = SyncReport(sync_definition(project_paths(ctx)))
    if as_json:
        return echo_json(report.to_json())
    branch = report.report["branch"]
    run_with = "synix run" + ("" if branch == "main" else f" --branch {branch}")
    render.console().print(render.plain(report.text(run_with=run_with)), markup=False)


@click.command()
@click.argument("directory", required=False, default="synix-demo", type=click.Path(file_okay=False))
@click.option("--query", default="marathon", show_default=True, help="What the demo searches for.")
def demo(directory: str, query: str) -> None:
    """Run the whole story offline on bundled exports: build, search, rebuild, change the architecture.

    Creates DIRECTORY (default ./synix-demo; a numbered sibling if it already holds a project).

    \b
    Example:
      synix demo
      synix demo /tmp/mem-demo --query "sourdough"
    """
    from synix_assets.cli.demo_view import DemoView
    from synix_assets.app.demo import fresh_dir, run_demo

    view = DemoView()
    root = fresh_dir(directory)
    run_demo(root, query=query, notify=view.step, progress=view.progress)
    view.finish(root)


@click.command()
@click.argument("source", required=False)
@json_option("Print what each api source's pull did as JSON (what pipeline.pull() returns).")
@project_option
@click.pass_context
def pull(ctx, source, as_json) -> None:
    """Pull the conversations changed on the services of the pipeline's api sources into their
    mirror folders (the next `synix run` builds them; the pull sensor does this on a schedule).

    \b
    Example:
      synix pull
      synix pull webui --json
    """
    from synix_assets.app.pull import pull_sources
    from synix_assets.cli import render

    data = pull_sources(project_paths(ctx), source)
    if as_json:
        echo_json(data)
        return
    out = render.console()
    for s in data["sources"]:
        out.print(f"{render.safe(s['source'], one_line=True)}: {s['fetched']} fetched, {s['unchanged']} unchanged"
                  f"{' (resumed an interrupted pull)' if s['resumed'] else ''}")
