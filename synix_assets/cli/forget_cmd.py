"""`synix forget`: remove a conversation or an export file and everything built from it."""
from __future__ import annotations

import json

import click

from synix_assets.cli.common import project_option, project_paths


@click.command()
@click.argument("target")
@click.option("--dry-run", is_flag=True, help="List what would be deleted and rebuilt; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the report.")
@project_option
@click.pass_context
def forget(ctx, target: str, dry_run: bool, as_json: bool) -> None:
    """Forget a conversation (by id) or a whole export file, with everything derived from it.

    Deletes its transcripts, episodes and every artifact built from them, takes them out of the
    search index and the LLM response cache, rewrites or deletes the export, rebuilds the
    rollups, core and context document without them, and purges free pages of every database.

    \b
    Examples:
      synix forget 347c7a0d-a98c-5ab8-bfcf-c1de69c3734a --dry-run
      synix forget exports/old_export.json
      synix forget 347c7a0d-a98c-5ab8-bfcf-c1de69c3734a --json
    """
    from synix_assets.cli import render
    from synix_assets.engine.forget import forget as forget_target

    report = forget_target(project_paths(ctx), target, dry_run=dry_run)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, default=str))
    else:
        out = render.console()
        verb = "would delete" if dry_run else "deleted"
        out.print(f"[bold]{target}[/]: {len(report.conversation_ids)} conversation(s), "
                  f"{verb} {len(report.artifacts)} artifact(s)")
        for art in report.artifacts[:50]:
            out.print(f"  {art['layer']:<12} {art['id']}  {art['group_key']}")
        if len(report.artifacts) > 50:
            out.print(f"  … and {len(report.artifacts) - 50} more")
        for f in report.files_deleted:
            out.print(f"  export {verb}: {f}")
        for f in report.files_rewritten:
            out.print(f"  export rewritten without it: {f}")
        if not dry_run and report.rebuild is not None:
            out.print(f"rebuilt without it: {report.rebuild.get('layers', {})}")
    if report.rebuild_error:
        raise click.ClickException(report.rebuild_error)
