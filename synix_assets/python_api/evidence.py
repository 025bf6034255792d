"""The evidence ledger from Python (design 003's L1): append events, search them, browse the
timeline, resolve the ids a memory cites. Answers are plain dicts (what `--json` prints);
each method is the `synix evidence <method>` command of the same name."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Mapping, Sequence

from synix_assets.project import ProjectPaths


class EvidenceActions(ABC):
    """Mixed into `Actions`. The ledger is the project's (every branch reads the same evidence)."""

    @abstractmethod
    def _paths(self, action: str) -> ProjectPaths:
        """The branch an action works on."""

    def append_events(self, events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Append events (each: source, event_type, content; optionally timestamp, user_id,
        title, external_id, conversation_id, metadata). Idempotent: the same event twice is one
        event; the answer lists every event's stable id."""
        from synix_assets.app.ledger import append_events

        return append_events(self._paths("append_events"), events).to_json()

    def search_evidence(self, query: str, *, limit: int = 10, source: str | None = None,
                        since: str | None = None, before: str | None = None) -> dict[str, Any]:
        """Events matching `query` (FTS5/BM25, best first)."""
        from synix_assets.app.ledger import search_evidence

        hits = search_evidence(self._paths("search_evidence"), query, limit=limit, source=source,
                               since=since, before=before)
        return {"query": query, "events": hits}

    def browse_timeline(self, *, since: str | None = None, before: str | None = None,
                        source: str | None = None, limit: int = 50) -> dict[str, Any]:
        """Events in a time window, oldest first."""
        from synix_assets.app.ledger import browse_timeline

        events = browse_timeline(self._paths("browse_timeline"), since=since, before=before,
                                 source=source, limit=limit)
        return {"events": [e.to_json() for e in events]}

    def resolve_events(self, ids: Sequence[str]) -> dict[str, Any]:
        """Which event ids the ledger holds (`found`) and which it does not (`missing`)."""
        from synix_assets.app.ledger import resolve_events

        return resolve_events(self._paths("resolve_events"), ids).to_json()

    def sync_evidence(self) -> dict[str, Any]:
        """Append what is new in the exports and live inboxes (every `run` does this first)."""
        from synix_assets.app.ledger import ledger_status, sync_evidence

        paths = self._paths("sync_evidence")
        return {**sync_evidence(paths).to_json(), "ledger": ledger_status(paths)}
