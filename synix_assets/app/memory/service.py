"""`MemoryService`: everything that can be read about one built branch, as plain dicts — the
read side of the HTTP API, the explorer, the MCP tools, `synix ask` and live's brief — and
`BranchServices`, which resolves the branch a request names to the service reading it.

Read-only and consistent: the store is opened with SQLite's `mode=ro` and the search index with
`query_only`, and every call runs inside one read transaction on each file (`MemoryService.reader`),
so a build committing meanwhile never shows half its results. Readers are pooled (a few SQLite
connections), one per request at a time.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

from synix_assets.app.memory import agent as _agent
from synix_assets.app.memory import brief as _brief
from synix_assets.app.memory import facts as _facts
from synix_assets.app.memory import browse
from synix_assets.app.memory import search as _search
from synix_assets.app.memory.freshness import ProjectStatus, mtime
from synix_assets.app.synapse import brief_tier1, fit_tier1
from synix_resources.names import check_session_id
from synix_assets.app.memory.readers import Reader, ReaderPool
from synix_assets.app.query import NOT_BUILT_HINT
from synix_assets.app.workspace import readable_branches, resolve_branch
from synix_assets.project import ProjectPaths
from synix_resources.errors import ArtifactNotFound


class BranchServices:
    """One MemoryService per branch, opened on first use (the app serves every branch)."""

    def __init__(self, main: "MemoryService"):
        self.main = main
        self._services = {main.paths.branch: main}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """main, then every branch that has a pipeline file (snapshots included)."""
        return readable_branches(self.main.paths)

    def get(self, branch: str) -> "MemoryService":
        """The service reading `branch` (see `resolve_branch`); every HTTP handler asks here."""
        with self._lock:
            if branch not in self._services:
                self._services[branch] = MemoryService(resolve_branch(self.main.paths, branch))
            return self._services[branch]

    def close(self) -> None:
        with self._lock:
            for svc in self._services.values():
                svc.close()


class MemoryService:
    """Everything that can be read about one built project, as plain dicts."""

    matched_range = staticmethod(browse.matched_range)

    def __init__(self, paths: ProjectPaths, *, pool_size: int = 4):
        self.paths = paths
        if not paths.has_store():
            raise ArtifactNotFound(f"nothing has been built in {paths.root} yet", hint=NOT_BUILT_HINT)
        self._readers = ReaderPool(paths, pool_size)
        self._pipeline = None
        self._pipeline_mtime: tuple | None = None
        self._status = ProjectStatus(paths, lambda: self.pipeline)

    # ---- plumbing ---------------------------------------------------------------------

    def own(self, branch: str | None) -> str:
        """The branch a call reads: the one named, or this service's own when none is (the
        CLI's `synix ask`/`synix mcp --branch B` open a service for B and name no branch)."""
        return self.check_branch(self.paths.branch if branch is None else branch)

    def check_branch(self, branch: str) -> str:
        """Each service reads one branch (`BranchServices` picks the service for a branch)."""
        if branch != self.paths.branch:
            raise ArtifactNotFound(f"this reader serves branch {self.paths.branch!r}, not {branch!r}")
        return branch

    @property
    def pipeline(self):
        """The branch's pipeline, reloaded when its file changed."""
        if self._pipeline is None or self._pipeline_mtime != mtime(self.paths.pipeline_file):
            from synix_assets.pipeline.loader import load_pipeline

            self._pipeline_mtime = mtime(self.paths.pipeline_file)
            self._pipeline = load_pipeline(self.paths.pipeline_file, base_dir=self.paths.root)
        return self._pipeline

    @contextmanager
    def reader(self, branch: str | None = None) -> Iterator[Reader]:
        """A pooled reader inside one read transaction on the store and on the index."""
        branch = self.own(branch)
        with self._readers.reader() as reader:
            yield reader

    def close(self) -> None:
        self._status.close()
        self._readers.close()

    def texts(self, ids: list[str]) -> dict[str, str]:
        """Artifact id → content, for any ids in the shared store (whichever branch uses them)."""
        return self._readers.texts(ids)

    # ---- overview ---------------------------------------------------------------------

    def layers(self, branch: str | None = None) -> list[dict]:
        """Layers in pipeline order with level, kind, inputs and how many records each holds."""
        branch = self.own(branch)
        return browse.layers(self, branch)

    def pipeline_graph(self, branch: str | None = None) -> dict:
        """The DAG: sources, steps and projections as nodes (counts, staleness), edges by input."""
        branch = self.own(branch)
        status = self._status.get()
        return browse.pipeline_graph(self.pipeline, status)

    # ---- records ----------------------------------------------------------------------

    def record(self, ref: str, branch: str | None = None, as_of: str | None = None) -> dict:
        """Content, metadata, audit, parents and source conversations of one record; an agent
        memory's id gives the memory. `as_of` (ISO date/time): the version current then."""
        branch = self.own(branch)
        found = _agent.record(self, ref, branch, as_of)
        return found if found is not None else browse.record(self, ref, branch)

    def sources(self, ref: str, branch: str | None = None) -> dict:
        """The records this one was built from (one hop down), in input order."""
        branch = self.own(branch)
        return browse.sources(self, ref, branch)

    def leaves(self, ref: str, branch: str | None = None, limit: int = 100) -> dict:
        """The source transcripts (conversations) under a record."""
        branch = self.own(branch)
        return browse.leaves(self, ref, branch, limit)

    def lineage(self, ref: str, branch: str | None = None, query: str | None = None, *,
                depth: int = 20, per_node: int | None = None) -> dict:
        """The provenance tree down to the transcripts (see `browse.lineage`)."""
        branch = self.own(branch)
        return browse.lineage(self, ref, branch, query, depth=depth, per_node=per_node)

    def layer_page(self, layer: str, *, branch: str | None = None, page: int = 1, per_page: int = 50,
                   oldest_first: bool = False, since: str | None = None, until: str | None = None,
                   **filters: str | None) -> dict:
        """One page of a layer's current records, newest first, with optional filters."""
        branch = self.own(branch)
        return browse.layer_page(self, layer, branch=branch, page=page, per_page=per_page,
                                 oldest_first=oldest_first, since=since, until=until, filters=filters)

    def timeline(self, *, branch: str | None = None, since: str | None = None, until: str | None = None,
                 source: str | None = None, layers: list[str] | None = None, limit: int = 50,
                 page: int = 1, before: str | None = None) -> dict:
        """Records dated in [since, until] or [since, before) (default: the source transcripts),
        oldest first, grouped by where they came from (the export source)."""
        branch = self.own(branch)
        return browse.timeline(self, branch=branch, since=since, until=until, source=source,
                               layers=layers, limit=limit, page=page, before=before)

    # ---- search -----------------------------------------------------------------------

    def search(self, query: str, *, branch: str | None = None, layers: list[str] | None = None,
               mode: str = "fts", since: str | None = None, until: str | None = None,
               limit: int = 10, evidence: bool = False, period: str | None = None,
               conversation: str | None = None, as_of: str | None = None,
               passages: bool | None = None) -> dict:
        """Ranked hits with provenance (an agent's memories among them, ranked with the rest).
        `evidence=True` searches the raw transcripts, one hit per matched passage (message
        range). Filters as `SearchIndex.search`'s. `as_of` (ISO date/time) keeps the records
        dated up to then, and `memories` holds the memory versions held then. `passages`: the
        conversations' matched messages always (True), or when the summaries lack the words."""
        branch = self.own(branch)
        if as_of is not None:
            until = until or _agent.reads.as_of_instant(as_of)
        out = _search.search(self, query, branch=branch, layers=layers, mode=mode, since=since,
                             until=until, limit=limit, evidence=evidence, period=period,
                             conversation=conversation, passages=passages)
        if as_of is not None:
            # the index holds the memories as they are now; their versions then come from the log
            if not evidence:
                out["memories"] = _agent.memory_hits(self, query, branch, as_of, limit)
            out["as_of"] = _agent.reads.as_of_instant(as_of)
        return out

    # ---- agent memories ---------------------------------------------------------------

    def memory_history(self, memory_id: str, branch: str | None = None) -> dict:
        """The supersession chain through a memory, oldest first, each with its versions."""
        return _agent.history(self, memory_id, self.own(branch))

    def follow_links(self, memory_id: str, branch: str | None = None) -> dict:
        """The memories linked to this one, with each link's reason."""
        return _agent.links(self, memory_id, self.own(branch))

    def active_memories(self, limit: int = 50, branch: str | None = None) -> dict:
        """Syke's list_active_memories: the memories held now, newest first, as a compact index
        (id and first line)."""
        return _agent.active(self, self.own(branch), limit)

    def recent_memories(self, limit: int = 5, branch: str | None = None) -> dict:
        """Syke's get_recent_memories: the newest memories held now (in full), and the most
        recent built records of every layer below the core."""
        return {"memories": _agent.active(self, self.own(branch), limit, full=True)["memories"],
                "recent": self.memory_map(branch, recent=limit)["recent"]}

    def cross_reference(self, query: str, branch: str | None = None, as_of: str | None = None,
                        limit: int = 10) -> dict:
        """The agent's memories about `query` beside the built records, by source."""
        return _agent.cross_reference(self, query, self.own(branch), as_of, limit)

    # ---- documents for agents ---------------------------------------------------------

    def context(self, branch: str | None = None) -> dict:
        """The context document as written by the last build, and the records its footer names."""
        branch = self.own(branch)
        return _brief.context(self)

    def memory_map(self, branch: str | None = None, recent: int = 5) -> dict:
        """The map an agent reads first: core memory, layers, recent records below the core."""
        branch = self.own(branch)
        return _brief.memory_map(self, branch, recent)

    def brief(self, query: str | None = None, *, branch: str | None = None, budget_tokens: int = 2000,
              hits: int = 5, recent: int = 3, as_of: str | None = None, session: str | None = None) -> dict:
        """Core memory, recent records and the top hits for `query`, within `budget_tokens`;
        Tier 1 first for a synapse memory (of `session`, default the latest). `as_of` (ISO
        date/time): what the memory held then (records built from sources all dated up to then,
        Tier 1 as it stood)."""
        branch = self.own(branch)
        if session is not None:
            check_session_id(session)
        t = _agent.reads.as_of_instant(as_of)
        tier1 = brief_tier1(self.paths, session, as_of=t)  # a pipeline with a working window (synapse)
        used = fit_tier1(tier1, budget_tokens) if tier1 is not None else 0
        # Tier 2, the temporal facts valid then (a pipeline with a facts layer): within what
        # Tier 1 left of the first half of the budget, and at least a quarter of it
        tier2 = _facts.tier2(self, branch, query, t, max(budget_tokens // 4, budget_tokens // 2 - used))
        used += tier2["tokens"] if tier2 is not None else 0
        out = _brief.brief(self, query, branch=branch, budget_tokens=budget_tokens, hits=hits,
                           recent=recent, as_of=t, reserved=used)
        if tier1 is not None:
            out["tier1"] = tier1
        if tier2 is not None:
            out["tier2"] = tier2
        out["text"] = "\n\n".join(p for p in (tier1["text"] if tier1 else "", tier2["text"] if tier2 else "",
                                              out.get("text", "")) if p)
        return out
