"""`synix evidence …`: the evidence ledger (design 003's L1) from the terminal; each command is
the Python action of the same name (`Pipeline.append_events`, …) and prints its answer
(`--json`: as Python returns it)."""
from __future__ import annotations

import json

import click

from synix_assets.cli.common import WHEN, echo_json, json_option, project_option, project_paths
from synix_assets.cli.render.text import plain

SOURCE = click.option("--source", metavar="SOURCE", help="Only events of this source (chatgpt, live, github, …).")
SINCE = click.option("--since", type=WHEN, metavar="WHEN", help="Only events at or after this time (ISO date/time).")
BEFORE = click.option("--before", type=WHEN, metavar="WHEN", help="Only events before this time (ISO date/time).")


@click.group("evidence")
def evidence_group() -> None:
    """The evidence ledger: append events, search them, browse the timeline, resolve ids."""


def _pipeline(ctx):
    from synix_assets.python_api.pipeline import Pipeline

    return Pipeline.load(project_paths(ctx).root)  # the ledger is the project's, every branch's


def _print_events(events: list[dict]) -> None:
    for ev in events:
        when = ev["timestamp"] or "(no time)"
        text = " ".join(ev["content"].split())
        click.echo(f"{ev['id']}  {when}  {plain(ev['source'])}/{plain(ev['event_type'])}  "
                   f"{plain(text[:100])}{'…' if len(text) > 100 else ''}")


@evidence_group.command("append_events")
@click.argument("events", metavar="FILE", type=click.File("r", encoding="utf-8"))
@json_option("Print the answer (counts and every event's id) as JSON.")
@project_option
@click.pass_context
def append_events(ctx, events, as_json) -> None:
    """Append the events in FILE (a JSON array or JSON lines; `-`: stdin).

    \b
    Example:
      echo '{"source": "github", "event_type": "commit", "content": "Fix login"}' \\
        | synix evidence append_events -
    """
    from synix_resources.errors import EvidenceRefused

    file = events  # the vocabulary's name (`events`); here the file they are read from
    text = file.read()
    try:
        data = json.loads(text) if text.lstrip().startswith("[") else \
            [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError as err:
        raise EvidenceRefused(f"{file.name}: not a JSON array or JSON lines ({err})",
                              hint="give one JSON object per line, or a JSON array of objects") from None
    answer = _pipeline(ctx).append_events(data)
    if as_json:
        echo_json(answer)
        return
    click.echo(f"appended {answer['appended']}, already held {answer['existing']}, "
               f"forgotten {answer['forgotten']}")
    for ident in answer["ids"]:
        click.echo(ident)


@evidence_group.command("search_evidence")
@click.argument("query")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@SOURCE
@SINCE
@BEFORE
@json_option("Print the events found as JSON.")
@project_option
@click.pass_context
def search_evidence(ctx, query, limit, source, since, before, as_json) -> None:
    """Events matching QUERY (FTS5/BM25, best first)."""
    answer = _pipeline(ctx).search_evidence(query, limit=limit, source=source, since=since, before=before)
    if as_json:
        echo_json(answer)
    else:
        _print_events(answer["events"])


@evidence_group.command("browse_timeline")
@click.option("--limit", type=click.IntRange(1, 10000), default=50, show_default=True)
@SOURCE
@SINCE
@BEFORE
@json_option("Print the events as JSON.")
@project_option
@click.pass_context
def browse_timeline(ctx, limit, source, since, before, as_json) -> None:
    """Events in a time window, oldest first."""
    answer = _pipeline(ctx).browse_timeline(since=since, before=before, source=source, limit=limit)
    if as_json:
        echo_json(answer)
    else:
        _print_events(answer["events"])


@evidence_group.command("resolve_events")
@click.argument("ids", nargs=-1, required=True)
@json_option("Print found events and missing ids as JSON.")
@project_option
@click.pass_context
def resolve_events(ctx, ids, as_json) -> None:
    """Which of IDS the ledger holds; exits 1 when any is missing."""
    answer = _pipeline(ctx).resolve_events(list(ids))
    if as_json:
        echo_json(answer)
    else:
        for ev in answer["found"]:
            click.echo(f"found    {ev['id']}")
        for ident in answer["missing"]:
            click.echo(f"missing  {plain(ident)}")
    if answer["missing"]:
        ctx.exit(1)


@evidence_group.command("sync_evidence")
@json_option("Print what was appended and the ledger's counts as JSON.")
@project_option
@click.pass_context
def sync_evidence(ctx, as_json) -> None:
    """Append what is new in the exports and live inboxes (every `synix run` does this first)."""
    answer = _pipeline(ctx).sync_evidence()
    if as_json:
        echo_json(answer)
        return
    ledger = answer["ledger"]
    click.echo(f"appended {answer['appended']} event(s) ({answer['files_read']} file(s) read, "
               f"{answer['files_unchanged']} unchanged, {answer['turns_read']} live turn(s)); "
               f"the ledger holds {ledger['events']:,}: "
               + ", ".join(f"{plain(k)} {v:,}" for k, v in ledger["sources"].items()))
    for line in answer["failed"]:
        click.echo(f"warning: {plain(line)}", err=True)
