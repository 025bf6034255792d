"""The read tools an agent navigates the memory with: one definition, served over MCP
(`mcp_server.py`) and handed to the model by `synix ask` (`ask.py`).

Each tool is a plain function over a `MemoryService` whose signature and docstring become the
tool's JSON schema and description (via the MCP SDK's own inference). All are read-only.
"""
from __future__ import annotations

from typing import Callable

from synix_assets.app.memory import MemoryService


def memory_tools(svc: MemoryService) -> list[Callable]:
    """The tools, bound to one service."""

    def get_map() -> dict:
        """Read this first: the core memory (the agent's map of the person), the layers with
        their sizes, and the most recent records of each layer below the core."""
        return svc.memory_map()

    def search_memories(query: str, layers: list[str] | None = None, mode: str = "fts",
                        since: str | None = None, until: str | None = None, limit: int = 10,
                        period: str | None = None, conversation: str | None = None) -> dict:
        """Search the built memories (summaries, rollups, core). Each hit has its record id,
        layer, snippet and the source conversations it came from. `layers` scopes the search
        (e.g. ["episodes"]); since/until bound the date (YYYY[-MM[-DD]] or an ISO date-time);
        `period` is a record's period (2025-03); `conversation` keeps the records built from
        that conversation id; mode is fts, semantic or hybrid."""
        return svc.search(query, layers=layers, mode=mode, since=since, until=until,
                          period=period, conversation=conversation, limit=limit)

    def search_evidence(query: str, since: str | None = None, until: str | None = None,
                        limit: int = 10, period: str | None = None,
                        conversation: str | None = None) -> dict:
        """Search the raw conversation transcripts: each hit is a passage with the
        conversation, its date and the exact message range. Use it to verify a memory.
        Filters as search_memories'."""
        return svc.search(query, since=since, until=until, period=period,
                          conversation=conversation, limit=limit, evidence=True)

    def get_memory(record_id: str) -> dict:
        """One record in full: content, metadata, the LLM audit (model, tokens, cost), its
        direct sources and the source conversations. Transcripts include their messages."""
        return svc.record(record_id)

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

    return [get_map, search_memories, search_evidence, get_memory, follow, lineage, list_layer,
            browse_timeline, get_recent_memories]
