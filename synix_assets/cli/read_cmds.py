"""Commands that read a built project: status, stats, search, lineage, get, runs."""
from __future__ import annotations

import click

from synix_assets.cli.common import WHEN, echo_json, json_option, project_option, project_paths


@click.command()
@json_option("Print the status as JSON.")
@project_option
@click.pass_context
def status(ctx, as_json) -> None:
    """Per layer: artifacts, stale partitions, last build, cache hits; projections' state.

    \b
    Example:
      synix status
      synix status --json
    """
    from synix_assets.cli import render
    from synix_assets.app.status import project_status

    data = project_status(project_paths(ctx))
    if as_json:
        echo_json(data)
    else:
        render.status_table(render.console(), data)


@click.command()
@json_option("Print the records per step as JSON (what pipeline.stats() returns).")
@project_option
@click.pass_context
def stats(ctx, as_json) -> None:
    """Records per step: how many each step holds now and when it was last built.

    \b
    Example:
      synix stats
      synix stats --branch topical --json
    """
    from synix_assets.cli import render
    from synix_assets.app.stats import stats as step_stats

    data = step_stats(project_paths(ctx))
    if as_json:
        echo_json(data)
    else:
        render.stats_table(render.console(), data)


@click.command()
@click.argument("query")
@click.option("--step", "step", metavar="STEP", multiple=True,
              help="A step to search (repeatable; default: all indexed, best altitude per lineage).")
@click.option("--layers", help="The older spelling of --step: comma-separated steps.")
@click.option("--mode", type=click.Choice(["fts", "semantic", "hybrid"]), default="fts", show_default=True,
              help="Full-text, embedding or combined ranking (semantic falls back to fts without the model).")
@click.option("--exact", is_flag=True, help="Find the literal phrase in the source transcripts.")
@click.option("--leaves", is_flag=True,
              help="Rank the source transcripts themselves, below every summary: one hit per matched message.")
@click.option("--limit", "-k", type=click.IntRange(1, 1000), default=10, show_default=True, help="Number of hits.")
@click.option("--since", metavar="DATE",
              help="Only artifacts dated on or after DATE (YYYY[-MM[-DD]] or an ISO date-time).")
@click.option("--until", metavar="DATE",
              help="Only artifacts dated on or before DATE (YYYY[-MM[-DD]] or an ISO date-time).")
@click.option("--period", metavar="PERIOD",
              help="Only artifacts of this period (YYYY-MM, YYYY-Www or YYYY-Qn), e.g. a month's rollup.")
@click.option("--conversation", metavar="ID",
              help="Only artifacts built from this conversation (its transcript, episode, rollups).")
@click.option("--as-of", type=WHEN, metavar="WHEN",
              help="What the memory held then (ISO date/time): agent memories valid at that time, records dated up to it.")
@json_option("Print the hits as JSON.")
@project_option
@click.pass_context
def search(ctx, query, step, layers, mode, exact, leaves, limit, since, until, period,
           conversation, as_of, as_json) -> None:
    """Search the memory; every hit shows where it came from.

    \b
    Examples:
      synix search "that rust conversation"
      synix search marathon --step episodes --limit 3
      synix search marathon --step episodes --step monthly
      synix search "half marathon" --exact --json
      synix search "which crampons" --leaves --mode hybrid
      synix search marathon --period 2025-03 --since 2025-03-10
    """
    from synix_assets.cli import render
    from synix_assets.app.query import search_json, search_view
    from synix_resources.search.filters import check_filters

    # a bad filter value is wrong whatever the project holds
    check_filters(since=since, until=until, period=period, conversation=conversation)
    named = [*(s.strip() for s in step), *(l.strip() for l in (layers or "").split(","))]
    if any(not s.strip() for s in step):
        raise click.BadParameter("a step name is empty", param_hint="--step")
    layer_list = list(dict.fromkeys(s for s in named if s)) or None
    paths = project_paths(ctx)
    if as_of is not None:
        from synix_assets.app.memory.agent import memories_as_of

        memories, when = memories_as_of(paths, query, as_of, limit)
        until = until or when
    data = search_view(paths, query, layers=layer_list, mode=mode, exact=exact, limit=limit,
                       since=since, until=until, trees=not as_json, leaves=leaves, period=period,
                       conversation=conversation)
    if as_of is not None:
        data.update(memories=memories, as_of=when)
    if as_json:
        echo_json(search_json(data))
    else:
        render.search_results(render.console(), data)


@click.command()
@click.argument("artifact_id")
@json_option("Print the tree as nested JSON.")
@project_option
@click.pass_context
def lineage(ctx, artifact_id, as_json) -> None:
    """Show the provenance tree of an artifact down to the source messages.

    ARTIFACT_ID may be a unique prefix (6+ characters).

    \b
    Example:
      synix lineage core-3f2a9c
    """
    from synix_assets.cli import render
    from synix_assets.app.query import lineage_view

    tree = lineage_view(project_paths(ctx), artifact_id)
    if as_json:
        echo_json(tree)
    else:
        render.console().print(render.lineage_tree(tree))


@click.command()
@click.argument("artifact_id")
@click.option("--as-of", type=WHEN, metavar="WHEN", help="The version current then (ISO date/time); a memory id (mem-…) gives the agent memory.")
@json_option("Print the artifact as JSON.")
@project_option
@click.pass_context
def get(ctx, artifact_id, as_of, as_json) -> None:
    """Show one artifact: content, metadata, audit (provider, model, tokens, cost), parents.

    ARTIFACT_ID may be a unique prefix (6+ characters).

    \b
    Example:
      synix get episodes-1a2b3c
    """
    from synix_assets.cli import render
    from synix_assets.app.query import artifact_view

    if as_of is not None or artifact_id.startswith("mem-"):
        from synix_assets.app.memory import MemoryService

        svc = MemoryService(project_paths(ctx))
        try:
            echo_json(svc.record(artifact_id, as_of=as_of), ascii=False)
        finally:
            svc.close()
        return
    art = artifact_view(project_paths(ctx), artifact_id)
    if as_json:
        echo_json(art)
    else:
        render.artifact_details(render.console(), art)


@click.command()
@click.argument("run_id", required=False)
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True, help="How many runs to list.")
@json_option("Print as JSON.")
@project_option
@click.pass_context
def runs(ctx, run_id, limit, as_json) -> None:
    """List recent builds, or show one build's per-layer statistics.

    \b
    Examples:
      synix runs
      synix runs 9f3c2a
    """
    from synix_assets.cli import render
    from synix_assets.app.query import runs_view

    data = runs_view(project_paths(ctx), run_id, limit=limit)
    if as_json:
        echo_json(data)
    elif run_id is None:
        render.runs_table(render.console(), data["runs"])
    else:
        render.run_details(render.console(), data)
