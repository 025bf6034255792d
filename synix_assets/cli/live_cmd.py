"""`synix tenant create|list|delete` and `synix live status|drain`: tenants of a home and the
delivery of their live sessions to the build (docs/live.md)."""
from __future__ import annotations

import click
from rich.markup import escape as safe

from synix_assets.cli.common import echo_json, json_option, project_dir_option

HOME_ENV = "SYNIX_HOME"


def _home_option(required: bool):
    return click.option("--home", type=click.Path(file_okay=False), envvar=HOME_ENV, show_envvar=True,
                        required=required, help="The tenants home folder (made on first `tenant create`).")


def _home(path):
    from synix_assets.app.tenants import TenantHome

    return TenantHome(path)


@click.group("tenant")
def tenant_group() -> None:
    """Tenants: one memory each (its own inbox, store, index, projections), one API token each,
    all served by `synix serve --home DIR` under /v1/tenants/{tenant}/….

    \b
    Example:
      synix tenant create acme --home ~/synix-home     # prints acme's token once
      synix serve --home ~/synix-home
      curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8765/v1/tenants/acme/brief
    """


@tenant_group.command("create")
@click.argument("name")
@_home_option(True)
@json_option("Print the tenant and its token as JSON.")
def create(name, home, as_json) -> None:
    """Create a tenant and print its API token (shown once; only its hash is stored).

    \b
    Example:
      synix tenant create acme --home ~/synix-home --json
    """
    h = _home(home)
    try:
        data = h.create(name)
    finally:
        h.close()
    if as_json:
        return echo_json(data, ascii=False)
    from synix_assets.cli import render

    out = render.console()
    out.print(f"Created tenant [bold]{safe(name)}[/] in {safe(data['project'])}")
    out.print(f"Token (shown once, keep it secret): [bold]{safe(data['token'])}[/]")


@tenant_group.command("list")
@_home_option(True)
@json_option("Print the tenants as JSON.")
def list_(home, as_json) -> None:
    """List the tenants of a home with their live delivery counts.

    \b
    Example:
      synix tenant list --home ~/synix-home
    """
    from synix_assets.app.live_status import home_status

    rows = home_status(_home(home))
    if as_json:
        return echo_json(rows, ascii=False)
    _print_status(rows)


@tenant_group.command("delete")
@click.argument("name")
@_home_option(True)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option("Print the result as JSON.")
def delete(name, home, yes, as_json) -> None:
    """Delete a tenant: its token stops working, everything of it is removed, and the home is
    checked for leftovers (like `synix forget`).

    \b
    Example:
      synix tenant delete acme --home ~/synix-home --yes
    """
    if not yes and not as_json:
        click.confirm(f"Forget everything of tenant {name!r}?", abort=True)
    h = _home(home)
    try:
        data = h.delete(name)
    finally:
        h.close()
    if as_json:
        return echo_json(data, ascii=False)
    click.echo(f"Deleted tenant {name}: its folder is gone and the registry holds no trace of it.")


@click.group("live")
def live_group() -> None:
    """Live memory: turns posted to /v1/tenants/{tenant}/ingest, sessions, the outbox to the build.

    \b
    Example:
      synix live status --home ~/synix-home
      synix live drain -p ~/synix-home/tenants/acme     # build what is due, now
    """


@live_group.command("status")
@_home_option(False)
@project_dir_option
@json_option("Print the counts as JSON.")
@click.pass_context
def status(ctx, home, as_json) -> None:
    """Outbox counts per tenant (pending / building / built / dead), open sessions, turns, the
    next retry and the dead letters' reasons.

    \b
    Example:
      synix live status --home ~/synix-home --json
    """
    from synix_assets.app.live_status import home_status, project_status

    rows = home_status(_home(home)) if home else [project_status(_paths(ctx))]
    if as_json:
        return echo_json(rows, ascii=False)
    _print_status(rows)


@live_group.command("drain")
@_home_option(False)
@project_dir_option
@json_option("Print what was built as JSON.")
@click.pass_context
def drain_cmd(ctx, home, as_json) -> None:
    """Close idle sessions and build every due batch now, through the live sensor and
    synix_build_all (what `synix serve --home` does in the background).

    \b
    Example:
      synix live drain --home ~/synix-home
    """
    from synix_assets.live.worker import drain

    if home:
        h = _home(home)
        results = [{"tenant": n, **drain(h.paths(n), lock_timeout_s=60)} for n in h.names()]
        h.close()
    else:
        results = [drain(_paths(ctx), lock_timeout_s=60)]
    if as_json:
        return echo_json(results, ascii=False)
    for r in results:
        ok = sum(1 for b in r["builds"] if b["success"])
        click.echo(f"{r.get('tenant') or r['memory']}: {len(r['builds'])} build(s), {ok} succeeded"
                   + (f" ({r['skip_reason']})" if r.get("skip_reason") else ""))


def _paths(ctx):
    from synix_assets.cli.common import project_paths

    return project_paths(ctx)


def _print_status(rows: list[dict]) -> None:
    from rich.table import Table

    from synix_assets.cli import render

    table = Table("tenant", "open", "pending", "building", "built", "dead", "turns", "next retry")
    for r in rows:
        table.add_row(safe(r["tenant"]), str(r["open_sessions"]), str(r["pending"]), str(r["building"]),
                      str(r["built"]), str(r["dead"]), str(r["turns"]), safe(r["next_attempt_at"] or "-"))
    out = render.console()
    out.print(table)
    for r in rows:
        for d in r["dead_letters"]:
            out.print(f"dead: {safe(r['tenant'])}/{safe(d['session_id'])} v{d['version']}: {safe(d['reason'] or '')}")
        if r.get("last_error") and r["pending"]:
            out.print(f"retrying {safe(r['tenant'])}: {safe(r['last_error'])}")
