"""Read-side views as plain dicts: search hits with provenance, lineage trees, artifacts, runs.

The CLI renders these (or prints them as JSON); nothing here prints.
"""
from __future__ import annotations

import re
from collections.abc import Collection
from contextlib import contextmanager

from synix_assets.engine.projections import artifact_title
from synix_assets.project import ProjectPaths
from synix_resources.errors import ArtifactNotFound, SearchError
from synix_resources.text import escape_invalid, is_valid_text

NOT_BUILT_HINT = "run `synix run` first to build the memory"


@contextmanager
def open_store(paths: ProjectPaths):
    """The project's store; a clean error (not an empty new database) when nothing was built."""

    if not paths.has_store():
        raise ArtifactNotFound(f"nothing has been built in {paths.root} yet", hint=NOT_BUILT_HINT)
    store = paths.open_store()
    try:
        yield store
    finally:
        store.close()


def incomplete_note(store) -> str | None:
    """What a search answer says while partitions failed and are not built (so not searchable):
    the hits come from the layers that were built (design §10.2)."""
    failures = store.failures()
    if not failures:
        return None
    shown = store.partition_names({f.group_key for f in failures})
    names = ", ".join(f"{f.layer}/{shown.get(f.group_key, f.group_key)}" for f in failures[:3])
    more = f" and {len(failures) - 3} more" if len(failures) > 3 else ""
    return (f"the memory is incomplete: {len(failures)} partition(s) failed to build ({names}{more}) "
            "and are not searchable; these results come from what was built — `synix status` "
            "shows the failures, `synix run` retries them")


def checked_ref(ref: str, what: str = "artifact id") -> str:
    """An id typed by the user; bytes that are not UTF-8 can name nothing in the store."""
    if not is_valid_text(ref):
        raise ArtifactNotFound(f"{what} '{escape_invalid(ref)}' is not valid UTF-8 text, so it "
                               "names nothing", hint="copy the id from `synix search` or `synix runs`")
    return ref


def source_of(leaf) -> dict:
    """Where a leaf (a transcript) came from: conversation, title, date, message range."""
    m = leaf.metadata
    count = m.get("meta.chat.message_count", 0)
    rng = m.get("meta.chat.message_range") or ([1, count] if count else None)
    return {"conversation_id": m.get("meta.chat.conversation_id", leaf.group_key),
            "title": m.get("meta.chat.title", ""),
            "date": (m.get("meta.time.created_at") or "")[:10] or None,
            "message_range": list(rng) if rng else None,
            "source": m.get("meta.source.type")}


def tree_of(node) -> dict:
    """A LineageNode as nested dicts; leaves carry their `source`."""
    art = node.artifact
    out = {"artifact_id": art.artifact_id, "layer": art.layer, "level": art.level,
           "title": artifact_title(art), "current": art.is_current,
           "parents": [tree_of(p) for p in node.parents]}
    if not art.parent_ids:
        out["source"] = source_of(art)
    return out


def focus_tree(node: dict, query: str, per_node: int = 2) -> dict:
    """A copy of a provenance tree keeping, under each node, the `per_node` branches whose titles
    mention the query most (a core memory's full tree is every conversation); `hidden` counts
    the branches left out."""
    words = {w for w in re.findall(r"\w+", query.lower()) if len(w) > 2}

    def score(n: dict) -> int:
        own = sum(w in n["title"].lower() for w in words)
        return own + sum(score(p) for p in n["parents"])

    def prune(n: dict) -> dict:
        ranked = sorted(n["parents"], key=score, reverse=True)  # stable: ties keep input order
        kept = ranked[:per_node]
        return {**n, "parents": [prune(p) for p in kept], "hidden": len(ranked) - len(kept)}

    return prune(node)


def lineage_view(paths: ProjectPaths, ref: str) -> dict:
    checked_ref(ref)
    with open_store(paths) as store:
        return tree_of(store.lineage(store.get(ref).artifact_id))


def artifact_view(paths: ProjectPaths, ref: str) -> dict:
    checked_ref(ref)
    with open_store(paths) as store:
        return artifact_dict(store, ref)


