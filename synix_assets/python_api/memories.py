"""Agent-written memories from Python (Syke's tools as `Pipeline`/`PipelineBranch` methods):
the application layer's writer and reader, answers as plain dicts (what `--json` prints)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from synix_assets.app.vocabulary import one_of
from synix_assets.project import ProjectPaths

if TYPE_CHECKING:
    from synix_assets.engine.agent_memory import MemoryWriter


class MemoryActions(ABC):
    """Mixed into `Actions`; `_paths(action)` gives the branch whose memory log is written."""

    @abstractmethod
    def _paths(self, action: str) -> ProjectPaths:
        """The branch an action works on."""

    def _writer(self, action: str) -> MemoryWriter:
        from synix_assets.engine.agent_memory import MemoryWriter

        return MemoryWriter(self._paths(action))

    def _read(self, action: str, method: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        from synix_assets.app.memory import MemoryService

        svc = MemoryService(self._paths(action))
        try:
            return getattr(svc, method)(*args, **kwargs)
        finally:
            svc.close()

    # ---- writes (on disk when they return; records at once, or at the next run) -------

    def create_memory(self, content: str, source_event_ids: list[str] | None = None, *,
                      valid_from: str | None = None,
                      evidence: list[str] | None = None) -> dict[str, Any]:
        """A new memory citing the record ids it is drawn from (`source_event_ids`, design 003;
        `evidence` is the older spelling); `valid_from`: when it became true."""
        cited = one_of("create_memory", "source_event_ids", source_event_ids, "evidence", evidence)
        return self._writer("create_memory").create_memory(content, evidence=cited, valid_from=valid_from)

    def update_memory(self, memory_id: str, new_content: str | None = None,
                      source_event_ids: list[str] | None = None, *, valid_from: str | None = None,
                      content: str | None = None,
                      evidence: list[str] | None = None) -> dict[str, Any]:
        """Edit a memory in place: a new version of the same memory (`content`, `evidence`:
        older spellings of `new_content`, `source_event_ids`)."""
        text = one_of("update_memory", "new_content", new_content, "content", content, required=True)
        cited = one_of("update_memory", "source_event_ids", source_event_ids, "evidence", evidence)
        return self._writer("update_memory").update_memory(memory_id, text, evidence=cited,
                                                           valid_from=valid_from)

    def supersede_memory(self, memory_id: str, new_content: str | None = None,
                         reason: str | None = None, source_event_ids: list[str] | None = None, *,
                         valid_from: str | None = None, content: str | None = None,
                         evidence: list[str] | None = None) -> dict[str, Any]:
        """Replace a memory by a new one; the old one is kept, pointing at it (`reason`
        optional, as in design 003)."""
        text = one_of("supersede_memory", "new_content", new_content, "content", content, required=True)
        cited = one_of("supersede_memory", "source_event_ids", source_event_ids, "evidence", evidence)
        return self._writer("supersede_memory").supersede_memory(memory_id, text, reason,
                                                                 evidence=cited, valid_from=valid_from)

    def deactivate_memory(self, memory_id: str, reason: str, *,
                          valid_from: str | None = None) -> dict[str, Any]:
        """Retire a memory (it stays in its history)."""
        return self._writer("deactivate_memory").deactivate_memory(memory_id, reason, valid_from=valid_from)

    def create_link(self, source_id: str, target_id: str, reason: str) -> dict[str, Any]:
        """Link two memories with a reason."""
        return self._writer("create_link").create_link(source_id, target_id, reason)

    # ---- reads ------------------------------------------------------------------------

    def get_memory(self, memory_id: str, *, as_of: str | None = None) -> dict[str, Any]:
        """One memory; with `as_of` (ISO date/time) the version held then."""
        return self._read("get_memory", "record", memory_id, as_of=as_of)

    def list_active_memories(self, limit: int = 50) -> dict[str, Any]:
        """The memories held now, newest first: each one's id and first line."""
        return self._read("list_active_memories", "active_memories", limit)

    def get_memex(self, recent: int = 5) -> dict[str, Any]:
        """The map an agent reads first (Syke's memex): core memory, layers, recent records."""
        return self._read("get_memex", "memory_map", recent=recent)

    def get_memory_history(self, memory_id: str) -> dict[str, Any]:
        """The supersession chain through a memory, oldest first."""
        return self._read("get_memory_history", "memory_history", memory_id)

    def follow_links(self, memory_id: str) -> dict[str, Any]:
        """The memories linked to this one, with reasons."""
        return self._read("follow_links", "follow_links", memory_id)

    def cross_reference(self, topic: str, *, as_of: str | None = None, limit: int = 10) -> dict[str, Any]:
        """The agent's memories about `topic` beside the built records, by source."""
        return self._read("cross_reference", "cross_reference", topic, as_of=as_of, limit=limit)

    def get_brief(self, query: str | None = None, *, budget_tokens: int = 2000, as_of: str | None = None,
                  session: str | None = None) -> dict[str, Any]:
        """The prompt-ready brief (MCP `get_brief`, HTTP `/brief`): Tier 1 first for a synapse
        memory (identity, working memory, rolling summary, open loops, nudges), then core memory,
        recent records and the hits for `query`; `as_of` (ISO date/time): as it stood then."""
        return self._read("get_brief", "brief", query, budget_tokens=budget_tokens, as_of=as_of,
                          session=session)
