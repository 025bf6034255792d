"""`synix serve`, `synix mcp`, `synix ask`: the built memory for people (explorer), programs
(HTTP JSON API) and agents (MCP tools, an ask agent). Read-only unless started with
`--writes` (agent memories only); loopback unless told."""
from __future__ import annotations

import click

from synix_assets.cli.common import echo_json, json_option, project_option, project_paths
from synix_assets.serve.mcp_hosts import HOSTS
from synix_resources.settings import Settings

TOKEN_ENV = Settings.serve_token.name


def _service(ctx):
    from synix_assets.app.memory import MemoryService

    return MemoryService(project_paths(ctx))


def _listen_options(default_port: int):
    def wrap(fn):
        fn = click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
                          help="Also accept this Host (a reverse proxy's public name; docs/serve.md).")(fn)
        fn = click.option("--token", envvar=TOKEN_ENV, default=None, show_envvar=True,
                          help="Require this bearer token on every request (needed beyond loopback).")(fn)
        fn = click.option("--port", type=click.IntRange(1, 65535), default=default_port,
                          show_default=True, help="Port to listen on.")(fn)
        fn = click.option("--host", default="127.0.0.1", show_default=True,
                          help="Address to listen on; anything but loopback needs --token.")(fn)
        return fn
    return wrap


WRITES = click.option("--writes", is_flag=True,
                      help="The server is read-only unless this is given; with it, it also "
                           "accepts writes: agent memories (create_memory, update_memory, "
                           "supersede_memory, deactivate_memory, create_link) and evidence "
                           "(append_events) (docs/doors.md).")


def _check_listen(host: str, port: int, token: str | None) -> None:
    from synix_assets.web.guard import is_loopback
    from synix_assets.web.serving import check_port_free
    from synix_resources.errors import ServeError

    if not is_loopback(host) and not token:
        raise ServeError(f"listening on {host} would expose the memory to the network without a token",
                         hint=f"pass --token (or set {TOKEN_ENV}), or use an SSH tunnel (docs/serve.md)")
    check_port_free(host, port)


@click.command()
@_listen_options(8765)
@click.option("--home", type=click.Path(file_okay=False), default=None,
              help="Serve every tenant of this home under /v1/tenants/{tenant}/… (live ingest "
                   "and the memory API, bearer token per tenant; docs/live.md).")
@click.option("--no-build", is_flag=True, help="With --home: do not build closed sessions in "
                                               "this process (run `synix live drain` elsewhere).")
@WRITES
@project_option
@click.pass_context
def serve(ctx, host, port, token, allow_hosts, home, no_build, writes) -> None:
    """Serve the memory explorer and the HTTP JSON API (/v1, docs at /docs). Read-only unless
    --writes: then POST /v1/memories… and /v1/links write agent memories and POST /v1/events
    appends evidence (a read-only server answers them 403). With --home, each tenant's live ingest is the point (bearer token per
    tenant); agent-memory writes are not served there.

    \b
    Examples:
      synix serve                      # http://127.0.0.1:8765, read-only
      synix serve --writes             # agents may write memories over HTTP
      synix serve --port 9000
      SYNIX_SERVE_TOKEN=… synix serve --host 0.0.0.0
      synix serve --home ~/synix-home  # every tenant, live ingest + brief (docs/live.md)
    """
    from synix_assets.cli.render import console
    from synix_assets.serve.app import run_server

    if home is not None:
        from synix_assets.serve.home import open_home, serve_home

        if writes:
            raise click.UsageError("--writes is for one project's memory API; a home serves "
                                   "live ingest and reads (docs/doors.md)")

        tenants = open_home(home, host=host, port=port, token=token)
        names = tenants.names()
        console().print(f"Synix tenants of {tenants.root} ({len(names)}) at "
                        f"[bold]http://{host}:{port}/v1/tenants/…[/] "
                        f"({'building closed sessions' if not no_build else 'not building'}; Ctrl-C to stop)")
        return serve_home(tenants, host=host, port=port, allowed_hosts=tuple(allow_hosts),
                          build=not no_build)
    _check_listen(host, port, token)
    svc = _service(ctx)
    shown = f"[{host}]" if ":" in host else host
    console().print(f"Synix explorer for {svc.paths.root} at [bold]http://{shown}:{port}[/] "
                    f"(API: /v1, docs: /docs; Ctrl-C to stop)")
    run_server(svc, host=host, port=port, token=token, allowed_hosts=tuple(allow_hosts), writes=writes)


