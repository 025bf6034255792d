"""The read side shared by the HTTP API, the explorer, the MCP tools and `synix ask`.

Read-only and consistent: the store is opened with SQLite's `mode=ro` and the search index with
`query_only`, and every call runs inside one read transaction on each file (`MemoryService.reader`),
so a build committing meanwhile never shows half its results. Readers are pooled (a few SQLite
connections), one per request at a time.
"""
from __future__ import annotations

import queue
import re
import threading
from contextlib import contextmanager
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterator

from synix_assets.engine.projections import artifact_title, transcript_messages
from synix_assets.project import ProjectPaths
from synix_assets.reports.query import NOT_BUILT_HINT, artifact_dict, focus_tree, hit_dict, source_of, tree_of
from synix_resources.errors import ArtifactNotFound, SearchError, ServeError
from synix_resources.llm.mapreduce import estimate_tokens
from synix_resources.names import check_branch, check_layer
from synix_resources.search.query import calendar_problem

MAX_LIMIT = 200
PREVIEW_CHARS = 280
MODES = ("fts", "semantic", "hybrid")
READER_CACHE = 64  # cached results per pooled reader
EVIDENCE_LEADS = 3  # memories whose transcripts an evidence search drills into
# Metadata a layer listing can filter on: query name -> metadata key.
FILTERS = {"period": "meta.time.period", "conversation": "meta.chat.conversation_id",
           "source": "meta.source.name", "source_file": "meta.source.path"}
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
_CONTEXT_IDS = re.compile(r"\b([a-z0-9_-]+-[0-9a-f]{16})\b")


class BadRequest(ServeError):
    """A request parameter is invalid (the HTTP layer answers 400)."""


def branch_names(paths: ProjectPaths) -> list[str]:
    """main, then every branch of the project that has a pipeline file (snapshots included)."""
    from synix_resources.store.artifact_store import ArtifactStore

    store = ArtifactStore(paths.store, read_only=True)
    try:
        names = [b.name for b in store.branches()]
    finally:
        store.close()
    return [n for n in names if n == "main" or paths.on_branch(n).pipeline_file.is_file()]


class BranchServices:
    """One MemoryService per branch, opened on first use (the app serves every branch)."""

    def __init__(self, main: "MemoryService"):
        self.main = main
        self._services = {main.paths.branch: main}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        return branch_names(self.main.paths)

    def get(self, branch: str) -> "MemoryService":
        check_branch(branch)
        with self._lock:
            if branch not in self._services:
                if branch not in self.names():
                    raise ArtifactNotFound(f"no branch {branch!r} in this project",
                                           hint=f"branches here: {', '.join(self.names())}")
                self._services[branch] = MemoryService(self.main.paths.on_branch(branch))
            return self._services[branch]

    def close(self) -> None:
        with self._lock:
            for svc in self._services.values():
                svc.close()


def check_limit(limit: int, name: str = "limit") -> int:
    if not 1 <= int(limit) <= MAX_LIMIT:
        raise BadRequest(f"{name} must be between 1 and {MAX_LIMIT}, got {limit}")
    return int(limit)


def check_date(value: str | None, name: str) -> str | None:
    if value in (None, ""):
        return None
    if not _DATE.match(value):
        raise BadRequest(f"{name} must be a date like 2025-03 or 2025-03-09, got {value!r}")
    wrong = calendar_problem(value)
    if wrong:  # compared as text it would silently match nothing (or everything)
        raise BadRequest(f"{name} {value!r} is not a real date ({wrong}) — use a date like 2025-03-09")
    return value


