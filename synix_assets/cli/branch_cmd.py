"""`synix branch …` and `synix gc`: try a memory architecture beside main, compare, promote."""
from __future__ import annotations

import os
import subprocess

import click

from rich.markup import escape as safe

from synix_assets.app.init import TEMPLATES
from synix_assets.cli.common import echo_json, json_option, project_option, project_paths


@click.group("branch")
def branch_group() -> None:
    """Branches: a second memory architecture beside main, sharing every common artifact.

    \b
    Example:
      synix branch create topical
      synix branch edit topical          # change its pipeline.py
      synix run --branch topical         # builds only what differs from main
      synix branch diff topical
      synix search marathon --branch topical
      synix branch promote topical       # main now serves topical's memory
    """


@branch_group.command("create")
@click.argument("name")
@click.option("--from", "from_branch", metavar="BRANCH", help="Start from this branch (default: the current one).")
@click.option("--pipeline", "pipeline_file", type=click.Path(dir_okay=False, exists=True),
              help="Start from this pipeline file instead of the parent's.")
@click.option("--template", type=click.Choice(TEMPLATES), default=None,
              help="Start from a bundled template's pipeline (as `synix init --template`).")
@json_option("Print the result as JSON.")
@project_option
@click.pass_context
def create(ctx, name, from_branch, pipeline_file, template, as_json) -> None:
    """Create a branch: instant, copies no artifact, calls no LLM.

    \b
    Example:
      synix branch create topical --pipeline topical.py
      synix branch create synapse --template synapse
      synix branch create syke --template syke
    """
    from synix_assets.cli import render
    from synix_assets.app.branches import create_branch

    data = create_branch(project_paths(ctx), name, from_branch=from_branch, pipeline_file=pipeline_file,
                         template=template)
    if as_json:
        return echo_json(data)
    out = render.console()
    out.print(f"Created branch [bold]{safe(name)}[/] from {safe(data['from'])}.")
    out.print(f"Its pipeline: {safe(data['pipeline'])}")
    out.print(f"Next: edit it, then `synix run --branch {safe(name)}`")


@branch_group.command("list")
@json_option("Print the branches as JSON.")
@project_option
@click.pass_context
def list_(ctx, as_json) -> None:
    """List branches (the current one is starred).

    \b
    Example:
      synix branch list --json
    """
    from synix_assets.cli import render
    from synix_assets.app.branches import list_branches

    data = list_branches(project_paths(ctx))
    if as_json:
        return echo_json(data)
    out = render.console()
    for b in data:
        mark = "*" if b["current"] else " "
        last = b["last_run"]["status"] if b["last_run"] else "never run"
        out.print(f"{mark} {safe(b['name']):<24} {b['artifacts']:>6} artifacts   {last}"
                  f"{'' if b['built'] or b['name'] == 'main' else '   (not built)'}")


@branch_group.command("switch")
@click.argument("name")
@json_option("Print the result as JSON.")
@project_option
@click.pass_context
def switch(ctx, name, as_json) -> None:
    """Make NAME the branch commands use when no --branch is given.

    \b
    Example:
      synix branch switch topical
    """
    from synix_assets.app.branches import switch_branch

    data = switch_branch(project_paths(ctx), name)
    if as_json:
        return echo_json(data, indent=None, default=None)
    click.echo(f"Now on branch {name}.")


@branch_group.command("delete")
@click.argument("name")
@json_option("Print the result as JSON.")
@project_option
@click.pass_context
def delete(ctx, name, as_json) -> None:
    """Delete a branch's pointers and projections (artifacts go with `synix gc`).

    \b
    Example:
      synix branch delete topical && synix gc
    """
    from synix_assets.app.branches import delete_branch

    data = delete_branch(project_paths(ctx), name)
    if as_json:
        return echo_json(data)
    click.echo(f"Deleted branch {name} ({data['pointers_removed']} pointers); {data['hint']}.")


