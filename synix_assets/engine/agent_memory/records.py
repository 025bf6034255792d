"""The memory-ops log made into store records: one `agent_memories` record per memory (its
current content; its versions, validity, state and supersession pointers in the metadata) and
one `agent_links` record per link (its reason), like any layer's records — versioned per group,
keyed, on the branch, shown by the explorer, traced and forgotten through provenance.

Provenance: a memory's parents are the records it cites as evidence (and, for a superseding
memory, the memory it replaces); a link's parents are its two memories. So forgetting a
conversation reaches every memory made from it and every link touching one (forget/plan.py
walks `descendants`), and forget drops their ops from the log (`MemoryLog.drop`).

Keys are a function of the replayed state only, so syncing the same log again writes nothing and
a store that lost the records (a crash before they were written) gets exactly the same ones.
"""
from __future__ import annotations

from dataclasses import asdict

from synix_resources.agent_memory import LINK_LAYER, MEMORY_LAYER
from synix_resources.agent_memory.replay import Memory, MemoryState
from synix_resources.fingerprints import canonical_json, sha256_text
from synix_resources.ledger.events import EVENT_ID

RECORD_FORMAT = "agent-memory-2"  # bumped when what a record holds changes


def _key(content: str, metadata: dict, parents: list[str]) -> str:
    return sha256_text(canonical_json({"format": RECORD_FORMAT, "content": content,
                                       "metadata": metadata, "parents": parents}))


def memory_metadata(mem: Memory) -> dict:
    first = mem.versions[0]
    return {"memory_id": mem.memory_id, "state": mem.state, "lifecycle": mem.lifecycle,
            "valid_from": first.valid_from, "valid_until": mem.current.valid_until,
            "superseded_by": mem.superseded_by, "supersedes": mem.supersedes,
            "retired_reason": mem.retired_reason, "evidence": list(mem.evidence),
            "versions": [asdict(v) for v in mem.versions], "reinforced": mem.reinforced,
            "meta.time.created_at": mem.created_at}


def sync(store, state: MemoryState, only: set[str] | None = None) -> dict:
    """Make the store's agent layers on `store`'s branch what `state` says: put what changed,
    retire groups the log no longer has. Returns counts per layer and the evidence ids that
    name no stored record (kept out of the parents).

    `only`: the memory and link ids the ops since the last sync named (`MemoryLog.changes`).
    A record depends on its own memory's ops only, so the others are left as they are and the
    sync costs what changed, not the whole log; nothing is retired (only removing rows, which
    makes the next sync whole, can take a memory away)."""
    mems = [m for m in state.memories.values() if only is None or m.memory_id in only]
    links = [k for k in state.links.values() if only is None or k.link_id in only]
    known = store.existing_ids({e for m in mems for e in m.evidence})
    report = {"written": 0, "unchanged": 0, "retired": 0, "missing_evidence": []}
    named = None if only is None else ({m.memory_id for m in mems} | {m.supersedes for m in mems if m.supersedes}
                                       | {end for k in links for end in (k.source_id, k.target_id)})
    current = store.current_index(MEMORY_LAYER, named)
    mine = {m.memory_id for m in mems}
    # a record this sync does not rewrite may still be a parent (of a link or a superseding memory)
    artifact_of = {g: ref.artifact_id for g, ref in current.items() if only is not None and g not in mine}
    wanted = known | set(artifact_of.values())
    levels = {a.artifact_id: a.level for a in store.get_many(wanted, outline=True)} if wanted else {}
    for mem in mems:  # log order: a memory comes after the one it supersedes
        parents = [e for e in mem.evidence if e in known]
        # ledger events (ev-…) are not records: their provenance is the ledger (resolve_events)
        report["missing_evidence"] += [e for e in mem.evidence if e not in known and not EVENT_ID.match(e)]
        if mem.supersedes:
            parents.append(artifact_of[mem.supersedes])
        level = 1 + max([levels.get(p, 0) for p in parents] + [0])
        metadata = memory_metadata(mem)
        content = mem.current.content
        art = _put(store, current, report, layer=MEMORY_LAYER, group_key=mem.memory_id,
                   content=content, metadata=metadata, parents=parents, level=level)
        artifact_of[mem.memory_id] = art
        levels[art] = level
    current_links = store.current_index(LINK_LAYER, None if only is None else {k.link_id for k in links})
    for link in links:
        parents = [artifact_of[link.source_id], artifact_of[link.target_id]]
        metadata = {"link_id": link.link_id, "source_id": link.source_id,
                    "target_id": link.target_id, "meta.time.created_at": link.created_at}
        _put(store, current_links, report, layer=LINK_LAYER, group_key=link.link_id,
             content=link.reason, metadata=metadata, parents=parents,
             level=1 + max(levels[p] for p in parents))
    if only is None:
        report["retired"] += store.retire(MEMORY_LAYER, [g for g in current if g not in state.memories])
        report["retired"] += store.retire(LINK_LAYER, [g for g in current_links if g not in state.links])
    return report


def _put(store, current: dict, report: dict, *, layer: str, group_key: str, content: str,
         metadata: dict, parents: list[str], level: int) -> str:
    key = _key(content, metadata, parents)
    ref = current.get(group_key)
    if ref is not None and ref.materialization_key == key:
        report["unchanged"] += 1
        return ref.artifact_id
    report["written"] += 1
    return store.put(layer=layer, group_key=group_key, content=content, materialization_key=key,
                     level=level, metadata=metadata, parents=parents).artifact_id
