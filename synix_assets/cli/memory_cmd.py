"""`synix memory …`: agent-written memories from the terminal (Syke's tools), each the
application layer's call and its answer printed (`--json`: as the Python API returns it)."""
from __future__ import annotations

import click

from synix_assets.cli.common import WHEN, echo_json, json_option, project_option, project_paths

EVIDENCE = click.option("--source-event-id", "--evidence", "source_event_ids", metavar="RECORD_ID",
                        multiple=True, help="A record the memory is drawn from: a transcript or any "
                                            "built record (repeat for several; --evidence is the "
                                            "older spelling).")
VALID_FROM = click.option("--valid-from", type=WHEN, metavar="WHEN", help="When it became true (ISO date/time; default now).")
AS_OF = click.option("--as-of", type=WHEN, metavar="WHEN", help="What was held at that time (ISO date/time).")


@click.group("memory")
def memory_group() -> None:
    """Agent-written memories: create, update, supersede, deactivate, link, and read them back."""


def _write(ctx, method: str, *args, as_json: bool, **kwargs) -> None:
    from synix_assets.engine.agent_memory import MemoryWriter

    answer = getattr(MemoryWriter(project_paths(ctx)), method)(*args, **kwargs)
    if as_json:
        echo_json(answer)
    else:
        made = answer.get("new_id") or answer.get("link_id") or answer.get("memory_id")
        state = "" if answer["applied"] else " (logged; the next `synix run` makes the record)"
        click.echo(f"{answer['op']}: {made}{state}")


def _read(ctx, method: str, *args, as_json: bool, **kwargs) -> None:
    from synix_assets.app.memory import MemoryService

    svc = MemoryService(project_paths(ctx))
    try:
        answer = getattr(svc, method)(*args, **kwargs)
    finally:
        svc.close()
    if as_json:
        echo_json(answer, ascii=False)
        return
    mems = answer.get("chain") or answer.get("memories") or ([answer] if "content" in answer else [])
    for mem in mems:
        until = mem["valid_until"] or "now"
        click.echo(f"{mem['memory_id']} v{mem['version']} ({mem['state']}, {mem['valid_from']} → {until}): "
                   f"{mem['content']}")
    for link in answer.get("links", []):
        click.echo(f"{link['direction']} {link['memory']['memory_id']}: {link['reason']}")
    if "records_by_source" in answer:
        click.echo(f"{answer['records']} built record(s) mention it: "
                   + ", ".join(f"{k} ({len(v)})" for k, v in answer["records_by_source"].items()))


@memory_group.command("create_memory")
@click.argument("content")
@EVIDENCE
@VALID_FROM
@json_option("Print the answer as JSON.")
@project_option
@click.pass_context
def create(ctx, content, source_event_ids, valid_from, as_json) -> None:
    """Write a new memory citing its evidence.

    \b
    Example:
      synix memory create_memory "Lives in Berlin" --source-event-id transcripts-1a2b3c --valid-from 2024-01-10
    """
    _write(ctx, "create_memory", content, evidence=list(source_event_ids), valid_from=valid_from,
           as_json=as_json)


@memory_group.command("update_memory")
@click.argument("memory_id")
@click.argument("new_content")
@EVIDENCE
@VALID_FROM
@json_option("Print the answer as JSON.")
@project_option
@click.pass_context
def update(ctx, memory_id, new_content, source_event_ids, valid_from, as_json) -> None:
    """Edit a memory in place (a new version of it)."""
    _write(ctx, "update_memory", memory_id, new_content, evidence=list(source_event_ids),
           valid_from=valid_from, as_json=as_json)


@memory_group.command("supersede_memory")
@click.argument("memory_id")
@click.argument("new_content")
@click.option("--reason", default=None, help="Why the memory is replaced (optional).")
@EVIDENCE
@VALID_FROM
@json_option("Print the answer as JSON.")
@project_option
@click.pass_context
def supersede(ctx, memory_id, new_content, reason, source_event_ids, valid_from, as_json) -> None:
    """Replace a memory by a new one; the old one stays in its history."""
    _write(ctx, "supersede_memory", memory_id, new_content, reason, evidence=list(source_event_ids),
           valid_from=valid_from, as_json=as_json)


@memory_group.command("deactivate_memory")
@click.argument("memory_id")
@click.option("--reason", required=True, help="Why it is no longer true.")
@VALID_FROM
@json_option("Print the answer as JSON.")
@project_option
@click.pass_context
def deactivate(ctx, memory_id, reason, valid_from, as_json) -> None:
    """Retire a memory (still readable in its history)."""
    _write(ctx, "deactivate_memory", memory_id, reason, valid_from=valid_from, as_json=as_json)