def artifact_dict(store, ref: str) -> dict:
    """One artifact with content, metadata, audit, parents and source conversations."""
    art = store.get(ref)
    parents = store.parents(art.artifact_id)
    leaves = store.leaves(art.artifact_id)
    return {"artifact_id": art.artifact_id, "layer": art.layer, "level": art.level,
            "group_key": art.group_key, "title": artifact_title(art), "created_at": art.created_at,
            "current": art.is_current, "superseded_at": art.superseded_at, "run_id": art.run_id,
            "content": art.content, "content_hash": art.content_hash,
            "materialization_key": art.materialization_key, "metadata": art.metadata,
            "audit": art.audit,
            "parents": [{"artifact_id": p.artifact_id, "layer": p.layer, "title": artifact_title(p)}
                        for p in parents],
            "sources": [source_of(l) for l in leaves if not l.parent_ids]}


def runs_view(paths: ProjectPaths, run_id: str | None = None, limit: int = 20) -> dict:
    if run_id is not None:
        checked_ref(run_id, "run id")
    from synix_assets.orchestration.runs import settle_abandoned_runs

    with open_store(paths) as store:
        settle_abandoned_runs(paths, store)  # a killed build shows as interrupted, not running
        if run_id is None:
            return {"runs": [_run_dict(r) for r in store.list_runs(limit=limit)]}
        run = store.get_run(run_id)
        if run is None:
            matches = [r for r in store.list_runs(limit=1000) if r.run_id.startswith(run_id)]
            if len(matches) != 1:
                raise ArtifactNotFound(f"no run {run_id!r} in {paths.store}"
                                       + (" (prefix is ambiguous)" if matches else ""),
                                       hint="list runs with `synix runs`")
            run = matches[0]
        failures = store.failures(run_id=run.run_id)
    out = _run_dict(run)
    out["layers"] = (run.stats or {}).get("layers", {})
    out["projections"] = (run.stats or {}).get("projections", {})
    out["failures"] = [{"layer": f.layer, "group_key": f.group_key, "error": f.error} for f in failures]
    return out


def _run_dict(run) -> dict:
    stats = run.stats or {}
    layers = stats.get("layers", {})
    return {"run_id": run.run_id, "pipeline": run.pipeline, "status": run.status,
            "started_at": run.started_at, "finished_at": run.finished_at,
            "seconds": stats.get("seconds"),
            "built": sum(v.get("built", 0) for v in layers.values()),
            "from_response_cache": sum(v.get("from_response_cache", 0) for v in layers.values()),
            "cached": sum(v.get("cached", 0) for v in layers.values()),
            "failed": sum(v.get("failed", 0) for v in layers.values()),
            "llm_calls": stats.get("llm_calls", sum(v.get("llm_calls", 0) for v in layers.values())),
            "cost_usd": round(sum(v.get("cost_usd", 0) for v in layers.values()), 6),
            **({"error": stats["error"]} if stats.get("error") else {})}


HIT_SOURCES = 3  # source conversations (and leaf ids) a hit lists; the rest by drilling down
PASSAGES = 5     # the conversations' own matched passages an unscoped search answers with


def hit_dict(hit) -> dict:
    """A search hit as a compact plain dict: the matched text first, what it is, how much it
    covers (`covers`: conversations and direct sources), its first HIT_SOURCES source
    conversations and leaf ids. The whole tree is one call away with its `artifact_id`:
    lineage, sources, leaves. A core memory covering every conversation stays under 2 KB."""
    sources = list(hit.sources)
    return {"snippet": hit.snippet, "artifact_id": hit.artifact_id, "layer": hit.layer,
            "level": hit.level, "score": hit.score, "title": hit.title, "date": hit.date,
            "message_range": list(hit.message_range) if hit.message_range else None,
            "covers": {"conversations": len(sources), "sources": len(hit.parent_ids)},
            "sources": [dict(s) for s in sources[:HIT_SOURCES]],
            "provenance": list(hit.provenance[:HIT_SOURCES]), "pii": hit.pii}


def passage_dict(hit) -> dict:
    """A matched passage of a conversation: its words, the transcript, conversation, date and
    message range (the explorer's "In the conversations")."""
    source = hit.sources[0] if hit.sources else {}
    return {"snippet": hit.snippet, "artifact_id": hit.artifact_id, "score": hit.score,
            "conversation_id": source.get("conversation_id"), "title": hit.title,
            "date": (hit.date or "")[:10] or None,
            "message_range": list(hit.message_range) if hit.message_range else None}


