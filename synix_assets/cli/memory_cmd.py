"""`synix memory …`: agent-written memories from the terminal (Syke's tools), each the
application layer's call and its answer printed (`--json`: as the Python API returns it)."""
from __future__ import annotations

import click

from synix_assets.cli.common import echo_json, json_option, project_option, project_paths

EVIDENCE = click.option("--evidence", "evidence", metavar="RECORD_ID", multiple=True,
                        help="A record the memory is drawn from (repeat for several).")
VALID_FROM = click.option("--valid-from", metavar="WHEN", help="When it became true (ISO date/time; default now).")
AS_OF = click.option("--as-of", metavar="WHEN", help="What was held at that time (ISO date/time).")


@click.group("memory")
def memory_group() -> None:
    """Agent-written memories: create, update, supersede, deactivate, link, and read them back."""


def _write(ctx, method: str, *args, as_json: bool, **kwargs) -> None:
    from synix_assets.app.agent_memory import MemoryWriter

    answer = getattr(MemoryWriter(project_paths(ctx)), method)(*args, **kwargs)
    if as_json:
        echo_json(answer)
    else:
        made = answer.get("new_id") or answer.get("link_id") or answer.get("memory_id")
        state = "" if answer["applied"] else " (logged; the next `synix run` makes the record)"
        click.echo(f"{answer['op']}: {made}{state}")


def _read(ctx, method: str, *args, **kwargs) -> None:
    from synix_assets.app.memory import MemoryService

    svc = MemoryService(project_paths(ctx))
    try:
        echo_json(getattr(svc, method)(*args, **kwargs), ascii=False)
    finally:
        svc.close()


@memory_group.command("create")
@click.argument("content")
@EVIDENCE
@VALID_FROM
@json_option("Print the answer as JSON.")
@project_option
@click.pass_context
def create(ctx, content, evidence, valid_from, as_json) -> None:
    """Write a new memory citing its evidence: synix memory create "Lives in Berlin" --evidence transcripts-1a2b3c"""
    _write(ctx, "create_memory", content, evidence=list(evidence), valid_from=valid_from, as_json=as_json)


@memory_group.command("update")
@click.argument("memory_id")
@click.argument("content")
@EVIDENCE
@VALID_FROM
@json_option("Print the answer as JSON.")
@project_option
@click.pass_context
def update(ctx, memory_id, content, evidence, valid_from, as_json) -> None:
    """Edit a memory in place (a new version of it)."""
    _write(ctx, "update_memory", memory_id, content, evidence=list(evidence), valid_from=valid_from,
           as_json=as_json)


@memory_group.command("supersede")
@click.argument("memory_id")
@click.argument("content")
@click.option("--reason", required=True, help="Why the memory is replaced.")
@EVIDENCE
@VALID_FROM
@json_option("Print the answer as JSON.")
@project_option
@click.pass_context
def supersede(ctx, memory_id, content, reason, evidence, valid_from, as_json) -> None:
    """Replace a memory by a new one; the old one stays in its history."""
    _write(ctx, "supersede_memory", memory_id, content, reason, evidence=list(evidence),
           valid_from=valid_from, as_json=as_json)


@memory_group.command("deactivate")
@click.argument("memory_id")
@click.option("--reason", required=True, help="Why it is no longer true.")
@VALID_FROM
@json_option("Print the answer as JSON.")
@project_option
@click.pass_context
def deactivate(ctx, memory_id, reason, valid_from, as_json) -> None:
    """Retire a memory (still readable in its history)."""
    _write(ctx, "deactivate_memory", memory_id, reason, valid_from=valid_from, as_json=as_json)


@memory_group.command("link")
@click.argument("source_id")
@click.argument("target_id")
@click.option("--reason", required=True, help="Why the two belong together.")
@json_option("Print the answer as JSON.")
@project_option
@click.pass_context
def link(ctx, source_id, target_id, reason, as_json) -> None:
    """Link two memories with a reason."""
    _write(ctx, "create_link", source_id, target_id, reason, as_json=as_json)


@memory_group.command("get")
@click.argument("memory_id")
@AS_OF
@project_option
@click.pass_context
def get(ctx, memory_id, as_of) -> None:
    """One memory as JSON (the version held at --as-of)."""
    _read(ctx, "record", memory_id, as_of=as_of)


@memory_group.command("history")
@click.argument("memory_id")
@project_option
@click.pass_context
def history(ctx, memory_id) -> None:
    """The supersession chain through a memory, as JSON."""
    _read(ctx, "memory_history", memory_id)


@memory_group.command("links")
@click.argument("memory_id")
@project_option
@click.pass_context
def links(ctx, memory_id) -> None:
    """The memories linked to one, with reasons, as JSON."""
    _read(ctx, "follow_links", memory_id)


@memory_group.command("xref")
@click.argument("query")
@AS_OF
@click.option("--limit", "-k", type=click.IntRange(1, 1000), default=10, show_default=True)
@project_option
@click.pass_context
def xref(ctx, query, as_of, limit) -> None:
    """cross_reference: the memories about QUERY beside the built records, as JSON."""
    _read(ctx, "cross_reference", query, as_of=as_of, limit=limit)