@branch_group.command("edit")
@click.argument("name")
@click.option("--editor", is_flag=True, help="Open it in $EDITOR instead of printing its path.")
@json_option("Print the path as JSON.")
@project_option
@click.pass_context
def edit(ctx, name, editor, as_json) -> None:
    """Print (or open) the branch's own pipeline.py.

    \b
    Example:
      $EDITOR "$(synix branch edit topical)"
    """
    paths = project_paths(ctx).on_branch(name)
    from synix_assets.app.workspace import check_branch_usable

    check_branch_usable(paths)
    if editor:
        subprocess.run([os.environ.get("EDITOR", "vi"), str(paths.pipeline_file)], check=False)
        return
    if as_json:
        return echo_json({"branch": name, "pipeline": str(paths.pipeline_file)}, indent=None, default=None)
    click.echo(str(paths.pipeline_file))


@branch_group.command("diff")
@click.argument("name")
@click.option("--base", default="main", show_default=True, help="Branch to compare against.")
@click.option("--record", metavar="ID", help="Text diff of one record against its counterpart on --base.")
@json_option("Print the diff as JSON.")
@project_option
@click.pass_context
def diff(ctx, name, base, record, as_json) -> None:
    """Changed steps, and per layer the added/removed/changed records.

    \b
    Examples:
      synix branch diff topical
      synix branch diff topical --record episodes-3f2a…
    """
    from synix_assets.cli import render
    from synix_assets.app.branches import diff_branch, diff_record

    paths = project_paths(ctx)
    data = diff_record(paths, name, record, base=base) if record else diff_branch(paths, name, base=base)
    if as_json:
        return echo_json(data)
    out = render.console()
    if record:
        out.print(safe(data["diff"]) if data["diff"] else "identical")
        return
    out.print(f"[bold]{safe(name)}[/] against [bold]{safe(base)}[/]")
    out.print(f"changed steps: {', '.join(safe(s) for s in data['changed_steps']) or '(none)'}")
    for s in data["steps"] or [{"step": "(none)", "change": "no step changed", "kind": ""}]:
        extra = f" ({', '.join(s['what'])})" if s.get("what") else ""
        out.print(f"  step {safe(s['step'])}: {s['change']}{extra}")
    for layer in data["layers"]:
        out.print(f"  {safe(layer['layer']):<16} +{len(layer['added'])} -{len(layer['removed'])} "
                  f"~{len(layer['changed'])} ={layer['shared']}")


@branch_group.command("promote")
@click.argument("name")
@click.option("--force", is_flag=True, help="Promote even if the branch has no complete build.")
@json_option("Print the result as JSON.")
@project_option
@click.pass_context
def promote(ctx, name, force, as_json) -> None:
    """main serves NAME's memory (pipeline, artifacts, projections); no LLM calls.

    \b
    Examples:
      synix branch promote topical
      synix branch promote main@previous     # undo
    """
    from synix_assets.app.branches import promote_branch

    data = promote_branch(project_paths(ctx), name, force=force)
    if as_json:
        return echo_json(data)
    click.echo(f"main now serves {name}'s memory. Undo: {data['undo']}")


@click.command("gc")
@click.option("--dry-run", is_flag=True, help="Only count what would be removed.")
@json_option("Print the result as JSON.")
@project_option
@click.pass_context
def gc(ctx, dry_run, as_json) -> None:
    """Remove artifacts no branch points at (never one a branch still uses).

    \b
    Example:
      synix gc --dry-run
    """
    from synix_assets.app.branches import gc as collect

    data = collect(project_paths(ctx), dry_run=dry_run)
    if as_json:
        return echo_json(data)
    verb = "would remove" if dry_run else "removed"
    click.echo(f"{data['unreferenced']} unreferenced artifact(s); {verb} "
               f"{data['unreferenced'] if dry_run else data['removed']}.")