def preview(text: str, chars: int = PREVIEW_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[:chars].rstrip() + "…"


def record_summary(art) -> dict:
    """What a list shows of a record: id, layer, title, date/period, sources count, preview."""
    m = art.metadata
    return {"artifact_id": art.artifact_id, "layer": art.layer, "level": art.level,
            "title": artifact_title(art), "group_key": art.group_key,
            "date": (m.get("meta.time.created_at") or "")[:10] or None,
            "period": m.get("meta.time.period"),
            "conversation_id": m.get("meta.chat.conversation_id"),
            "source_count": len(art.parent_ids), "created_at": art.created_at,
            "preview": preview(art.content)}


@dataclass
class Reader:
    """One store connection and one search index connection, used by one request at a time,
    with a cache of what it computed from the store, valid while the store is unchanged."""

    store: Any
    index: Any | None
    version: int | None = None
    cache: OrderedDict = field(default_factory=OrderedDict)

    def cached(self, key: tuple, compute):
        """`compute()` once per store version (SQLite's data_version changes when another
        connection commits): layer counts and orderings of 10k records are not recomputed
        for every page."""
        if key in self.cache:
            self.cache.move_to_end(key)
            return self.cache[key]
        value = self.cache[key] = compute()
        while len(self.cache) > READER_CACHE:
            self.cache.popitem(last=False)
        return value

    def page(self, layers: list[str], *, offset: int = 0, limit: int = 50, **order) -> tuple[int, list]:
        """(total, one page of artifacts) of `layers`, ordered by date (see `ordered_ids`)."""
        meta = order.pop("meta", None) or {}
        key = ("ids", tuple(layers), tuple(sorted(meta.items())), tuple(sorted(order.items())))
        ids = self.cached(key, lambda: self.store.ordered_ids(layers, meta=meta, **order))
        return len(ids), self.store.get_many(ids[offset:offset + limit])

    def layers(self) -> dict:
        return self.cached(("layers",), self.store.layers)


class MemoryService:
    """Everything that can be read about one built project, as plain dicts."""

    def __init__(self, paths: ProjectPaths, *, pool_size: int = 4):
        self.paths = paths
        if not paths.has_store():
            raise ArtifactNotFound(f"nothing has been built in {paths.root} yet", hint=NOT_BUILT_HINT)
        self._pool: queue.LifoQueue[Reader] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(pool_size)
        self._all: list[Reader] = []
        self._lock = threading.Lock()
        self._pipeline = None
        self._pipeline_mtime: tuple | None = None
        self._status_lock = threading.Lock()
        self._status: tuple[tuple, dict] | None = None
        self._version_store = None  # a PostgreSQL store's version probe (see _store_state)

    # ---- plumbing ---------------------------------------------------------------------

    def check_branch(self, branch: str) -> str:
        """Each service reads one branch (`BranchServices` picks the service for a branch)."""
        if branch != self.paths.branch:
            raise ArtifactNotFound(f"this reader serves branch {self.paths.branch!r}, not {branch!r}")
        return branch

    @property
    def pipeline(self):
        if self._pipeline is None or self._pipeline_mtime != self._mtime(self.paths.pipeline_file):
            from synix_assets.pipeline.loader import load_pipeline

            self._pipeline_mtime = self._mtime(self.paths.pipeline_file)
            self._pipeline = load_pipeline(self.paths.pipeline_file, base_dir=self.paths.root)
        return self._pipeline

    @staticmethod
    def _mtime(path) -> tuple | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _project_state(self) -> tuple:
        """What staleness depends on: pipeline.py, the store (and its WAL), the export files.
        Stat calls only (one query for a PostgreSQL store), so comparing it is cheap."""
        files = [self.paths.pipeline_file]
        for src in self.pipeline.sources.values():
            folder = self.pipeline.resolve(src.path)
            files += sorted(folder.rglob("*")) if folder.is_dir() else [folder]
        return (*((str(f), self._mtime(f)) for f in files), *self._store_state())

    def _store_state(self) -> tuple:
        store = self.paths.store
        if not self.paths.on_postgres:
            return tuple((str(f), self._mtime(f))
                         for f in (store, store.with_name(store.name + "-wal")))
        from synix_resources.store.artifact_store import ArtifactStore

        if self._version_store is None:  # callers hold _status_lock
            self._version_store = ArtifactStore(store, read_only=True)
        return (("store", self._version_store.data_version()),)

    def _project_status(self) -> dict:
        """`synix status` (a full plan: seconds on a large project), recomputed only when the
        project changed since the last time."""
        from synix_assets.reports.status import project_status

        with self._status_lock:
            state = self._project_state()
            if self._status is None or self._status[0] != state:
                status = project_status(self.paths)
                # Keyed by the state *after*: planning opens the store, and closing it may
                # checkpoint the WAL, which changes the files' stats once.
                self._status = (self._project_state(), status)
            return self._status[1]

    def _open_reader(self) -> Reader:
        from synix_resources.search.index import SearchIndex
        from synix_resources.store.artifact_store import ArtifactStore

        store = ArtifactStore(self.paths.store, read_only=True, branch=self.paths.branch)
        index = None
        if self.paths.search.exists():
            index = SearchIndex(self.paths.search, embeddings="auto")
            index.db.execute("PRAGMA query_only = ON")
        reader = Reader(store, index)
        with self._lock:
            self._all.append(reader)
        return reader

    @contextmanager
    def reader(self, branch: str = "main") -> Iterator[Reader]:
        """A pooled reader inside one read transaction on the store and on the index."""
        self.check_branch(branch)
        self._slots.acquire()
        try:
            try:
                reader = self._pool.get_nowait()
            except queue.Empty:
                reader = self._open_reader()
            try:
                with reader.store.snapshot():
                    version = reader.store.data_version()
                    if version != reader.version:
                        reader.cache.clear()
                        reader.version = version
                    if reader.index is not None:
                        reader.index.db.conn.execute("BEGIN")
                    try:
                        yield reader
                    finally:
                        if reader.index is not None and reader.index.db.conn.in_transaction:
                            reader.index.db.conn.execute("COMMIT")
            finally:
                self._pool.put(reader)
        finally:
            self._slots.release()

    def close(self) -> None:
        with self._status_lock:
            if self._version_store is not None:
                self._version_store.close()
                self._version_store = None
        with self._lock:
            for reader in self._all:
                reader.store.close()
                if reader.index is not None:
                    reader.index.close()
            self._all.clear()

    def texts(self, ids: list[str]) -> dict[str, str]:
        """Artifact id → content, for any ids in the shared store (whichever branch uses them)."""
        with self.reader(self.paths.branch) as r:
            return {a.artifact_id: a.content for a in r.store.get_many(list(dict.fromkeys(ids)))}

    # ---- overview ---------------------------------------------------------------------

    def layers(self, branch: str = "main") -> list[dict]:
        """Layers in pipeline order with level, kind, inputs and how many records each holds."""
        pipe = self.pipeline
        with self.reader(branch) as r:
            stored = r.layers()
        out = []
        for name in pipe.layer_order():
            step = pipe.steps[name]
            out.append({"layer": name, "kind": step.kind, "level": pipe.level(name),
                        "from": [f for f in step.from_], "records": stored.get(name, {}).get("artifacts", 0),
                        "last_built": stored.get(name, {}).get("last_built")})
        return out

    def pipeline_graph(self, branch: str = "main") -> dict:
        """The DAG: sources, steps and projections as nodes (counts, staleness), edges by input."""
        self.check_branch(branch)
        status = self._project_status()
        pipe = self.pipeline
        nodes = [{"id": name, "kind": "source", "records": None, "stale": None}
                 for name in pipe.sources]
        for name in pipe.layer_order():
            info = status["layers"].get(name, {})
            nodes.append({"id": name, "kind": pipe.steps[name].kind, "level": pipe.level(name),
                          "records": info.get("artifacts", 0), "stale": info.get("stale", 0),
                          "failed": info.get("failed", 0), "last_built": info.get("last_built")})
        for name, proj in pipe.projections.items():
            info = status["projections"].get(name, {}) if isinstance(status["projections"], dict) else {}
            nodes.append({"id": name, "kind": proj.kind, "records": None,
                          "stale": info.get("stale") if isinstance(info, dict) else None})
        edges = [{"from": up, "to": name} for name in pipe.layer_order() for up in pipe.steps[name].from_]
        for name, proj in pipe.projections.items():
            ups = proj.from_ if isinstance(proj.from_, tuple) else (proj.from_,)
            edges += [{"from": up, "to": name} for up in ups]
        return {"pipeline": pipe.name, "nodes": nodes, "edges": edges,
                "last_run": status.get("last_run")}

    # ---- records ----------------------------------------------------------------------

    def record(self, ref: str, branch: str = "main") -> dict:
        """Content, metadata, audit, parents and source conversations of one record."""
        with self.reader(branch) as r:
            out = artifact_dict(r.store, ref)
        out["messages"] = list(transcript_messages(out["content"])) if not out["parents"] else []
        return out

    @staticmethod
    def matched_range(query: str, messages: list[dict]) -> tuple[int, int] | None:
        """The message of a transcript that contains the most of the query's words (to
        highlight and scroll to), as a (first, last) range; None when none does."""
        words = {w for w in re.findall(r"\w{3,}", query.casefold())}
        best, best_score = None, 0
        for msg in messages:
            score = len(words & set(re.findall(r"\w{3,}", msg["text"].casefold())))
            if score > best_score:
                best, best_score = msg["index"], score
        return (best, best) if best is not None else None

    def sources(self, ref: str, branch: str = "main") -> dict:
        """The records this one was built from (one hop down), in input order."""
        with self.reader(branch) as r:
            art = r.store.get(ref)
            parents = r.store.parents(art.artifact_id)
        return {"artifact_id": art.artifact_id, "layer": art.layer, "title": artifact_title(art),
                "sources": [record_summary(p) for p in parents]}

    def leaves(self, ref: str, branch: str = "main", limit: int = 100) -> dict:
        """The source transcripts (conversations) under a record."""
        check_limit(limit)
        with self.reader(branch) as r:
            art = r.store.get(ref)
            leaves = r.store.leaves(art.artifact_id, max_count=limit)
        return {"artifact_id": art.artifact_id,
                "leaves": [{**source_of(l), "artifact_id": l.artifact_id} for l in leaves]}

    def lineage(self, ref: str, branch: str = "main", query: str | None = None, *,
                depth: int = 20, per_node: int | None = None) -> dict:
        """The provenance tree down to the transcripts, at most `depth` levels of sources; with
        `query` only the 2 branches per node that mention it most, with `per_node` at most that
        many (a core memory's full tree is every conversation). `hidden` counts what was cut."""
        if not 1 <= depth <= 20:
            raise BadRequest(f"depth must be between 1 and 20, got {depth}")
        if per_node is not None:
            check_limit(per_node, "per_node")
        with self.reader(branch) as r:
            tree = tree_of(r.store.lineage(r.store.get(ref).artifact_id, max_depth=depth))
        if query or per_node:
            return focus_tree(tree, query or "", per_node=per_node or 2)
        return tree

    def layer_page(self, layer: str, *, branch: str = "main", page: int = 1, per_page: int = 50,
                   oldest_first: bool = False, since: str | None = None, until: str | None = None,
                   **filters: str | None) -> dict:
        """One page of a layer's current records, newest first, with optional filters."""
        check_layer(layer)
        check_limit(per_page, "per_page")
        if page < 1:
            raise BadRequest(f"page must be 1 or more, got {page}")
        meta = {}
        for name, value in filters.items():
            if name not in FILTERS:
                raise BadRequest(f"unknown filter {name!r} — use one of {', '.join(FILTERS)}")
            if value:
                meta[FILTERS[name]] = value
        with self.reader(branch) as r:
            known = r.layers()
            if layer not in known:
                raise ArtifactNotFound(f"no layer {layer!r} in {self.paths.root}",
                                       hint=f"layers: {', '.join(sorted(known)) or 'none built yet'}")
            total, arts = r.page([layer], offset=(page - 1) * per_page, limit=per_page,
                                       newest_first=not oldest_first,
                                       since=check_date(since, "since"), until=check_date(until, "until"),
                                       meta=meta)
        return {"layer": layer, "page": page, "per_page": per_page, "total": total,
                "pages": max(1, -(-total // per_page)), "records": [record_summary(a) for a in arts]}

    def timeline(self, *, branch: str = "main", since: str | None = None, until: str | None = None,
                 source: str | None = None, layers: list[str] | None = None, limit: int = 50,
                 page: int = 1) -> dict:
        """Records dated in [since, until] (default: the source transcripts), oldest first,
        grouped by where they came from (the export source)."""
        check_limit(limit)
        with self.reader(branch) as r:
            known = r.layers()
            chosen = layers or [l["layer"] for l in self._leaf_layers(known)]
            unknown = [l for l in chosen if l not in known]
            if unknown:
                raise ArtifactNotFound(f"no layer {unknown[0]!r} in {self.paths.root}",
                                       hint=f"layers: {', '.join(sorted(known))}")
            total, arts = r.page(chosen, offset=(page - 1) * limit, limit=limit,
                                       newest_first=False, since=check_date(since, "since"),
                                       until=check_date(until, "until"),
                                       meta={"meta.source.name": source} if source else None)
        by_source: dict[str, list[dict]] = {}
        for art in arts:
            key = art.metadata.get("meta.source.name") or art.layer
            by_source.setdefault(key, []).append(record_summary(art))
        return {"since": since, "until": until, "source": source, "layers": chosen, "total": total,
                "page": page, "by_source": by_source}

    def _leaf_layers(self, known: dict) -> list[dict]:
        pipe = self.pipeline
        return [{"layer": n} for n in pipe.layer_order() if pipe.level(n) == 0 and n in known]

    # ---- search -----------------------------------------------------------------------

    def search(self, query: str, *, branch: str = "main", layers: list[str] | None = None,
               mode: str = "fts", since: str | None = None, until: str | None = None,
               limit: int = 10, evidence: bool = False) -> dict:
        """Ranked hits with provenance. `evidence=True` searches the raw transcripts, one hit
        per matched passage (message range)."""
        if not query or not query.strip():
            raise BadRequest("the query is empty — give some words to search for")
        if mode not in MODES:
            raise BadRequest(f"unknown mode {mode!r} — use one of {', '.join(MODES)}")
        check_limit(limit)
        since, until = check_date(since, "since"), check_date(until, "until")
        with self.reader(branch) as r:
            if r.index is None:
                raise SearchError(f"no search index in {self.paths.root} yet", hint=NOT_BUILT_HINT)
            if evidence:
                results = self._evidence(r, query, mode=mode, since=since, until=until, limit=limit)
            else:
                results = r.index.search(query, layers=layers, mode=mode, limit=limit, since=since,
                                         until=until)
        out = {"query": query, "mode": results.mode, "hits": [hit_dict(h) for h in results]}
        if results.notice:
            out["notice"] = results.notice
        return out

    def _evidence(self, r: Reader, query: str, *, mode: str, since, until, limit: int):
        """Passages of the source transcripts: ranked directly (the index keeps every
        transcript's messages, searchable or hidden), else found under the best-matching
        memories (drill-down into their ancestry), else the literal phrase."""
        from synix_resources.search.documents import SearchResults

        # The transcripts ranked directly (hidden ones included): the eval measured this well
        # ahead of reaching them through the best memories' drill-downs (docs/eval.md).
        direct = r.index.search(query, mode=mode, limit=limit, since=since, until=until,
                                per="passage", leaves=True)
        if len(direct):
            return direct
        found, seen = [], set()
        # Each drill-down costs tens of milliseconds at 10k conversations: the best few leads.
        for hit in r.index.search(query, mode=mode, limit=EVIDENCE_LEADS, since=since, until=until):
            below = [hit] if hit.level == 0 else r.index.drill_down(hit.artifact_id, query, mode=mode,
                                                                     limit=limit)
            for item in below:
                if item.level == 0 and item.artifact_id not in seen:
                    seen.add(item.artifact_id)
                    found.append(item)
        if not found:
            # No memory leads there: the literal phrase in the transcripts is the last resort.
            return r.index.search(query, exact=True, limit=limit, since=since, until=until)
        found.sort(key=lambda h: -h.score)
        return SearchResults(found[:limit], mode=direct.mode, requested_mode=mode, notice=direct.notice)

    # ---- documents for agents ---------------------------------------------------------

    def context(self, branch: str = "main") -> dict:
        """The context document as written by the last build, and the records its footer names."""
        self.check_branch(branch)
        pipe = self.pipeline
        docs = [p for p in pipe.projections.values() if p.kind == "context_doc"]
        if not docs:
            raise ArtifactNotFound("this pipeline declares no context_doc projection",
                                   hint="add pipeline.context_doc(...) and run `synix run`")
        path = pipe.resolve(docs[0].path)
        if not path.is_file():
            raise ArtifactNotFound(f"no context document at {path} yet", hint=NOT_BUILT_HINT)
        text = path.read_text(encoding="utf-8")
        body, _, footer = text.partition("\n---\n")
        ids = list(dict.fromkeys(_CONTEXT_IDS.findall(footer)))
        return {"path": str(path), "name": docs[0].name, "text": text, "body": body,
                "footer": footer, "records": ids, "tokens": estimate_tokens(text)}

    def memory_map(self, branch: str = "main", recent: int = 5) -> dict:
        """The navigational map an agent reads first: the top layer (core memory), the layers
        with their sizes, and the most recent records of the layers below it."""
        check_limit(recent, "recent")
        layers = self.layers(branch)
        built = [l for l in layers if l["records"]]
        if not built:
            raise ArtifactNotFound(f"nothing has been built in {self.paths.root} yet", hint=NOT_BUILT_HINT)
        top = max(l["level"] for l in built)
        with self.reader(branch) as r:
            core = [record_summary(a) | {"content": a.content}
                    for l in built if l["level"] == top
                    for a in r.page([l["layer"]], limit=3)[1]]
            recent_by_layer = {}
            for l in built:
                if 0 < l["level"] < top:
                    recent_by_layer[l["layer"]] = [record_summary(a) for a in
                                                   r.page([l["layer"]], limit=recent)[1]]
        return {"core": core, "layers": layers, "recent": recent_by_layer}

    def brief(self, query: str | None = None, *, branch: str = "main", budget_tokens: int = 2000,
              hits: int = 5, recent: int = 3) -> dict:
        """What an orchestrator puts in an agent's prompt, within `budget_tokens`: the core
        memory, the most recent periods/episodes, and the top hits for the query with their
        provenance. Sections are added in that order until the budget is spent."""
        if not 100 <= budget_tokens <= 200_000:
            raise BadRequest(f"budget_tokens must be between 100 and 200000, got {budget_tokens}")
        check_limit(hits, "hits")
        m = self.memory_map(branch, recent=recent)
        sections: list[dict] = []
        used = 0

        def add(kind: str, title: str, text: str, ref: dict) -> bool:
            nonlocal used
            cost = estimate_tokens(title) + estimate_tokens(text) + 8
            if used + cost > budget_tokens:
                room = (budget_tokens - used - estimate_tokens(title) - 8) * 4
                if room < 200:
                    return False
                text = text[:room].rstrip() + "…"
                cost = estimate_tokens(title) + estimate_tokens(text) + 8
            sections.append({"kind": kind, "title": title, "text": text, **ref})
            used += cost
            return True

        for item in m["core"]:
            add("core", item["title"], item["content"], {"artifact_id": item["artifact_id"]})
        for layer, items in sorted(m["recent"].items(), key=lambda kv: -self._level(m, kv[0])):
            for item in items:
                add("recent", f"{item['title']} ({item['date'] or item['period'] or ''})".strip(),
                    item["preview"], {"artifact_id": item["artifact_id"], "layer": layer})
        found = None
        if query and query.strip():
            found = self.search(query, branch=branch, limit=hits)
            for hit in found["hits"]:
                add("hit", hit["title"] or hit["artifact_id"], hit["snippet"],
                    {"artifact_id": hit["artifact_id"], "layer": hit["layer"], "score": hit["score"],
                     "sources": hit["sources"]})
        text = "\n\n".join(f"## {s['title']} [{s['artifact_id']}]\n{s['text']}" for s in sections)
        return {"query": query, "budget_tokens": budget_tokens, "tokens": used,
                "sections": sections, "text": text,
                **({"notice": found["notice"]} if found and "notice" in found else {})}

    @staticmethod
    def _level(m: dict, layer: str) -> int:
        return next((l["level"] for l in m["layers"] if l["layer"] == layer), 0)