@click.group(invoke_without_command=True)
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio for agent hosts that start the server; http for streamable HTTP at /mcp.")
@_listen_options(8766)
@WRITES
@project_option
@click.pass_context
def mcp(ctx, transport, host, port, token, allow_hosts, writes) -> None:
    """Serve the memory's tools over MCP. Read tools (Syke's, design 003): get_memex,
    search_memories, search_evidence, get_memory, list_active_memories, get_recent_memories,
    get_memory_history, follow_links, browse_timeline, cross_reference (search_evidence and
    browse_timeline: the evidence ledger's events); and Synix's: get_map, follow, lineage,
    list_layer, get_brief, search_transcripts, browse_records. With --writes also Syke's write
    tools: create_memory, update_memory, supersede_memory, deactivate_memory, create_link, and
    the ledger's append_events; without it they are not listed and a call to one is refused.

    On stdio with no usable project (a host started it without -p, from its own folder), the
    server still answers: every tool list and call is an MCP error naming the problem and the fix.

    \b
    Examples:
      synix mcp -p ~/mem                     # stdio, e.g. in an MCP client's config
      synix mcp -p ~/mem --writes            # the agent may write memories too
      synix mcp -p ~/mem config claude-code  # the line that adds it to Claude Code (docs/hosts.md)
      synix mcp --transport http --port 8766 # http://127.0.0.1:8766/mcp
    """
    from synix_assets.serve.mcp_server import run_http, run_stdio, run_stdio_unavailable
    from synix_resources.errors import SynixError

    if ctx.invoked_subcommand is not None:
        return
    if transport == "stdio":
        try:
            service = _service(ctx)
        except SynixError as exc:
            # The host shows its user only what arrives over MCP; stderr goes to its log.
            click.echo(f"error: {exc.one_line()}", err=True)
            run_stdio_unavailable(exc.one_line())
            return
        run_stdio(service, writes=writes)
        return
    _check_listen(host, port, token)
    run_http(_service(ctx), host=host, port=port, token=token, allowed_hosts=tuple(allow_hosts),
             writes=writes)


@mcp.command("config")
@click.argument("host_app", metavar="HOST", type=click.Choice(HOSTS))
@click.option("--name", default="synix-memory", show_default=True,
              help="The server's name in the host's config.")
@click.option("--writes", is_flag=True, help="The server the host starts accepts agent-memory "
                                             "writes (`synix mcp --writes`).")
@project_option
@click.pass_context
def mcp_config(ctx, host_app, name, writes) -> None:
    """Print what starts this project's memory in an agent host, with absolute paths:
    the `claude mcp add` line for claude-code, else the JSON for the host's config file
    (claude-desktop: claude_desktop_config.json; cursor: .cursor/mcp.json; vscode:
    .vscode/mcp.json; mcp-json: a project's .mcp.json). docs/hosts.md says where each goes.

    \b
    Examples:
      synix mcp -p ~/mem config claude-code       # then run the printed line
      synix mcp -p ~/mem config claude-desktop
    """
    from synix_assets.serve.mcp_hosts import host_config

    paths = project_paths(ctx)
    branch = (ctx.obj or {}).get("branch")
    click.echo(host_config(host_app, paths.root, name=name, branch=branch, writes=writes))


@click.command()
@click.argument("question")
@click.option("--offline", is_flag=True, help="Do not call a model: show the best evidence only.")
@click.option("--model", default=None, help="Model for the agent (default: SYNIX_LLM_MODEL or Claude Sonnet).")
@click.option("--max-steps", type=click.IntRange(1, 50), default=8, show_default=True,
              help="Most tool calls the agent may make.")
@json_option("Print the answer, citations and steps as JSON.")
@project_option
@click.pass_context
def ask(ctx, question, offline, model, max_steps, as_json) -> None:
    """Ask the memory a question; the answer cites record ids and source conversations.

    With ANTHROPIC_API_KEY set an agent reads the memory's map and navigates it with tools;
    without it (or with --offline) no answer is generated and the best evidence is shown.

    \b
    Examples:
      synix ask "when is my marathon?"
      synix ask "what did I decide about the database?" --offline --json
    """
    from synix_assets.cli import render
    from synix_assets.serve.ask import ask as run_ask

    svc = _service(ctx)
    try:
        result = run_ask(svc, question, model=model, max_steps=max_steps, offline=offline or None)
    finally:
        svc.close()
    if as_json:
        echo_json(result, ascii=False)
        return
    render.ask_result(render.console(), result)
