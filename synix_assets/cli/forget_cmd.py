"""`synix purge` (the design's §11.3; `pipeline.purge(id)` in Python) and `synix forget`, its
older name: remove a source record, a conversation or an export file and everything built from
it. Both are one command body (`_purge`) and one report printer (`_print`)."""
from __future__ import annotations

import click

from synix_assets.cli.common import echo_json, json_option, project_option, project_paths

_WHAT_IT_DOES = """
    Deletes its transcripts, episodes and every artifact built from them, takes them out of the
    search index, the LLM response cache and Dagster's history, rewrites or deletes the export
    (a link is removed, never followed), rebuilds the rollups, core and context document without
    them, purges free pages of every database and checks that nothing is left. Interrupted, it
    stays pending: `synix {name}` without a target (or the next `synix run`) finishes it.
"""


def _purge_options(fn):
    fn = click.argument("target", required=False)(fn)
    fn = click.option("--dry-run", is_flag=True, help="List what would be deleted and rebuilt; change nothing.")(fn)
    fn = json_option("Print one JSON object with the report (what pipeline.purge(...).to_json() returns).")(fn)
    return click.pass_context(project_option(fn))


@click.command()
@_purge_options
def purge(ctx, target: str | None, dry_run: bool, as_json: bool) -> None:
    """Purge a source record (by record id), a conversation (by id) or a whole export file, with
    everything derived from it, on every branch.
    {what}
    \b
    Examples:
      synix purge transcripts-3f2a9c --dry-run
      synix purge 347c7a0d-a98c-5ab8-bfcf-c1de69c3734a --json
      synix purge exports/old_export.json
      synix purge            # finish a purge that was interrupted
    """
    _purge(ctx, target, dry_run, as_json)


@click.command()
@_purge_options
def forget(ctx, target: str | None, dry_run: bool, as_json: bool) -> None:
    """The older name of `synix purge`: forget a conversation (by id), a source record or a whole
    export file, with everything derived from it.
    {what}
    \b
    Examples:
      synix forget 347c7a0d-a98c-5ab8-bfcf-c1de69c3734a --dry-run
      synix forget exports/old_export.json
      synix forget            # finish a forget that was interrupted
    """
    _purge(ctx, target, dry_run, as_json)


purge.help = purge.help.replace("{what}", _WHAT_IT_DOES.format(name="purge"))
forget.help = forget.help.replace("{what}", _WHAT_IT_DOES.format(name="forget"))


def _purge(ctx, target: str | None, dry_run: bool, as_json: bool) -> None:
    from synix_assets.app.forget import purge as purge_target

    if target is not None and not target.strip():
        raise click.BadParameter("the target is empty: give a record id, a conversation id or an "
                                 "export file (or nothing, to finish an interrupted purge)",
                                 param_hint="TARGET")
    report = purge_target(project_paths(ctx), target, dry_run=dry_run)
    if as_json:
        echo_json(report.to_json())
    else:
        _print(report)
    if report.rebuild_error:
        raise click.ClickException(report.rebuild_error)


def _print(report) -> None:
    from rich.markup import escape

    from synix_assets.cli import render

    out = render.console()
    for done in report.finished_pending:
        out.print(f"finished the interrupted forget of {escape(done)}")
    if report.nothing_pending:
        out.print("no forget is pending" + (" (dry run)" if report.dry_run else ""))
        return
    if report.already_forgotten:
        out.print(f"{escape(report.target)} was already forgotten; nothing to do")
        return
    verb = "would delete" if report.dry_run else "deleted"
    resumed = " (finished an interrupted forget)" if report.resumed else ""
    out.print(f"[bold]{escape(report.target)}[/]: {len(report.conversation_ids)} conversation(s), "
              f"{verb} {len(report.artifacts)} artifact(s){resumed}")
    for art in report.artifacts[:50]:
        out.print(f"  {escape(art['layer']):<12} {art['id']}  {escape(art['group_key'])}")
    if len(report.artifacts) > 50:
        out.print(f"  … and {len(report.artifacts) - 50} more")
    for f in report.files_deleted:
        out.print(f"  export {verb}: {escape(f)}")
    for f in report.files_rewritten:
        out.print(f"  export {'would be ' if report.dry_run else ''}rewritten without it: {escape(f)}")
    link_verb = "would remove" if report.dry_run else "removed"
    for link in report.links_removed:
        out.print(f"  {link_verb} the link {escape(link['link'])} (it points to "
                  f"{escape(str(link['points_to']))}; that file is not Synix's and was not touched)")
    for f in report.files_outside:
        out.print(f"  left untouched (outside the project): {escape(f['path'])} — it still holds "
                  f"the conversation; Synix will not read it again")
    if not report.dry_run and report.rebuild is not None:
        out.print(f"rebuilt without it: {report.rebuild.get('layers', {})}")
    if not report.dry_run:
        out.print(f"verified: no trace in {report.verified_files} project file(s)")
