"""Reading agent memories from the store's records (any branch view, read-only): one memory as
it is or as it was at a time, its supersession chain, its links with their reasons, and a ranked
search (SQLite FTS5/BM25 over the versions that held at that time)."""
from __future__ import annotations

import sqlite3

from synix_resources.agent_memory import LINK_LAYER, MEMORY_LAYER
from synix_resources.agent_memory.replay import lifecycle_at
from synix_resources.store.connection import utc_now
from synix_resources.errors import MemoryNotFound
from synix_resources.names import check_memory_id
from synix_resources.search.query import fts_match, parse_query
from synix_resources.values import instant

PREVIEW_CHARS = 160


def as_of_instant(as_of: str | None) -> str | None:
    return None if as_of is None else instant(as_of, "as_of")


def _version_at(meta: dict, t: str) -> dict | None:
    return next((v for v in meta["versions"]
                 if v["valid_from"] <= t and (v["valid_until"] is None or t < v["valid_until"])), None)


def _lifecycle(meta: dict, as_of: str | None) -> str:
    """The lifecycle at `as_of` (now when None): a retired memory's state now, else what its
    reinforcements made by then say (dormant after DORMANT_DAYS without one)."""
    if as_of is None and meta["state"] != "active":
        return meta["state"]
    if "reinforced" not in meta:  # a record made before reinforcements were kept
        return meta["lifecycle"]
    return lifecycle_at(meta["reinforced"], as_of or instant(utc_now(), "now"))


def memory_view(art, as_of: str | None = None, *, full: bool = True) -> dict | None:
    """A memory record as a dict; with `as_of`, the version that held then (None if none did)."""
    meta = art.metadata
    version = meta["versions"][-1] if as_of is None else _version_at(meta, as_of)
    if version is None:
        return None
    out = {"memory_id": meta["memory_id"], "record_id": art.artifact_id,
           "content": version["content"], "version": version["n"],
           "valid_from": version["valid_from"], "valid_until": version["valid_until"],
           # at a time inside a version's window the memory was held, whatever happened later
           "state": meta["state"] if as_of is None else "active",
           "lifecycle": _lifecycle(meta, as_of),
           "superseded_by": meta["superseded_by"], "supersedes": meta["supersedes"]}
    if as_of is not None:
        out.update(as_of=as_of, state_now=meta["state"])
    if full:
        out.update(evidence=meta["evidence"], retired_reason=meta["retired_reason"],
                   versions=meta["versions"])
    return out


def memory_record(store, memory_id: str):
    art = store.current(MEMORY_LAYER, check_memory_id(memory_id))
    if art is None:
        raise MemoryNotFound(f"no memory {memory_id} on branch {store.branch!r}",
                             hint="use an id create_memory or supersede_memory answered (after a build "
                                  "if the write said applied: false)")
    return art


def get_memory(store, memory_id: str, as_of: str | None = None) -> dict:
    t = as_of_instant(as_of)
    view = memory_view(memory_record(store, memory_id), t)
    if view is None:
        raise MemoryNotFound(f"memory {memory_id} held nothing at {t}",
                             hint="get_memory_history shows when each version held")
    return view


def memory_history(store, memory_id: str) -> dict:
    """The supersession chain through a memory, oldest first, each with its versions."""
    art = memory_record(store, memory_id)
    while art.metadata["supersedes"]:  # the log's replay makes chains without cycles
        art = memory_record(store, art.metadata["supersedes"])
    chain = [art]
    while chain[-1].metadata["superseded_by"]:
        chain.append(memory_record(store, chain[-1].metadata["superseded_by"]))
    current = next((m for m in chain if m.metadata["state"] == "active"), None)
    return {"memory_id": memory_id, "current": current.metadata["memory_id"] if current else None,
            "chain": [memory_view(m) for m in chain]}


def follow_links(store, memory_id: str) -> dict:
    """The memories linked to this one, each with the link's reason and direction."""
    memory_record(store, memory_id)
    links = [a for a in store.list_layer(LINK_LAYER)
             if memory_id in (a.metadata["source_id"], a.metadata["target_id"])]
    out = []
    for link in links:
        outgoing = link.metadata["source_id"] == memory_id
        other = link.metadata["target_id" if outgoing else "source_id"]
        found = store.current(MEMORY_LAYER, other)
        out.append({"link_id": link.metadata["link_id"], "reason": link.content,
                    "direction": "to" if outgoing else "from", "record_id": link.artifact_id,
                    "memory": memory_view(found, full=False) if found else {"memory_id": other}})
    return {"memory_id": memory_id, "links": out}


def active_memories(store, *, limit: int = 50, full: bool = False) -> list[dict]:
    """The memories held now, the most recently written version first: Syke's compact index
    (id, first line, since when) — or, `full`, each memory as get_memory shows it."""
    held = [a for a in store.list_layer(MEMORY_LAYER) if a.metadata["state"] == "active"]
    held.sort(key=lambda a: (a.metadata["versions"][-1]["valid_from"], a.created_at), reverse=True)
    out = []
    for art in held[:limit]:
        view = memory_view(art, full=full)
        if not full:
            first = next((line.strip() for line in view["content"].splitlines() if line.strip()), "")
            view = {"memory_id": view["memory_id"], "first_line": first[:PREVIEW_CHARS],
                    "version": view["version"], "valid_from": view["valid_from"]}
        out.append(view)
    return out


def search_memories(store, query: str, *, as_of: str | None = None, limit: int = 10,
                    retired: bool = False) -> list[dict]:
    """Memories matching `query`, best first (BM25). Without `as_of`: the ones held now (and,
    with `retired`, superseded or deactivated ones); with it: each memory's version that held
    at that time, and only those."""
    t = as_of_instant(as_of)
    match = fts_match(parse_query(query))
    views = []
    for art in store.list_layer(MEMORY_LAYER):
        view = memory_view(art, t, full=False)
        if view is not None and (t is not None or retired or view["state"] == "active"):
            views.append(view)
    if not views or match is None:
        return []
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE m USING fts5(content, tokenize='unicode61 remove_diacritics 2')")
        db.executemany("INSERT INTO m (rowid, content) VALUES (?, ?)",
                       [(i, v["content"]) for i, v in enumerate(views)])
        rows = db.execute("SELECT rowid, bm25(m) FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT ?",
                          (match, limit)).fetchall()
    finally:
        db.close()
    return [{**views[i], "score": round(-score, 4), "snippet": views[i]["content"][:PREVIEW_CHARS]}
            for i, score in rows]
