"""The read tools an agent navigates the memory with: one definition, served over MCP
(`mcp_server.py`) and handed to the model by `synix ask` (`ask.py`).

Each tool is a plain function over a `MemoryService` whose signature and docstring become the
tool's JSON schema and description (via the MCP SDK's own inference). `memory_tools` are
read-only; `write_tools` are Syke's writes of agent memories (served by `synix mcp` unless
`--read-only`; never handed to `synix ask`).
"""
from __future__ import annotations

from typing import Callable

from synix_assets.engine.agent_memory import MemoryWriter
from synix_assets.app.memory import MemoryService
from synix_assets.serve.budget import budgeted


def memory_tools(svc: MemoryService) -> list[Callable]:
    """The tools, bound to one service."""

    def get_map() -> dict:
        """Read this first: the map an agent step wrote (`map`, when the pipeline has one), the
        core memory, the layers with their sizes, and the most recent records of each layer
        below the core."""
        return svc.memory_map()

    def search_memories(query: str, layers: list[str] | None = None, mode: str = "fts",
                        since: str | None = None, until: str | None = None, limit: int = 10,
                        period: str | None = None, conversation: str | None = None,
                        as_of: str | None = None) -> dict:
        """Search the memory: summaries, rollups, the core, agent-written memories and the
        conversations themselves, ranked together. Each hit has its record id, layer, the
        matched text (snippet), how many conversations it covers and the first few it came
        from (follow/lineage for the rest); `passages` are the conversations' own matched
        messages with their date and message range. `layers` scopes the search (e.g.
        ["episodes"]); since/until bound the date (YYYY[-MM[-DD]] or an ISO date-time);
        `period` is a record's period (2025-03); `conversation` keeps the records built from
        that conversation id; mode is fts, semantic or hybrid. `as_of` (ISO date/time): the
        records dated up to then, and `memories` holds the agent memories held then."""
        return svc.search(query, layers=layers, mode=mode, since=since, until=until,
                          period=period, conversation=conversation, limit=limit, as_of=as_of)

    def search_evidence(query: str, since: str | None = None, until: str | None = None,
                        limit: int = 10, period: str | None = None,
                        conversation: str | None = None) -> dict:
        """Search the raw conversation transcripts: each hit is a passage with the
        conversation, its date and the exact message range. Use it to verify a memory.
        Filters as search_memories'."""
        return svc.search(query, since=since, until=until, period=period,
                          conversation=conversation, limit=limit, evidence=True)

    def get_memory(record_id: str, as_of: str | None = None) -> dict:
        """One record in full: content, metadata, the LLM audit (model, tokens, cost), its
        direct sources and the source conversations. Transcripts include their messages. A
        memory id (mem-…) gives the agent memory. `as_of` (ISO date/time): the version held then."""
        return svc.record(record_id, as_of=as_of)

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

    def browse_timeline(since: str | None = None, until: str | None = None,
                        source: str | None = None, limit: int = 20) -> dict:
        """Conversations dated in [since, until] (YYYY[-MM[-DD]]), oldest first, grouped by
        the export source they came from."""
        return svc.timeline(since=since, until=until, source=source, limit=limit)

    def get_recent_memories(limit: int = 5) -> dict:
        """The most recent records of every layer below the core memory."""
        return {"recent": svc.memory_map(recent=limit)["recent"]}

    def get_memory_history(memory_id: str) -> dict:
        """The supersession chain through a memory, oldest first: each memory with its
        versions, when each held (valid_from/valid_until), its state and superseded_by."""
        return svc.memory_history(memory_id)

    def follow_links(memory_id: str) -> dict:
        """The memories linked to this one, each with the reason the link was made."""
        return svc.follow_links(memory_id)

    def cross_reference(query: str, as_of: str | None = None, limit: int = 10) -> dict:
        """Everything about a topic: the agent memories (with their links) beside the built
        records that mention it, grouped by the source they came from."""
        return svc.cross_reference(query, as_of=as_of, limit=limit)

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
        get_map, search_memories, search_evidence, get_memory, follow, lineage, list_layer,
        browse_timeline, get_recent_memories, get_memory_history, follow_links, cross_reference)),
        get_brief]


def write_tools(writer: MemoryWriter) -> list[Callable]:
    """Syke's five write tools, bound to one branch's writer. Each write is on disk (the
    branch's memory-ops log) when it returns and becomes a record at once, or at the next build
    when one holds the lock (`applied: false`)."""

    def create_memory(content: str, evidence: list[str] | None = None,
                      valid_from: str | None = None) -> dict:
        """A new memory (free text) citing the record ids it is drawn from (`evidence`, from
        search_memories/get_memory); `valid_from`: when it became true (default now)."""
        return writer.create_memory(content, evidence=evidence, valid_from=valid_from)

    def update_memory(memory_id: str, content: str, evidence: list[str] | None = None,
                      valid_from: str | None = None) -> dict:
        """Edit a memory in place (a minor change): a new version of the same memory."""
        return writer.update_memory(memory_id, content, evidence=evidence, valid_from=valid_from)

    def supersede_memory(memory_id: str, content: str, reason: str,
                         evidence: list[str] | None = None, valid_from: str | None = None) -> dict:
        """Replace a memory (a major change): a new memory, the old one kept as superseded
        with a pointer to it; get_memory_history walks the chain."""
        return writer.supersede_memory(memory_id, content, reason, evidence=evidence,
                                       valid_from=valid_from)

    def deactivate_memory(memory_id: str, reason: str, valid_from: str | None = None) -> dict:
        """Retire a memory that is no longer true (it stays readable in its history)."""
        return writer.deactivate_memory(memory_id, reason, valid_from=valid_from)

    def create_link(source_id: str, target_id: str, reason: str) -> dict:
        """Link two memories, saying why in plain words (follow_links shows the reason)."""
        return writer.create_link(source_id, target_id, reason)

    return [create_memory, update_memory, supersede_memory, deactivate_memory, create_link]
