"""The read tools an agent navigates the memory with: one definition, served over MCP
(`mcp_server.py`) and handed to the model by `synix ask` (`ask.py`).

Each tool is a plain function over a `MemoryService` whose signature and docstring become the
tool's JSON schema and description (via the MCP SDK's own inference). `memory_tools` are
read-only; `write_tools` are Syke's writes of agent memories (served by `synix mcp --writes`
only; never handed to `synix ask`), and append_events, the ledger's one write.
"""
from __future__ import annotations

from typing import Callable

from synix_assets.engine.agent_memory import MemoryWriter
from synix_assets.app import ledger
from synix_assets.app.memory import MemoryService
from synix_assets.serve.api import split_steps
from synix_assets.serve.budget import budgeted


def memory_tools(svc: MemoryService) -> list[Callable]:
    """The read tools, bound to one service: Syke's ten (design 003, by its names and
    arguments) and Synix's own navigation (get_map, follow, lineage, list_layer, get_brief).
    Parameter names are `app/vocabulary.py`'s; the older spellings it lists are accepted by
    the server (`mcp_server.py`) and renamed before a tool runs."""

    def get_memex() -> dict:
        """Read this first: the map (Syke's memex) — the map an agent step wrote (`map`, when
        the pipeline has one), the core memory, the layers with their sizes, and the most
        recent records of each layer below the core."""
        return svc.memory_map()

    def get_map() -> dict:
        """The same map as get_memex (its older name)."""
        return svc.memory_map()

    def search_memories(query: str, step: list[str] | str | None = None, mode: str = "fts",
                        since: str | None = None, until: str | None = None, limit: int = 10,
                        period: str | None = None, conversation: str | None = None,
                        as_of: str | None = None) -> dict:
        """Search the memory: summaries, rollups, the core, agent-written memories and the
        conversations themselves, ranked together. Each hit has its record id, layer, the
        matched text (snippet), how many conversations it covers and the first few it came
        from (follow/lineage for the rest); `passages` are the conversations' own matched
        messages with their date and message range. `step` scopes the search to a layer or a
        list of them (e.g. "episodes"; older spelling `layers`); since/until bound the date
        (YYYY[-MM[-DD]] or an ISO date-time); `period` is a record's period (2025-03);
        `conversation` keeps the records built from that conversation id; mode is fts,
        semantic or hybrid. `as_of` (ISO date/time): the records dated up to then, and
        `memories` holds the agent memories held then."""
        return svc.search(query, layers=split_steps(step), mode=mode, since=since, until=until,
                          period=period, conversation=conversation, limit=limit, as_of=as_of)

    def search_evidence(query: str, source: str | None = None, since: str | None = None,
                        before: str | None = None, limit: int = 10) -> dict:
        """Search the evidence ledger, the raw events everything is built from (design 003's
        L1: each message of every export, each live turn, each appended event), best first.
        Each event has its `id` (ev-…, what create_memory's source_event_ids cite), source,
        timestamp, content and the conversation it belongs to. `source` keeps one source
        (chatgpt, claude, live, …); since (on or after) / before (strictly before) bound the
        time. search_transcripts searches the built transcripts instead."""
        return {"query": query, "events": ledger.search_evidence(
            svc.paths, query, limit=limit, source=source, since=since, before=before)}

    def search_transcripts(query: str, since: str | None = None, until: str | None = None,
                           limit: int = 10, period: str | None = None,
                           conversation: str | None = None) -> dict:
        """Search the built conversation transcripts: each hit is a passage with the
        conversation's transcript record id, its date and the exact message range (cite the
        record id, or use search_evidence for the single events). Filters as search_memories'."""
        return svc.search(query, since=since, until=until, period=period,
                          conversation=conversation, limit=limit, evidence=True)

    def get_memory(memory_id: str, as_of: str | None = None) -> dict:
        """One memory (mem-…) or any record in full (older spelling `record_id`): content,
        metadata, the LLM audit (model, tokens, cost), its direct sources and the source
        conversations; transcripts include their messages. `as_of` (ISO date/time): the
        version held then."""
        return svc.record(memory_id, as_of=as_of)

    def follow(record_id: str) -> dict:
        """One hop down: the records this record was built from (e.g. a month's episodes)."""
        return svc.sources(record_id)

    def lineage(record_id: str, query: str | None = None) -> dict:
        """The provenance tree from this record down to the source transcripts; with `query`,
        only the branches that mention it."""
        return svc.lineage(record_id, query=query)

    def list_layer(layer: str, page: int = 1, per_page: int = 20, period: str | None = None,
                   conversation: str | None = None) -> dict:
        """A page of one layer's records, newest first (filter by period like 2025-03 or by
        conversation id)."""
        return svc.layer_page(layer, page=page, per_page=per_page, period=period,
                              conversation=conversation)

    def list_active_memories(limit: int = 50) -> dict:
        """A compact index of the memories held now, newest first: each memory's id and first
        line (get_memory for the rest)."""
        return svc.active_memories(limit)

    def browse_timeline(since: str | None = None, before: str | None = None,
                        source: str | None = None, limit: int = 50) -> dict:
        """The evidence ledger's events from `since` (on or after) to strictly `before` (ISO
        date or date-time), oldest first (`source` keeps one source) — design 003's
        time-windowed events. browse_records lists the built records by date instead."""
        events = ledger.browse_timeline(svc.paths, since=since, before=before, source=source,
                                        limit=limit)
        return {"events": [e.to_json() for e in events]}

    def browse_records(since: str | None = None, before: str | None = None,
                       source: str | None = None, until: str | None = None,
                       step: list[str] | str | None = None, limit: int = 20) -> dict:
        """Conversations (or the records of `step`) dated from `since` to strictly `before`
        (YYYY[-MM[-DD]] or an ISO date-time; `until` instead: up to and including), oldest
        first, grouped by the export source they came from (`source` keeps one)."""
        return svc.timeline(since=since, before=before, until=until, source=source,
                            layers=split_steps(step), limit=limit)

    def get_recent_memories(limit: int = 5) -> dict:
        """The newest memories held now, newest first (`memories`), and the most recent
        records of every layer below the core memory (`recent`)."""
        return svc.recent_memories(limit)

    def get_memory_history(memory_id: str) -> dict:
        """The supersession chain through a memory, oldest first: each memory with its
        versions, when each held (valid_from/valid_until), its state and superseded_by."""
        return svc.memory_history(memory_id)

    def follow_links(memory_id: str) -> dict:
        """The memories linked to this one, each with the reason the link was made."""
        return svc.follow_links(memory_id)

    def cross_reference(topic: str, as_of: str | None = None, limit: int = 10) -> dict:
        """Everything about a topic across every source: the agent memories (with their
        links) beside the built records that mention it, grouped by the source they came from
        (older spelling of `topic`: `query`)."""
        return svc.cross_reference(topic, as_of=as_of, limit=limit)

    def get_brief(query: str | None = None, budget_tokens: int = 2000, as_of: str | None = None,
                  session: str | None = None) -> dict:
        """The prompt-ready brief within `budget_tokens`: core memory, recent records and the top
        hits for `query`; for a memory with a working window (synapse), Tier 1 first — identity
        facts, the session's last turns, its rolling summary, open loops and nudges. `as_of`
        (ISO date/time): what the memory held then."""
        return svc.brief(query, budget_tokens=budget_tokens, as_of=as_of, session=session)

    # each result within the budget an agent's context can take (`budget.py` says what it cut);
    # the brief keeps to the `budget_tokens` its caller chose, so a second budget would cut what
    # the agent asked for (its working memory, Tier 1)
    return [*(budgeted(tool) for tool in (
        get_memex, get_map, search_memories, search_evidence, search_transcripts, get_memory,
        follow, lineage, list_layer, list_active_memories, browse_timeline, browse_records,
        get_recent_memories,
        get_memory_history, follow_links, cross_reference)),
        get_brief]