@memory_group.command("create_link")
@click.argument("source_id")
@click.argument("target_id")
@click.option("--reason", required=True, help="Why the two belong together.")
@json_option("Print the answer as JSON.")
@project_option
@click.pass_context
def link(ctx, source_id, target_id, reason, as_json) -> None:
    """Link two memories with a reason."""
    _write(ctx, "create_link", source_id, target_id, reason, as_json=as_json)


@memory_group.command("get_memory")
@click.argument("memory_id")
@AS_OF
@json_option("Print the memory as JSON.")
@project_option
@click.pass_context
def get(ctx, memory_id, as_of, as_json) -> None:
    """One memory (the version held at --as-of)."""
    _read(ctx, "record", memory_id, as_of=as_of, as_json=as_json)


@memory_group.command("get_memory_history")
@click.argument("memory_id")
@json_option("Print the chain as JSON.")
@project_option
@click.pass_context
def history(ctx, memory_id, as_json) -> None:
    """The supersession chain through a memory, oldest first."""
    _read(ctx, "memory_history", memory_id, as_json=as_json)


@memory_group.command("follow_links")
@click.argument("memory_id")
@json_option("Print the links as JSON.")
@project_option
@click.pass_context
def links(ctx, memory_id, as_json) -> None:
    """The memories linked to one, with reasons."""
    _read(ctx, "follow_links", memory_id, as_json=as_json)


@memory_group.command("cross_reference")
@click.argument("topic")
@AS_OF
@click.option("--limit", "-k", type=click.IntRange(1, 1000), default=10, show_default=True)
@json_option("Print the answer as JSON.")
@project_option
@click.pass_context
def xref(ctx, topic, as_of, limit, as_json) -> None:
    """The memories about TOPIC beside the built records that mention it, by source."""
    _read(ctx, "cross_reference", topic, as_of=as_of, limit=limit, as_json=as_json)


@memory_group.command("get_brief")
@click.argument("query", required=False)
@click.option("--budget-tokens", type=click.IntRange(100, 200_000), default=2000, show_default=True)
@AS_OF
@click.option("--session", metavar="SESSION_ID", help="Tier 1's session (synapse; default the latest).")
@json_option("Print the brief as JSON.")
@project_option
@click.pass_context
def brief(ctx, query, budget_tokens, as_of, session, as_json) -> None:
    """The prompt-ready brief: Tier 1 (synapse), core memory, recent records, hits for QUERY."""
    from synix_assets.app.memory import MemoryService

    svc = MemoryService(project_paths(ctx))
    try:
        answer = svc.brief(query, budget_tokens=budget_tokens, as_of=as_of, session=session)
    finally:
        svc.close()
    if as_json:
        echo_json(answer, ascii=False)
    else:
        click.echo(answer["text"] or "(empty brief)")


@memory_group.command("list_active_memories")
@click.option("--limit", "-k", type=click.IntRange(1, 200), default=50, show_default=True)
@json_option("Print the index as JSON.")
@project_option
@click.pass_context
def active(ctx, limit, as_json) -> None:
    """The memories held now, newest first: each one's id and first line."""
    from synix_assets.app.memory import MemoryService
    from synix_assets.cli.render import plain

    svc = MemoryService(project_paths(ctx))
    try:
        answer = svc.active_memories(limit)
    finally:
        svc.close()
    if as_json:
        echo_json(answer, ascii=False)
        return
    for mem in answer["memories"]:
        click.echo(f"{mem['memory_id']} v{mem['version']}: {plain(mem['first_line'])}")


@memory_group.command("get_memex")
@click.option("--recent", type=click.IntRange(1, 200), default=5, show_default=True,
              help="Recent records shown per layer.")
@json_option("Print the map as JSON.")
@project_option
@click.pass_context
def memex(ctx, recent, as_json) -> None:
    """The map an agent reads first (Syke's memex): core memory, layers, recent records."""
    from synix_assets.app.memory import MemoryService
    from synix_assets.cli.render import plain

    svc = MemoryService(project_paths(ctx))
    try:
        answer = svc.memory_map(recent=recent)
    finally:
        svc.close()
    if as_json:
        echo_json(answer, ascii=False)
        return
    if answer.get("map"):
        click.echo(plain(answer["map"]["content"]))
    for rec in answer["core"]:
        click.echo(f"{rec['artifact_id']} ({rec['layer']}): {plain(rec.get('title') or '')}")
    for layer in answer["layers"]:
        click.echo(f"{layer['layer']}: {layer['records']} record(s)")