def search_answer(index, query: str, *, layers: list[str] | None = None, mode: str = "fts",
                  exact: bool = False, limit: int = 10, leaves: bool = False,
                  passages: bool | None = None, exclude: Collection[str] = (),
                  **filters: str | None) -> dict:
    """One search of an open `SearchIndex` as every door answers it: {"query", "mode", "hits",
    "passages"?, "notice"?}. An unscoped ranked search whose words the summaries do not all
    hold (`SearchResults.weak`: what a summary left out, or nothing matched) also carries the
    conversations' own best-matching passages (`passages`, one shape everywhere), with where
    each was said; `passages=True` always does (the explorer's "In the conversations").
    `leaves=True` ranks those passages as the hits themselves; `exclude`: record ids ranked as
    if not indexed (an as-of brief leaves out what later sources built)."""
    results = index.search(query, layers=layers, mode=mode, exact=exact, limit=limit,
                           leaves=leaves, per="passage" if leaves else "artifact",
                           exclude=exclude, **filters)
    out = {"query": query, "mode": results.mode, "hits": [hit_dict(h) for h in results]}
    wanted = results.weak if passages is None else passages
    if layers is None and not (exact or leaves) and wanted:
        # a weak search just scored this leaf ranking (cached): no second scoring
        found = index.search(query, mode=mode, limit=min(limit, PASSAGES), per="passage",
                             leaves=True, **filters)
        out["passages"] = [passage_dict(h) for h in found]
    if results.notice:
        out["notice"] = results.notice
    return out


def search_view(paths: ProjectPaths, query: str, *, layers: list[str] | None = None,
                mode: str = "fts", exact: bool = False, limit: int = 10, since: str | None = None,
                until: str | None = None, source: str | None = None, trees: bool = True,
                leaves: bool = False, period: str | None = None,
                conversation: str | None = None) -> dict:
    """`search_answer` over the project's index, with `trees`: each hit's provenance `tree`
    from the store (nested dicts down to the source transcripts, focused on the query), and
    "incomplete"?: which partitions failed to build (`incomplete_note`).

    `leaves=True` ranks the source transcripts themselves, below every summary, one hit per
    matched message ("leaf bypass": the words as they were said). The filters are
    `SearchIndex.search`'s (since/until, period, conversation, source)."""
    from synix_resources.search.index import SearchIndex
    from synix_resources.search.index_read import check_mode_and_limit

    check_mode_and_limit(mode, limit)  # before a mode without vectors falls back to fts
    if not query or not query.strip():
        raise SearchError("the search query is empty", hint='give some words, e.g. synix search "marathon"')
    if not paths.search.exists():
        raise SearchError(f"no search index in {paths.root} yet", hint=NOT_BUILT_HINT)
    index = SearchIndex(paths.search, embeddings="auto" if mode != "fts" else False)
    notice = None
    try:
        if mode != "fts" and not exact and not index.stats()["vectors"]:
            # An index synced without embeddings answers semantic queries with nothing at all.
            notice = (f"{mode} search needs embeddings, which this index has none of (set "
                      "embeddings=True on pipeline.search_index and run again); showing full-text results")
            mode = "fts"
        out = search_answer(index, query, layers=layers, mode=mode, exact=exact, limit=limit,
                            leaves=leaves, since=since, until=until, source=source,
                            period=period, conversation=conversation)
    finally:
        index.close()
    if notice:
        out["notice"] = notice
    if paths.has_store():
        with open_store(paths) as store:
            incomplete = incomplete_note(store)
            if incomplete:
                out["incomplete"] = incomplete
            for item in out["hits"] if trees else ():
                found = store.find(item["artifact_id"])
                item["tree"] = focus_tree(tree_of(store.lineage(found.artifact_id)), query) if found else None
                if item["tree"] and not item["tree"]["parents"] and item["sources"]:
                    item["tree"]["source"] = dict(item["sources"][0])  # narrowed to the matched messages
    return out


def search_json(view: dict) -> dict:
    """A search view as `synix search --json` prints it and `SearchResults.to_json()` returns
    it: the view without the hits' provenance trees."""
    return {**view, "hits": [{k: v for k, v in h.items() if k != "tree"} for h in view["hits"]]}


def leaf_ids(paths: ProjectPaths, ref: str, *, max_depth: int = 10, max_count: int = 100) -> list[str]:
    """The source records (no parents of their own) under a record, breadth first, deduplicated,
    at most `max_count`, looking at most `max_depth` levels up (the design's `leaves()`)."""
    checked_ref(ref)
    with open_store(paths) as store:
        return [a.artifact_id for a in store.leaves(store.get(ref).artifact_id, max_depth=max_depth,
                                                    max_count=max_count)]