def write_tools(writer: MemoryWriter) -> list[Callable]:
    """Syke's five write tools (design 003's names and arguments), bound to one branch's
    writer. Each write is on disk (the branch's memory-ops log) when it returns and becomes a
    record at once, or at the next build when one holds the lock (`applied: false`)."""

    def create_memory(content: str, source_event_ids: list[str] | None = None,
                      valid_from: str | None = None) -> dict:
        """A new memory (free text) citing the evidence it is drawn from: `source_event_ids`
        are event ids (ev-…) from search_evidence / browse_timeline, or record ids from
        search_memories / search_transcripts / get_memory (older spelling `evidence`). Each is
        resolved (events in the ledger, records in the store) and stored with the memory
        (`evidence` in get_memory); an id that names nothing refuses the write. `valid_from`:
        when it became true (default now)."""
        return writer.create_memory(content, evidence=source_event_ids, valid_from=valid_from)

    def update_memory(memory_id: str, new_content: str, source_event_ids: list[str] | None = None,
                      valid_from: str | None = None) -> dict:
        """Edit a memory in place (a minor change): a new version of the same memory (older
        spelling of `new_content`: `content`)."""
        return writer.update_memory(memory_id, new_content, evidence=source_event_ids,
                                    valid_from=valid_from)

    def supersede_memory(memory_id: str, new_content: str, reason: str | None = None,
                         source_event_ids: list[str] | None = None,
                         valid_from: str | None = None) -> dict:
        """Replace a memory (a major change): a new memory, the old one kept as superseded
        with a pointer to it (and `reason`, when given); get_memory_history walks the chain."""
        return writer.supersede_memory(memory_id, new_content, reason, evidence=source_event_ids,
                                       valid_from=valid_from)

    def deactivate_memory(memory_id: str, reason: str, valid_from: str | None = None) -> dict:
        """Retire a memory that is no longer true (it stays readable in its history)."""
        return writer.deactivate_memory(memory_id, reason, valid_from=valid_from)

    def create_link(source_id: str, target_id: str, reason: str) -> dict:
        """Link two memories, saying why in plain words (follow_links shows the reason)."""
        return writer.create_link(source_id, target_id, reason)

    def append_events(events: list[dict]) -> dict:
        """Record what happened in the evidence ledger (append-only; not one of Syke's 15):
        each event has source, event_type and content, optionally timestamp, title,
        user_id, external_id, conversation_id, metadata. The same event twice is one event;
        the answer lists every event's id (ev-…), citable by create_memory at once."""
        return ledger.append_events(writer.paths, events).to_json()

    return [create_memory, update_memory, supersede_memory, deactivate_memory, create_link,
            append_events]
