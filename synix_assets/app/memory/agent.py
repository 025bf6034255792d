"""The read side of agent-written memories and of `as_of` for `MemoryService`: a memory (or any
record) as it was at a time, supersession history, links with reasons, and cross-reference
(the agent's memories beside the built records that mention the same thing)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from synix_assets.app import ledger
from synix_assets.engine.agent_memory import reads
from synix_assets.app.memory.params import check_limit
from synix_assets.app.query import artifact_dict, checked_ref
from synix_resources.agent_memory import MEMORY_LAYER
from synix_resources.errors import ArtifactNotFound
from synix_resources.ledger.events import EVENT_ID
from synix_resources.names import MEMORY_ID

if TYPE_CHECKING:
    from synix_assets.app.memory.service import MemoryService


def record(svc: MemoryService, ref: str, branch: str, as_of: str | None) -> dict | None:
    """A memory id answers with the memory (the version held at `as_of`); a record id with
    `as_of`, with the version of its group that was current then. None: neither (the caller
    reads the record as usual)."""
    if isinstance(ref, str) and MEMORY_ID.fullmatch(ref):
        with svc.reader(branch) as r:
            memory = reads.get_memory(r.store, ref, as_of)
        return with_evidence_events(svc, memory)
    if as_of is None:
        return None
    t = reads.as_of_instant(as_of)
    with svc.reader(branch) as r:
        art = r.store.get(checked_ref(ref))
        if art.layer == MEMORY_LAYER:
            return reads.get_memory(r.store, art.group_key, as_of)
        held = [a for a in r.store.history(art.layer, art.group_key)
                if a.created_at <= t and (a.superseded_at is None or t < a.superseded_at)]
        if not held:
            raise ArtifactNotFound(f"record {art.artifact_id} ({art.layer}/{art.group_key}) did "
                                   f"not exist yet at {t}", hint="use a later as_of")
        out = artifact_dict(r.store, held[-1].artifact_id)
    return {**out, "as_of": t}


def with_evidence_events(svc: MemoryService, memory: dict) -> dict:
    """A memory that cites ledger events (ev-…) shows each one it still resolves to — when,
    from which source, and the conversation it belongs to (the way to the transcript) —
    as `evidence_events`; an event forgotten since is absent there (its id stays cited)."""
    cited = [e for e in memory.get("evidence") or () if EVENT_ID.match(e)]
    if not cited:
        return memory
    found = ledger.resolve_events(svc.paths, cited).found
    keys = ("id", "source", "event_type", "timestamp", "title", "conversation_id")
    return {**memory, "evidence_events": [{k: getattr(ev, k) for k in keys} for ev in found]}


def memory_hits(svc: MemoryService, query: str, branch: str, as_of: str,
                limit: int) -> list[dict]:
    """The agent memories matching `query` in the versions held at `as_of`."""
    with svc.reader(branch) as r:
        return reads.search_memories(r.store, query, as_of=as_of, limit=limit)


def history(svc: MemoryService, memory_id: str, branch: str) -> dict:
    with svc.reader(branch) as r:
        return reads.memory_history(r.store, memory_id)


def links(svc: MemoryService, memory_id: str, branch: str) -> dict:
    with svc.reader(branch) as r:
        return reads.follow_links(r.store, memory_id)


def active(svc: MemoryService, branch: str, limit: int, *, full: bool = False) -> dict:
    check_limit(limit)
    with svc.reader(branch) as r:
        mems = reads.active_memories(r.store, limit=limit, full=full)
    return {"memories": mems, "count": len(mems)}


def cross_reference(svc: MemoryService, query: str, branch: str, as_of: str | None,
                    limit: int) -> dict:
    """The memories the agent wrote about `query` (held at `as_of`) beside the built records
    that mention it, grouped by the export source they came from."""
    check_limit(limit)
    hits = svc.search(query, branch=branch, limit=limit, as_of=as_of)
    by_source: dict[str, list[dict]] = {}
    for hit in hits["hits"]:
        for source in hit.get("sources") or [{}]:
            by_source.setdefault(source.get("source") or hit["layer"], []).append(
                {"artifact_id": hit["artifact_id"], "layer": hit["layer"], "title": hit.get("title"),
                 "date": hit.get("date"), "snippet": hit.get("snippet"),
                 "conversation_id": source.get("conversation_id")})
    with svc.reader(branch) as r:
        mems = reads.search_memories(r.store, query, as_of=as_of, limit=limit)
        for mem in mems:
            mem["links"] = reads.follow_links(r.store, mem["memory_id"])["links"]
    return {"query": query, "as_of": reads.as_of_instant(as_of), "memories": mems,
            "records_by_source": by_source, "records": len(hits["hits"])}



def memories_as_of(paths, query: str, as_of: str, limit: int) -> tuple[list[dict], str]:
    """(the agent memories matching `query` held at `as_of`, that instant) for the doors that
    search through `app.query.search_view` (the CLI, the Python API)."""
    t = reads.as_of_instant(as_of)
    if not paths.has_store():
        return [], t
    store = paths.open_store(read_only=True)
    try:
        return reads.search_memories(store, query, as_of=t, limit=limit), t
    finally:
        store.close()
